"""What an HTML report is made of: JSON results of the contract, and which kind of report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from optimizer.errors import ConfigError
from optimizer.report.contract import output_model

__all__ = ["ReportInputs", "ReportKind", "detect_command", "inputs_from_saved"]

ReportKind = Literal["train", "batch", "serve"]

#: the `--json` outputs a report can be made from, and the report each becomes
_REPORT_OF: dict[str, ReportKind] = {
    "plan": "train",
    "compare": "train",
    "batch": "batch",
    "serve": "serve",
    "serve-compare": "serve",
}


@dataclass(frozen=True)
class ReportInputs:
    """Everything one report shows, each a dict of the JSON contract (one source of numbers).

    result: `plan --json` (train), `batch --json` or `serve --json`.
    compare: `compare --json` of the same training job (per-GPU best plans, rent vs buy).
    deadline_sweep: `plan --json` of the same job re-planned at other deadlines (each names its
        deadline in job.deadline_hours).
    load_sweep: `serve --json` of the same job re-solved at other request rates (each names its
        load in job.load_requests_per_s).
    latency_by_batch: `estimate --json --mode serve` of the chosen replica at several batches.
    made_by: the command that made the report (shown in its footer).
    """

    kind: ReportKind
    result: dict[str, Any]
    compare: dict[str, Any] | None = None
    deadline_sweep: tuple[dict[str, Any], ...] = ()
    load_sweep: tuple[dict[str, Any], ...] = ()
    latency_by_batch: tuple[dict[str, Any], ...] = ()
    made_by: str = ""


def detect_command(data: object) -> str:
    """Which command's `--json` output `data` is, from its fields.

    Raises:
        ConfigError: not an output of a command a report can be made from.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"expected a JSON object (a command's --json output), got {type(data).__name__}")
    if "best" in data and "per_gpu" in data:
        command = "serve-compare"
    elif "per_gpu" in data and "break_even" in data:
        command = "compare"
    elif "jobs" in data and "resources" in data:
        command = "batch"
    elif "mode" in data and "fits" in data:
        command = "estimate"
    elif isinstance(data.get("job"), dict) and "targets" in data["job"]:
        command = "serve"
    elif "plan" in data and "alternatives" in data:
        command = "plan"
    else:
        raise ConfigError(
            "not a ccopt result: expected the --json output of plan, compare, batch, serve or serve-compare"
        )
    if command not in _REPORT_OF:
        raise ConfigError(
            f"a {command} result has no plan to report; report a job file or "
            f"the --json of {', '.join(_REPORT_OF)}"
        )
    return command


def _checked(command: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` validated against its contract model (one line naming the first bad field)."""
    try:
        output_model(command).model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise ConfigError(
            f"not a valid {command} --json result: {where}: {err['msg']} "
            f"(`ccopt schema {command}` prints the contract)"
        ) from None
    return data


def _plan_view_of_compare(compare: dict[str, Any]) -> dict[str, Any]:
    """A compare result seen as a plan result: its cheapest plan, cloud or owned/bought, with
    no alternatives (the other is in the compare sections)."""
    options = [p for p in (compare.get("cloud"), compare.get("owned_or_bought")) if p]
    best = min(options, key=lambda p: p["cost_usd"]) if options else None
    return {
        "status": "optimal" if best else "infeasible",
        "plan": best,
        "alternatives": [],
        "explanation": compare.get("explanation"),
        "job": {"name": compare.get("job")},
        "catalog": compare.get("catalog"),
        "rejected": compare.get("rejected", []),
        "notes": [],
        "solver": {},
        **({"mix": compare["mix"]} if compare.get("mix") else {}),  # the mixed cluster (issue 32)
    }


def inputs_from_saved(data: object, made_by: str = "") -> ReportInputs:
    """The report inputs of a saved `--json` result (kind detected from its fields, checked
    against its contract).

    Raises:
        ConfigError: not a result a report can be made from, or it does not match its contract.
    """
    command = detect_command(data)
    assert isinstance(data, dict)  # detect_command raises for anything else
    _checked(command, data)
    kind = _REPORT_OF[command]
    if command == "compare":
        return ReportInputs(kind, _plan_view_of_compare(data), compare=data, made_by=made_by)
    if command == "serve-compare":
        return ReportInputs(kind, data["best"], made_by=made_by)
    return ReportInputs(kind, data, made_by=made_by)
