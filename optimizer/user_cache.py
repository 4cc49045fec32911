"""The user cache: plain data files that only save time, read like any untrusted input.

Where: $CCOPT_CACHE_DIR, else $XDG_CACHE_HOME/ccopt, else ~/.cache/ccopt. A relative
directory is refused (it would make the folder a command runs in, say a cloned repository,
the cache): the cache is then not used, with one note.

What it holds: the price tables `ccopt prices refresh` downloaded (optimizer/pricing) and the
bundled TOML tables parsed to JSON (`parsed_toml`: tomllib takes ~20 ms for the two tables
every plan reads, json ~1 ms). Nothing in it is code, and nothing read from it is executed.

How a cache file is read (`read_cache_file`): only when it and every folder from it up to the
cache root belong to this user and nobody else may write them; only a regular file, never
through a symlink (opened with O_NOFOLLOW and without blocking, so a FIFO or a device cannot
hang a command), at most a stated size. A JSON cache is strict JSON, nested at most
MAX_NESTING deep, and validated by its reader. A file that fails any of this is ignored with
one `note:` (optimizer.notices), and the next run that writes the cache replaces it.

How it is written (`write_cache_file`): folders made private (0700), a temp file (0600) beside
the target, fsync, os.replace: a symlink in the target's place is replaced, never followed.
An unwritable cache only costs time, silently.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.notices import note

__all__ = [
    "MAX_CACHE_BYTES",
    "CacheRoot",
    "cache_root",
    "user_cache_dir",
    "read_cache_file",
    "read_cache_json",
    "write_cache_file",
    "untrusted_reason",
    "parsed_toml",
]

#: the largest cache file read (the refreshed price table is ~3 MB; parsed tables ~0.1 MB)
MAX_CACHE_BYTES = 64 * 1024 * 1024
#: deepest nesting of a JSON cache file (ours nest ≤ 6)
MAX_NESTING = 64
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


@dataclass(frozen=True)
class CacheRoot:
    """The cache directory (None: refused), why it was refused, and the directory as configured
    (refused or not: what output checks protect)."""

    path: Path | None
    refused: str = ""
    configured: Path | None = None


def cache_root() -> CacheRoot:
    """$CCOPT_CACHE_DIR, else $XDG_CACHE_HOME/ccopt, else ~/.cache/ccopt; a relative one refused."""
    if os.environ.get("CCOPT_CACHE_DIR"):
        path, origin = Path(os.environ["CCOPT_CACHE_DIR"]).expanduser(), "$CCOPT_CACHE_DIR"
    elif os.environ.get("XDG_CACHE_HOME"):
        path, origin = Path(os.environ["XDG_CACHE_HOME"]) / "ccopt", "$XDG_CACHE_HOME"
    else:
        try:
            path, origin = Path.home() / ".cache" / "ccopt", "the home folder"
        except RuntimeError:  # no home folder to find: no cache
            return CacheRoot(None, "no home folder")
    if not path.is_absolute():
        why = f"the cache directory {str(path)!r} (from {origin}) is relative; allowed: an absolute path"
        return CacheRoot(None, why, path)
    return CacheRoot(path, configured=path)


def user_cache_dir() -> Path | None:
    """The cache directory as configured, refused or not (callers that only name it, e.g. to
    protect its files from outputs); None without a home folder to find it in."""
    return cache_root().configured


def _unsafe(info: os.stat_result, path: Path, what: str) -> str:
    """Why a folder or file's owner or mode makes it untrusted, or ""."""
    if info.st_uid != os.getuid():
        return f"{what} {path} belongs to another user (uid {info.st_uid})"
    if info.st_mode & _WRITABLE_BY_OTHERS:
        return f"{what} {path} may be written by other users (mode {stat.filemode(info.st_mode)})"
    return ""


def untrusted_reason(root: Path, file: Path) -> str:
    """Why `file` (under `root`) may not be read as this user's cache, or "" when it may.

    The file must be a regular file, not a symlink; it and every folder from it up to the
    cache root must be this user's and writable by nobody else (the root may be a symlink: its
    target is judged)."""
    try:
        relative = file.relative_to(root)
        info = file.lstat()
    except (ValueError, OSError) as exc:
        return f"{file}: {getattr(exc, 'strerror', None) or exc}"
    if stat.S_ISLNK(info.st_mode):
        return f"{file} is a symlink; allowed: a regular file"
    if not stat.S_ISREG(info.st_mode):
        return f"{file} is not a regular file"
    if reason := _unsafe(info, file, "the file"):
        return reason
    folder = file.parent
    for _ in relative.parts[:-1]:
        if reason := _folder_reason(folder, follow=False):
            return reason
        folder = folder.parent
    return _folder_reason(root, follow=True)


def _folder_reason(folder: Path, follow: bool) -> str:
    try:
        info = folder.stat() if follow else folder.lstat()
    except OSError as exc:
        return f"{folder}: {exc.strerror or exc}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{folder} is not a folder"
    return _unsafe(info, folder, "the folder")


def read_cache_file(relative: str, max_bytes: int = MAX_CACHE_BYTES) -> bytes | None:
    """The bytes of the cache file `relative` (to the cache root), or None when it is absent
    or not trusted (a note says why; see the module docstring)."""
    root = cache_root()
    if root.path is None:
        if root.refused != "no home folder":
            note(f"cache not used: {root.refused}")
        return None
    file = root.path / relative
    if not os.path.lexists(file):
        return None
    if reason := untrusted_reason(root.path, file):
        note(f"ignored cache file: {reason}")
        return None
    return _read_bounded(file, max_bytes)


def _read_bounded(file: Path, max_bytes: int) -> bytes | None:
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file, flags)
    except OSError as exc:
        note(f"ignored cache file {file}: {exc.strerror or exc}")
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)  # the file opened, judged again (it may have changed since lstat)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes or _unsafe(info, file, "file"):
            note(f"ignored cache file {file}: not a private regular file of at most {max_bytes} bytes")
            return None
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        note(f"ignored cache file {file}: larger than {max_bytes} bytes")
        return None
    return data


def read_cache_json(relative: str, max_bytes: int = MAX_CACHE_BYTES) -> object | None:
    """The strict JSON of the cache file `relative`, or None (absent, untrusted or damaged:
    a note says why). The caller validates its shape."""
    data = read_cache_file(relative, max_bytes)
    return None if data is None else _parsed_json(data, relative)


def _parsed_json(data: bytes, relative: str) -> object | None:
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        note(f"ignored damaged cache file {relative}: {type(exc).__name__}; it is rewritten by this run")
        return None
    if _too_deep(value):
        note(f"ignored cache file {relative}: nested deeper than {MAX_NESTING} levels")
        return None
    return value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not strict JSON")


def _too_deep(value: object) -> bool:
    stack = [(value, 1)]
    while stack:  # iterative: never recurses
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            return True
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def write_cache_file(relative: str, data: bytes) -> bool:
    """Write `data` as the cache file `relative` (module docstring); False when it could not."""
    root = cache_root()
    if root.path is None:
        return False
    file = root.path / relative
    with contextlib.suppress(OSError):
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _folder_reason(root.path, follow=True) or _folder_reason(file.parent, follow=False):
            return False  # a folder others may write: nothing of ours goes there
        fd, temp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, file)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        return True
    return False


def parsed_toml(name: str, data: bytes) -> dict[str, Any]:
    """The TOML document `data` (UTF-8), parsed once per content.

    The parse is kept as `parsed/<name>-<python>-<sha256 of the TOML bytes>.json` (a changed
    file has another name): a first line with the SHA-256 of the JSON that follows, then the
    JSON. It is used only when that checksum holds and it reads back as a table, so a damaged
    file is parsed again (and rewritten), never trusted. Tables with TOML dates are not kept."""
    digest = hashlib.sha256(data).hexdigest()
    relative = f"parsed/{name}-py{sys.version_info[0]}{sys.version_info[1]}-{digest}.json"
    kept = _checked_json(relative)
    if isinstance(kept, dict):
        return kept
    import tomllib  # lazy: a kept parse does not need the parser (~3 ms to import)

    value = tomllib.loads(data.decode("utf-8"))
    with contextlib.suppress(TypeError, ValueError):  # a date in the table: not kept
        body = json.dumps(value, separators=(",", ":")).encode("utf-8")
        write_cache_file(relative, hashlib.sha256(body).hexdigest().encode("ascii") + b"\n" + body)
    return value


def _checked_json(relative: str) -> object | None:
    """The JSON after a checksum line, when the checksum matches (else None, with a note)."""
    data = read_cache_file(relative)
    if data is None:
        return None
    recorded, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode("ascii") != recorded:
        note(f"ignored damaged cache file {relative}: checksum differs; it is rewritten by this run")
        return None
    return _parsed_json(body, relative)
