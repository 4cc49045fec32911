"""The calibration-point file `ccopt measure` writes and `ccopt calibrate --from FILE` reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.files import read_json_input

__all__ = ["read_point_file", "POINT_FILE_KIND"]

#: the "kind" of a calibration-point file written by `ccopt measure`
POINT_FILE_KIND = "ccopt-calibration-point"


def read_point_file(path: str | Path) -> dict[str, Any]:
    """A calibration-point file of `ccopt measure` (JSON), checked: kind, model, device and the
    measured numbers. Raises ConfigError naming the file and the field."""
    file = Path(path)
    data = read_json_input(
        file, "--from", lambda exc: f"--from: {file} is not a JSON calibration point ({exc})"
    )
    if not isinstance(data, dict) or data.get("kind") != POINT_FILE_KIND:
        raise ConfigError(
            f"--from: {file}: kind must be {POINT_FILE_KIND!r} (a file written by `ccopt measure`)"
        )
    for key in ("model", "device", "precision", "micro_batch", "samples_per_s"):
        if key not in data:
            raise ConfigError(f"--from: {file}: {key} is missing")
    return data
