"""Files a user names: inputs are read as regular files only, outputs written atomically and
never over an input, a store, a device, a FIFO or a directory.

Inputs (`open_input`, `read_input_text`): opened without blocking (a FIFO or a device is
refused, not waited on: allowed is a regular file) and remembered, by device and inode, as
files this process read. JSON inputs are strict (`parse_json`: no NaN, Infinity or number past
a float's range) and no JSON or TOML input nests deeper than MAX_NESTING (`check_nesting`).

Outputs (every -o/--output/--plot of the CLI: `output_file` checks before any work,
`OutputFile.write` re-checks and writes at the end):
- a new file needs nothing; its folder must exist: ccopt creates no folder for an output, a
  missing one is one line and exit 2 for every command;
- never replaced, not even with --force: a file this process read (the job file, a --prices
  table, a config.json it names, a saved result) and the files the caller keeps (the
  calibration store and the price cache, see optimizer.api.outputs);
- refused: a directory, a device node, a FIFO, a socket, a symlink to one of them, a dangling
  symlink, a symlink loop, a read-only file; a symlink to a regular file writes through to the
  file it points to (the link stays);
- an existing regular file is replaced only when it is an earlier ccopt output, or with
  --force. An earlier output is recognised by content: an HTML page with
  `<meta name="generator" content="ccopt …">` (the report), a JSON object whose "kind" starts
  with "ccopt-" (`ccopt measure`), or a PNG/PDF/SVG/SVGZ/PS/EPS/JPEG/TIFF/WebP image carrying
  OUTPUT_MARK in its metadata (PNG Software, PDF/SVG/PS Creator, JPEG comment, TIFF/WebP Exif
  Software) — `image_mark` gives matplotlib the arguments that write it;
- writing: a temp file beside the target, flush + fsync, os.replace, fsync of the folder; a
  replaced file keeps its permission bits, a new one gets 0o666 minus the umask.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from optimizer import __version__
from optimizer.errors import ConfigError

__all__ = [
    "OUTPUT_MARK",
    "OutputFile",
    "output_file",
    "write_atomic",
    "is_ccopt_output",
    "image_mark",
    "open_input",
    "read_input_text",
    "was_read",
    "parse_json",
    "read_json_input",
    "check_nesting",
    "nested_too_deep",
    "MAX_NESTING",
]

#: what every image ccopt writes carries in its metadata (see the module docstring)
OUTPUT_MARK = f"made by ccopt {__version__}"
_MARK = b"made by ccopt "
_HTML_MARK = b'<meta name="generator" content="ccopt '
#: the header line of every exported launch file (optimizer/report/export/common.header_lines)
_EXPORT_MARK = b"exported by ccopt "
#: bytes read from each end of a file to recognise an earlier output (metadata sits near an end)
SNIFF_BYTES = 65_536
#: the largest JSON file parsed to recognise an earlier `ccopt measure` point
MAX_JSON_SNIFF_BYTES = 4_000_000
_IMAGE_MAGIC = (b"\x89PNG", b"%PDF", b"%!PS", b"\xff\xd8", b"II*\x00", b"MM\x00*", b"<?xml", b"<svg")

#: deepest nesting of arrays and tables accepted in a JSON or TOML input (ours use ≤ 6; a
#: deeper document is refused before a recursive parser or validator can overflow the stack)
MAX_NESTING = 64

#: (st_dev, st_ino) -> absolute path of every file this process opened as an input (a match
#: counts only while that path still names that inode: a deleted file's inode is reused)
_READ: dict[tuple[int, int], str] = {}

Data = bytes | str | Callable[[IO[bytes]], None]


def _kind(mode: int) -> str:
    """What a stat mode names, in words."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next(
        (words for test, words in kinds if test(mode)),
        "a regular file" if stat.S_ISREG(mode) else "not a file",
    )


def _open_regular(file: Path, what: str) -> IO[bytes]:
    """`file` opened for binary reading without blocking, if it is a regular file."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(file))
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{what} {file}: is {_kind(info.st_mode)}; allowed: a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def open_input(path: str | Path, what: str = "input") -> IO[bytes]:
    """`path` opened for reading in binary mode, if it is a regular file (recorded as read).

    Raises:
        FileNotFoundError, IsADirectoryError, OSError: as open() would (callers word them).
        ConfigError: a FIFO, device or socket — refused without waiting on it.
    """
    handle = _open_regular(Path(path), what)
    info = os.fstat(handle.fileno())
    _READ[(info.st_dev, info.st_ino)] = os.path.abspath(path)
    return handle


def read_input_text(path: str | Path, what: str = "input") -> str:
    """The UTF-8 text of a regular input file (see open_input; UnicodeDecodeError as usual)."""
    with open_input(path, what) as handle:
        return handle.read().decode("utf-8")


def _was_read(info: os.stat_result) -> bool:
    read = _READ.get((info.st_dev, info.st_ino))
    return read is not None and _same(info, Path(read))


def was_read(path: str | Path) -> bool:
    """Whether this process opened `path` (the same file, by device and inode) as an input."""
    try:
        return _was_read(os.stat(path))
    except OSError:
        return False


def nested_too_deep(what: str) -> ConfigError:
    """The one refusal of a JSON or TOML document nested deeper than MAX_NESTING (read, parsed
    or checked)."""
    return ConfigError(
        f"{what}: arrays/tables nested deeper than {MAX_NESTING} levels; allowed: at most {MAX_NESTING}"
    )


def check_nesting(doc: Any, what: str) -> None:
    """Raise ConfigError when `doc` (parsed JSON/TOML) nests deeper than MAX_NESTING."""
    stack = [(doc, 1)]
    while stack:  # iterative: the check itself never recurses
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > MAX_NESTING:
                    raise nested_too_deep(what)
                stack.append((child, depth + 1))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed; allowed: finite numbers (strict JSON)")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:40]} is too large; allowed: finite numbers (at most ~1.8e308)")
    return value


def parse_json(text: str, what: str) -> Any:
    """Strict JSON: NaN, Infinity and numbers that overflow a float are refused, and so is
    nesting deeper than MAX_NESTING.

    Raises:
        json.JSONDecodeError: not JSON at all (the caller says what it expected).
        ConfigError: one line naming `what` and the problem.
    """
    try:
        doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise nested_too_deep(what) from None
    except json.JSONDecodeError:
        raise  # not JSON at all: each reader words it (what it expected)
    except ValueError as exc:  # a hook's refusal, or an integer over Python's digit limit
        raise ConfigError(f"{what}: {exc}") from None
    check_nesting(doc, what)
    return doc


def read_json_input(
    path: str | Path, flag: str, unreadable: Callable[[Exception], str], what: str | None = None
) -> Any:
    """The strict JSON (parse_json) of the input file `flag` names: one reader for every JSON
    input (calibration points, saved plans, Hugging Face configs).

    `unreadable(exc)` words any other failure to read or parse it (an OSError, a
    UnicodeDecodeError or a json.JSONDecodeError) in one line; `what` prefixes the
    not-a-regular-file message (default "FLAG:").

    Raises:
        ConfigError: the file is missing, unreadable, not JSON, or refused by parse_json.
    """
    file = Path(path)
    try:
        return parse_json(read_input_text(file, f"{flag}:" if what is None else what), f"{flag}: {file}")
    except ConfigError:
        raise
    except FileNotFoundError:
        raise ConfigError(f"{flag}: file not found: {file}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(unreadable(exc)) from None


def image_mark(fmt: str) -> dict[str, Any]:
    """matplotlib savefig arguments that write OUTPUT_MARK into an image of format `fmt`."""
    fmt = fmt.lower()
    if fmt == "png":
        return {"metadata": {"Software": OUTPUT_MARK}}
    if fmt in ("pdf", "svg", "svgz", "ps", "eps"):
        return {"metadata": {"Creator": OUTPUT_MARK}}
    if fmt in ("jpg", "jpeg"):
        return {"pil_kwargs": {"comment": OUTPUT_MARK}}
    if fmt in ("tif", "tiff", "webp"):
        from PIL import Image  # lazy: Pillow comes with matplotlib, the optional 'plot' extra

        exif = Image.Exif()
        exif[0x0131] = OUTPUT_MARK  # Exif tag 305, Software (TIFF 6.0 spec, p. 39)
        return {"pil_kwargs": {"exif": exif.tobytes()}}
    return {}


def _ends(path: Path) -> tuple[bytes, bytes, int]:
    """(first SNIFF_BYTES, last SNIFF_BYTES, size) of a regular file; empty when unreadable."""
    try:
        with _open_regular(path, "output") as handle:
            size = os.fstat(handle.fileno()).st_size
            head = handle.read(SNIFF_BYTES)
            handle.seek(max(size - SNIFF_BYTES, 0))
            return head, handle.read(SNIFF_BYTES), size
    except (OSError, ConfigError):
        return b"", b"", 0


def is_ccopt_output(path: str | Path) -> bool:
    """Whether `path` is a file ccopt wrote (the marks of the module docstring)."""
    file = Path(path)
    head, tail, size = _ends(file)
    if head.startswith(b"\x1f\x8b"):  # svgz: the mark sits in the compressed SVG's head
        with contextlib.suppress(zlib.error):
            head = zlib.decompressobj(wbits=31).decompress(head, SNIFF_BYTES)
    if _HTML_MARK in head or _EXPORT_MARK in head:
        return True
    if head.lstrip().startswith(b"{") and size <= MAX_JSON_SNIFF_BYTES:
        try:
            with _open_regular(file, "output") as handle:
                doc = json.loads(handle.read())
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and str(doc.get("kind", "")).startswith("ccopt-")
    image = head.startswith(_IMAGE_MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")
    return image and (_MARK in head or _MARK in tail)


def _same(info: os.stat_result, path: Path) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (info.st_dev, info.st_ino)


def write_atomic(
    path: str | Path, data: Data, *, before_replace: Callable[[Path], None] | None = None
) -> None:
    """Write `data` (bytes, text as UTF-8, or a function writing to a binary handle) to a temp
    file beside `path`, fsync it, let `before_replace(temp)` check it (it may raise), then
    os.replace it onto `path` and fsync the folder. Nothing changes at `path` on failure.

    Raises:
        OSError: the folder is missing or not writable, the disk is full, … (callers word it).
    """
    file = Path(path)
    try:
        mode = stat.S_IMODE(os.stat(file).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            if callable(data):
                data(handle)
            else:
                handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace(Path(tmp))
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself durable (not every FS allows it)
        folder = os.open(file.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


@dataclass(frozen=True)
class OutputFile:
    """A file the user named for an output, with what it must never replace.

    Attributes:
        path: the path as given (~ expanded).
        flag: the option that named it ("-o", "--plot"), for messages.
        force: replace an existing file that is not an earlier ccopt output.
        keep: (path, what it is) of files never to replace (inputs, stores).
    """

    path: Path
    flag: str
    force: bool = False
    keep: tuple[tuple[Path, str], ...] = ()

    def _refuse(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.flag}: {self.path} {problem}")

    def check(self) -> Path:
        """The file to write (a symlink's target), when allowed (rules: module docstring).

        Raises:
            ConfigError: one line naming the flag, the path and why it is refused.
        """
        file = self.path
        if file.name in ("", ".", ".."):
            raise self._refuse("is not a file name; give one such as out" + (file.suffix or ".html"))
        try:
            info: os.stat_result | None = os.stat(file)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._refuse("is a symlink loop; allowed: a regular file or a new name") from None
            if exc.errno == errno.ENOTDIR:
                raise self._refuse("is under a file, not a directory") from None
            raise self._refuse(f"cannot be checked ({exc.strerror or exc})") from None
        link = file.is_symlink()
        if info is None and link:
            raise self._refuse(
                f"is a symlink to {os.readlink(file)}, which does not exist; name the file itself"
            )
        target = Path(os.path.realpath(file)) if link else file
        via = f"is a symlink to {target}, which " if link else ""
        if info is not None:
            if not stat.S_ISREG(info.st_mode):
                raise self._refuse(
                    f"{via}is {_kind(info.st_mode)}; allowed: a new file or an earlier ccopt output"
                )
            kept = next((what for p, what in self.keep if _same(info, p)), None)
            if kept is None and _was_read(info):
                kept = "a file this command read"
            if kept is not None:
                raise self._refuse(f"{via}is {kept}; ccopt never writes over an input: choose another name")
            if not os.access(target, os.W_OK):
                raise self._refuse(f"{via}is read-only; choose another name")
            if not self.force and not is_ccopt_output(target):
                raise self._refuse(
                    f"{via}exists and is not an earlier ccopt output; add --force to replace it"
                )
        else:
            absolute = Path(os.path.abspath(target))
            kept = next((w for p, w in self.keep if Path(os.path.abspath(p)) == absolute), None)
            if kept is not None:
                raise self._refuse(f"is where ccopt keeps {kept}; choose another name")
        folder = target.parent
        if not folder.exists():
            raise self._refuse(
                f"cannot be written: directory {folder} does not exist (ccopt creates none; make it first)"
            )
        if not folder.is_dir():
            raise self._refuse(f"cannot be written: {folder} is a file, not a directory")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise self._refuse(f"cannot be written: directory {folder} is not writable")
        return target

    def write(self, data: Data) -> Path:
        """Check again (files read since count now), then write atomically; the path written.

        Raises:
            ConfigError: refused (see check), or the write failed (disk full, …): one line.
        """
        target = self.check()
        try:
            write_atomic(target, data)
        except OSError as exc:
            raise self._refuse(f"cannot be written ({exc.strerror or exc}); nothing was changed") from None
        return target


def output_file(
    path: str | Path, flag: str, *, force: bool = False, keep: Iterable[tuple[str | Path, str]] = ()
) -> OutputFile:
    """An OutputFile for `path`, checked now (before any work).

    Args:
        path: the file the user named.
        flag: the option that named it, for messages.
        force: replace an existing file that is not an earlier ccopt output.
        keep: (path, what it is) of files that must never be replaced; None paths are skipped.

    Raises:
        ConfigError: the path is refused (see OutputFile.check).
    """
    kept = tuple((Path(p).expanduser(), what) for p, what in keep if p is not None and str(p))
    out = OutputFile(Path(path).expanduser(), flag, force, kept)
    out.check()
    return out
