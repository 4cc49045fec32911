"""Reading a TOML input file: the one place that turns file problems into one-line errors."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from optimizer.errors import ConfigError
from optimizer.files import check_nesting, nested_too_deep, read_input_text

__all__ = ["read_toml", "read_toml_as", "BYTE_ORDER_MARK"]

#: what some Windows editors write at the start of a UTF-8 file; TOML 1.0 does not allow it,
#: but it is no part of the document, so it is dropped before parsing
BYTE_ORDER_MARK = "\ufeff"


def read_toml(file: Path, what: str = "job file") -> dict[str, Any]:
    """The decoded table of a TOML file.

    Raises:
        ConfigError: the file is missing, a directory, not UTF-8 (with the byte offset) or not
            valid TOML, a FIFO or a device (regular files only), nested deeper than
            MAX_NESTING — one line naming the file.
    """
    try:
        doc = tomllib.loads(read_input_text(file, what).removeprefix(BYTE_ORDER_MARK))
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise nested_too_deep(str(file)) from None
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {file}") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory: {file}") from None
    except OSError as exc:  # a symlink loop, no permission, an I/O error
        raise ConfigError(f"{what} {file}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
    check_nesting(doc, str(file))
    return doc


TableT = TypeVar("TableT")


def read_toml_as(path: str | Path, from_dict: Callable[[dict[str, Any], str], TableT]) -> tuple[TableT, Path]:
    """A TOML file validated by `from_dict` (given its table and the file's name), and the
    file's folder (what its relative paths are relative to).

    Raises:
        ConfigError: missing file, invalid TOML (read_toml), or what `from_dict` refuses.
    """
    file = Path(path)
    return from_dict(read_toml(file), str(file)), file.parent
