"""The stored calibration runs seen from the API: `ccopt calibrate --list` / `--remove`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.calibrate.points import layout_words
from optimizer.inputs.calibration_file import calibration_path
from optimizer.inputs.calibration_store import load_memory_points, load_points, remove_points
from optimizer.report.contract.calibration import CalibrationListOutput
from optimizer.report.contract.common import emit_list

__all__ = ["calibration_list", "calibration_remove"]


def _row(point: dict[str, Any], file: Path) -> dict[str, Any]:
    measured = point.get("measured") or {}
    if point.get("memory"):
        return {
            "id": point["id"],
            "kind": "memory",
            "gpu": point["gpu"],
            "precision": point["precision"],
            "stack": point["stack"],
            "model": point["model"],
            "layout": layout_words(measured),
            "measured_peak_gib": point["peak_gib"],
            "memory_kind": point["kind"],
            "activation_factor": point["activation_factor"],
            "when": point.get("when"),
            "file": str(file),
        }
    return {
        "id": point["id"],
        "gpu": point["gpu"],
        "precision": point["precision"],
        "stack": point["stack"],
        "model": measured.get("model"),
        "layout": layout_words(measured),
        "measured_step_s": measured.get("step_time_s"),
        "measured_tokens_per_s": measured.get("tokens_per_s"),
        "efficiency": point["efficiency"],
        "size_factor": point.get("size_factor"),
        "when": point.get("when"),
        "file": str(file),
    }


def calibration_list(path: Path | None = None) -> list[dict[str, Any]]:
    """Every stored run of a transformer (`ccopt calibrate --list --json`), oldest first; old
    entries (stack "any") after them, then the measured peaks (kind memory), oldest first.
    Raises ConfigError for a store that is not valid."""
    file = path or calibration_path()
    rows = [_row(p, file) for p in load_points(file) + load_memory_points(file)]
    return emit_list(CalibrationListOutput, rows)


def calibration_remove(target: str, path: Path | None = None) -> list[dict[str, Any]]:
    """Remove the runs `target` names (a run id, or GPU[:precision]); the removed rows.
    Raises ConfigError when it names none, or the store cannot be written (unchanged)."""
    file = path or calibration_path()
    return emit_list(CalibrationListOutput, [_row(p, file) for p in remove_points(target, file)])
