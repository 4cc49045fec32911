"""Resolve `--model` / `[model]`: a preset name or the path of a Hugging Face config.json."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from optimizer.errors import ConfigError
from optimizer.files import read_json_input
from optimizer.inputs.hf_config import spec_from_hf_config
from optimizer.inputs.profiles import resolve_profile
from optimizer.model.presets import PRESETS, PROFILE_PRESETS, get_preset
from optimizer.model.profile import SampleProfile, as_planned
from optimizer.model.spec import ModelSpec

__all__ = ["load_model", "load_hf_config"]


def load_hf_config(path: str | Path, name: str | None = None) -> ModelSpec:
    """Read a local Hugging Face config.json (or a directory holding one)."""
    file = Path(path)
    if file.is_dir():
        file = file / "config.json"
    cfg = read_json_input(file, "model", lambda exc: _unreadable_config(file, exc))
    label = name or (file.parent.name if file.name == "config.json" else file.stem)
    try:
        return spec_from_hf_config(cfg, name=label or "custom", source=str(file))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(
            f"model: {file}: {'.'.join(map(str, err['loc'])) or 'shape'}: {err['msg']}"
        ) from None


def _unreadable_config(file: Path, exc: Exception) -> str:
    """Why a config.json could not be used: not JSON (where), or not readable."""
    if isinstance(exc, json.JSONDecodeError):
        return f"model: {file} is not valid JSON (line {exc.lineno}: {exc.msg})"
    return f"model: cannot read {file}: {exc}"


def load_model(ref: str) -> ModelSpec:
    """A preset name (a per-sample profile with its measured points resolved), or a path to
    config.json / a model directory. A profile is returned as the planner types it (see
    optimizer.model.profile.as_planned; tell it apart with `is_profile`)."""
    if ref.strip().lower() in PRESETS:
        return PRESETS[ref.strip().lower()]
    if ref.strip().lower() not in PROFILE_PRESETS and (
        ref.endswith(".json") or Path(ref).exists() or "/" in ref
    ):
        return load_hf_config(ref)
    model = get_preset(ref)
    return as_planned(resolve_profile(model)) if isinstance(model, SampleProfile) else model
