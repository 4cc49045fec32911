"""RL post-training jobs (DPO, GRPO, PPO) through the API: the job file and the catalog are
loaded here; the RL planner takes them parsed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.api.job_files import rows_if_cloud
from optimizer.errors import ConfigError
from optimizer.inputs.jobs.common import coerce_document
from optimizer.inputs.jobs.rl import RlJob, load_rl_job, rl_job_from_dict
from optimizer.report.export.common import ExportedFile
from optimizer.report.export.verl import verl_export
from optimizer.report.rl import rl_json
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.rl.plan import RlResult, plan_rl

__all__ = ["rl", "run_rl", "rl_export", "check_rl_export", "RlDocument", "RL_EXPORT_FORMATS"]

#: the launch configs an RL plan exports to
RL_EXPORT_FORMATS = ("verl",)

#: an RL job as the API takes it: a TOML path, a decoded dict or a validated RlJob
RlDocument = str | Path | dict[str, Any] | RlJob


def run_rl(
    job: RlDocument,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> RlResult:
    """Plan an RL job given as a TOML path, a dict or an RlJob (see plan_rl)."""
    parsed, base_dir = coerce_document(job, RlJob, load_rl_job, rl_job_from_dict)
    rows, age = rows_if_cloud(parsed, parsed.constraints.cloud, prices, offline)
    result = plan_rl(parsed, rows, base_dir, SolverConfig(time_limit_s=time_limit_s))
    return replace(result, catalog=age)


def rl(
    job: RlDocument,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> dict[str, Any]:
    """Cheapest pools for an RL job, as `ccopt rl --json` returns it."""
    return rl_json(run_rl(job, prices=prices, offline=offline, time_limit_s=time_limit_s))


def rl_export(result: dict[str, Any], format: str = "verl") -> ExportedFile:  # noqa: A002
    """The launch config of a feasible `rl` result (the dict `rl` returns) for `format`.

    Raises:
        ConfigError: an unknown format, an infeasible result, or a plan the framework cannot
            run (verl: colocated GRPO / PPO only).
    """
    check_rl_export(format)
    return verl_export(result)


def check_rl_export(fmt: str) -> None:
    """Check an RL export format before any solving (`ccopt rl --export`, rl_export).

    Raises:
        ConfigError: not one of RL_EXPORT_FORMATS (names the allowed).
    """
    if fmt not in RL_EXPORT_FORMATS:
        raise ConfigError(f"--export: {fmt!r} is not an RL export; allowed: {', '.join(RL_EXPORT_FORMATS)}")
