"""The user cache directory, and bundled data files parsed once per content.

`user_cache_dir()`: $CCOPT_CACHE_DIR, else $XDG_CACHE_HOME/ccopt, else ~/.cache/ccopt (the
price cache lives there too, optimizer/pricing/catalog.py).

`parsed(name, data, parse)`: the TOML tables every plan reads at start (model/data/stacks.toml
and fitted.toml) take ~23 ms to parse with tomllib and ~0.4 ms to unpickle (measured, Python
3.11). The parse of a file's bytes is kept as `parsed/<name>-<key>.pickle` in the user cache,
where the key is the SHA-256 of the bytes (with the Python version, whose parser made it): a
file that changes has another key, so an earlier parse is never read for it. The pickle is
written atomically (optimizer.files.write_atomic); an unwritable cache, a missing or damaged
pickle all fall back to parsing, silently (it only costs time). The pickle is read with an
unpickler that builds only plain values (dicts, lists, strings, numbers and the datetime types
TOML has): a planted pickle cannot run code, it is just parsed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["user_cache_dir", "parsed", "parsed_toml"]

T = TypeVar("T")


def user_cache_dir() -> Path:
    """User cache directory: $CCOPT_CACHE_DIR, else $XDG_CACHE_HOME/ccopt, else ~/.cache/ccopt."""
    if os.environ.get("CCOPT_CACHE_DIR"):
        return Path(os.environ["CCOPT_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ccopt"


class _PlainUnpickler(pickle.Unpickler):
    """Plain values only: TOML's tables, arrays, strings, numbers, booleans and datetimes."""

    _ALLOWED = frozenset({("datetime", n) for n in ("datetime", "date", "time", "timezone", "timedelta")})

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a plain value")


def parsed(name: str, data: bytes, parse: Callable[[bytes], T]) -> T:
    """`parse(data)`, from the user cache when these exact bytes were parsed before (module doc).

    `name` names the file (and the parser: one name, one parse function)."""
    digest = hashlib.sha256(data).hexdigest()
    version = f"py{sys.version_info[0]}{sys.version_info[1]}"
    path = user_cache_dir() / "parsed" / f"{name}-{version}-{digest}.pickle"
    with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        with path.open("rb") as handle:
            value: T = _PlainUnpickler(handle).load()
        return value
    value = parse(data)
    from optimizer.files import write_atomic  # lazy: only a parse not kept yet is written

    with contextlib.suppress(OSError, pickle.PicklingError, TypeError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value


def parsed_toml(name: str, data: bytes) -> dict[str, Any]:
    """The TOML document `data` (UTF-8), parsed once per content (`parsed`)."""
    return parsed(name, data, _toml)


def _toml(data: bytes) -> dict[str, Any]:
    import tomllib  # lazy: a cached parse does not need the parser (~3 ms to import)

    return tomllib.loads(data.decode("utf-8"))
