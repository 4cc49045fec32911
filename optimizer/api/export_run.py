"""`api.export`: the files that launch a plan, serve or batch result on the tools that run it."""

from __future__ import annotations

from typing import Any

from optimizer.report.export import EXPORT_FORMATS, Export, ExportedFile, export_result

__all__ = ["export", "Export", "ExportedFile", "EXPORT_FORMATS"]


def export(result: dict[str, Any], format: str) -> Export:  # noqa: A002 (the brief's name)
    """Export a result (the dict `api.plan`, `api.serve` or `api.batch_json` returns) as `format`.

    Args:
        result: a feasible plan, serve or batch result (the JSON contract).
        format: one of EXPORT_FORMATS (`all`: every format that applies to the plan).

    Returns:
        Export: `files` (name, text, job, format; a batch gives one file per scheduled job) and
        `skipped` (each format or job left out, with the reason).

    Raises:
        ConfigError: unknown format, no plan in the result, or no file of `format` applies.
    """
    return export_result(result, format)
