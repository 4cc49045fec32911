"""`ccopt estimate --from-plan`: one row of a saved `ccopt plan --json` (the plan or an
alternative), estimated again from its own configuration: the same model, instance (or box),
layout and workload settings, through the same functions as the planner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.files import read_json_input
from optimizer.inputs.request import ConfigRequest, request_from_options
from optimizer.report.export.common import plan_options

__all__ = ["plan_row_request", "read_plan_file"]


def read_plan_file(path: str | Path) -> dict[str, Any]:
    """A saved `ccopt plan --json` output, checked enough to name what is wrong in one line."""
    file = Path(path)
    doc = read_json_input(
        file, "--from-plan", lambda exc: f"--from-plan: {file} is not the JSON of `ccopt plan --json` ({exc})"
    )
    if not isinstance(doc, dict) or "plan" not in doc or "job" not in doc:
        raise ConfigError(
            f"--from-plan: {file}: not a `ccopt plan --json` output (no plan and "
            "job); save one with `ccopt plan JOB.toml --json > plan.json`"
        )
    return doc


def _checked_row(doc: dict[str, Any], row: int, model: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(row `row` of the plan output, its job block), once the row exists and the job names
    what estimate needs (see plan_row_request for what is refused)."""
    rows = ([doc["plan"]] if doc.get("plan") else []) + list(doc.get("alternatives") or [])
    if not rows:
        raise ConfigError("--from-plan: the plan is infeasible: there is no configuration to estimate")
    if not 0 <= row < len(rows):
        raise ConfigError(
            f"--row: {row} is not allowed; allowed: 0 (the plan) to {len(rows) - 1} (its alternatives)"
        )
    job = doc["job"]
    missing = [k for k in ("model_ref", "seq_len", "kind") if k not in job]
    if missing:
        raise ConfigError(
            f"--from-plan: job.{missing[0]} is missing (a plan saved by an older "
            "ccopt); plan the job again with this version"
        )
    if job["model_ref"] is None and model is None:
        raise ConfigError(
            "--from-plan: the job's model is an inline shape or profile, which "
            "estimate cannot name; give --model too"
        )
    if job["model_ref"] is not None and model is not None and model != job["model_ref"]:
        raise ConfigError(
            f"--model: {model!r} is not the plan's model; allowed: leave it out "
            f"(the plan names {job['model_ref']!r})"
        )
    return rows[row], job


def plan_row_request(doc: dict[str, Any], row: int = 0, model: str | None = None) -> ConfigRequest:
    """The configuration request that reproduces row `row` of a plan output (0: the
    plan, k: alternative k). `model` names the model only when the plan cannot (an inline shape
    in the job file); a plan that names its model refuses another.

    Raises:
        ConfigError: the plan is infeasible, the row does not exist, or the output lacks what
            estimate needs (an older schema, or a model given as an inline shape).
    """
    r, job = _checked_row(doc, row, model)
    # the same mapping as an export's `ccopt-plan:` header (one definition: report/export/common)
    options = plan_options(r, job)
    options["model"] = job["model_ref"] or model
    if options["lora_targets"] is not None:
        options["lora_targets"] = tuple(options["lora_targets"])
    return request_from_options(options)
