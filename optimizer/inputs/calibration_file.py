"""Checks of the calibration store ($CCOPT_CALIBRATION) before anything reads or writes it.

Every load and save of the store (optimizer.inputs.calibration, inputs.profile_store) calls
`check_calibration_store` first, so a store that is a directory, not UTF-8, not JSON, or holds
an efficiency that is not a finite number in [0.001, 1] is a one-line error naming the file,
the entry and the allowed values.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError

__all__ = ["calibration_path", "check_calibration_store", "EFFICIENCY_RANGE", "MIN_EFFICIENCY"]

#: what a stored base efficiency may be: calibration fits it by bisection on [0.001, 1]
EFFICIENCY_RANGE = "a number ≥ 0.001 and ≤ 1"
MIN_EFFICIENCY = 0.001


def calibration_path() -> Path:
    """$CCOPT_CALIBRATION, else $XDG_CONFIG_HOME/ccopt/calibration.json (~/.config by default)."""
    env = os.environ.get("CCOPT_CALIBRATION")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "ccopt" / "calibration.json"


def _entries(file: Path) -> Any:
    try:
        text = file.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise ConfigError(
            f"calibration store {file} (CCOPT_CALIBRATION) is a directory; "
            "allowed: a JSON file path (created by `ccopt calibrate`)"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"calibration store {file}: not UTF-8 text (byte {exc.start}: {exc.reason}); delete or fix it"
        ) from None
    except OSError as exc:
        raise ConfigError(f"calibration store {file}: cannot read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"calibration store {file}: not valid JSON ({exc}); delete or fix it") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries", {}), dict):
        raise ConfigError(
            f"calibration store {file}: entries: must be a table of "
            '"GPU/precision" → {efficiency: ...}; delete or fix it'
        )
    return data.get("entries", {})


def check_calibration_store(path: Path | None = None) -> None:
    """Raise ConfigError unless the store is absent or valid (see the module docstring)."""
    file = path or calibration_path()
    if not file.exists():
        if file.parent.exists() and not file.parent.is_dir():
            raise ConfigError(f"calibration store {file}: {file.parent} is a file, not a directory")
        return
    for key, entry in _entries(file).items():
        where = f"calibration store {file}: entries.{key}"
        if not isinstance(key, str) or "/" not in key:
            raise ConfigError(f'{where}: key must be "GPU_ID/precision"; delete or fix it')
        value = entry.get("efficiency") if isinstance(entry, dict) else None
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and MIN_EFFICIENCY <= value <= 1
        )
        if not ok:
            raise ConfigError(
                f"{where}.efficiency: {value!r} is not allowed; allowed: "
                f"{EFFICIENCY_RANGE} (rerun `ccopt calibrate` or delete the entry)"
            )
