"""`api.export`: the files that launch a plan, serve or batch result on the tools that run it."""

from __future__ import annotations

from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.validation import TEXT_ALLOWED, control_character
from optimizer.report.export import EXPORT_FORMATS, Export, ExportedFile, export_result

__all__ = ["export", "Export", "ExportedFile", "EXPORT_FORMATS"]


def export(
    result: dict[str, Any],
    format: str,  # noqa: A002 (the brief's name)
    train_script: str | None = None,
) -> Export:
    """Export a result (the dict `api.plan`, `api.serve` or `api.batch_json` returns) as `format`.

    Args:
        result: a feasible plan, serve or batch result (the JSON contract).
        format: one of EXPORT_FORMATS (`all`: every format that applies to the plan).
        train_script: the user's training script that the launch lines start (generic,
            DeepSpeed, HF Trainer, FSDP stacks); None: the scripts stop asking for TRAIN_SCRIPT.

    Returns:
        Export: `files` (name, text, job, format; a batch gives one file per scheduled job) and
        `skipped` (each format or job left out, with the reason).

    Raises:
        ConfigError: unknown format, no plan in the result, no file of `format` applies, or a
            control character in `train_script`.
    """
    if train_script is not None:
        bad = control_character(train_script)
        if bad is not None or not train_script.strip():
            raise ConfigError(
                f"--train-script: {train_script!r} is not allowed ({bad or 'empty'}); allowed: {TEXT_ALLOWED}"
            )
    return export_result(result, format, train_script)
