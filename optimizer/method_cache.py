"""Compiled dataclass methods, kept between runs of the CLI.

A @dataclass writes the source of its __init__, __repr__, __eq__, __hash__ (and, frozen,
__setattr__ and __delattr__) and compiles it with exec as its class is defined. `ccopt plan`
defines about 120 dataclasses as it starts and compiles ~700 such functions: ~60 ms, a third of
importing the package (measured with -X importtime and a timer on dataclasses._create_fn;
valgrind counts 12% of the command's instructions in parsing and compiling that text). Python
keeps the bytecode of modules in __pycache__, not of these.

`install()` (the CLI entry point, optimizer/__main__.py, before its first import) gives the
dataclasses module an exec that looks the text up in a table of compiled code kept in the user
cache (`methods/dataclass-<Python cache tag>.marshal`: SHA-256 of the text -> code object) and
compiles only what is not there; at exit the table is rewritten with what was compiled
(atomically, optimizer.files.write_atomic). The same text compiles to the same code under one
Python version (the cache tag names the file, the exact version opens it), and exec binds the
class's own globals as before, so a class behaves exactly as without the table. Methods of
classes that changed stay in the table until it holds MAX_METHODS; the run that then saves it
keeps only its own.

The file holds code that runs, so it is read only when it is the user's own and no one else
may write it (owner is this user, no group or other write bit), as ssh treats its keys; a file
that is not, that is damaged or from another Python, or a cache that cannot be written, means
compiling as usual (it only costs time).
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import hashlib
import marshal
import os
import stat
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from optimizer.user_cache import user_cache_dir

__all__ = ["install", "table_path", "MAGIC"]

#: the first line of the file: its format (2: compiled without this module's future flags)
#: and this Python's implementation and exact version (any other file is not read)
MAGIC = f"ccopt dataclass methods 2 {sys.implementation.cache_tag} {sys.version}\n".encode()
#: a table grown past this many methods (old versions' classes) is rewritten with only the
#: methods of the run that saves it (one version of ccopt defines ~1,000 across its commands)
MAX_METHODS = 5000


def table_path() -> Path:
    """Where the compiled methods of this Python version are kept (module doc)."""
    return user_cache_dir() / "methods" / f"dataclass-{sys.implementation.cache_tag}.marshal"


class _Table:
    """The compiled methods read at start-up and those compiled since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._known: dict[bytes, CodeType] | None = None  # read when a class first asks
        self.added: dict[bytes, CodeType] = {}
        self.used: set[bytes] = set()  # keys of `known` this run looked up

    @property
    def known(self) -> dict[bytes, CodeType]:
        """The table read from the file (at the first look-up: a command that defines no
        dataclass, such as `--version`, does not read it)."""
        if self._known is None:
            self._known = _read(self.path)
        return self._known

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """builtins.exec, with a source text compiled once per content (module doc)."""
        if isinstance(source, str):
            key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest()
            code = self.known.get(key)
            if code is not None:
                self.used.add(key)
            else:
                code = self.added.get(key)
                if code is None:
                    # as the dataclasses module's own exec compiles it: without this
                    # module's `from __future__ import annotations` (the methods' annotations
                    # stay the fields' types, not the names of the locals holding them)
                    code = self.added[key] = compile(source, "<string>", "exec", dont_inherit=True)
            source = code
        builtins.exec(source, globals, locals)

    def save(self) -> None:
        """Rewrite the file with what was compiled since start-up (nothing when nothing was);
        a table past MAX_METHODS keeps only this run's methods."""
        if not self.added:
            return
        table = {**self.known, **self.added}
        if len(table) > MAX_METHODS:
            table = {k: v for k, v in table.items() if k in self.used or k in self.added}
        from optimizer.files import write_atomic  # lazy: only a run that compiled writes

        with contextlib.suppress(OSError, ValueError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(
                self.path,
                MAGIC + marshal.dumps(table),
                before_replace=_private,  # code that runs: the user's alone (module doc)
            )
            self.used.update(self.added)
            self._known = table
            self.added = {}


def _private(path: Path) -> None:
    os.chmod(path, 0o600)


def _read(path: Path) -> dict[bytes, CodeType]:
    """The table in `path`, or an empty one when it is missing, not the user's own, writable by
    others, damaged or from another Python (module doc)."""
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError):
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            own = not hasattr(os, "getuid") or info.st_uid == os.getuid()
            if not own or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return {}
            data = handle.read()
        if data[: len(MAGIC)] != MAGIC:
            return {}
        table = marshal.loads(data[len(MAGIC) :])
        if isinstance(table, dict) and all(
            isinstance(k, bytes) and isinstance(v, CodeType) for k, v in table.items()
        ):
            return table
    return {}


def install() -> None:
    """Compile dataclass methods through the kept table from now on, and save it at exit.

    Idempotent; `ccopt` calls it before its first import (module doc)."""
    if isinstance(getattr(dataclasses, "exec", None), _BoundExec):
        return
    try:
        path = table_path()
    except (RuntimeError, KeyError, OSError):  # no home folder to find a cache in: compile as usual
        return
    table = _Table(path)
    dataclasses.exec = _BoundExec(table)  # type: ignore[attr-defined]
    atexit.register(table.save)


class _BoundExec:
    """The exec the dataclasses module finds before the builtin one (its module globals are
    looked up first): the table's."""

    def __init__(self, table: _Table) -> None:
        self.table = table

    def __call__(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        self.table.exec(source, globals, locals)
