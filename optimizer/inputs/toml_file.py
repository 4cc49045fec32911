"""Reading a TOML input file: the one place that turns file problems into one-line errors."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.files import read_input_text

__all__ = ["read_toml"]


def read_toml(file: Path, what: str = "job file") -> dict[str, Any]:
    """The decoded table of a TOML file.

    Raises:
        ConfigError: the file is missing, a directory, not UTF-8 (with the byte offset) or not
            valid TOML, a FIFO or a device (regular files only) — one line naming the file.
    """
    try:
        return tomllib.loads(read_input_text(file, what))
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {file}") from None
    except IsADirectoryError:
        raise ConfigError(f"{what} is a directory: {file}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: invalid TOML: {exc}") from None
