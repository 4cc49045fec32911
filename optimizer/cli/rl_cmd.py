"""`ccopt rl JOB.toml`: the cheapest pools for an RL post-training job (dpo, grpo, ppo)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from optimizer import api
from optimizer.api import rl as run_rl
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    TimeLimitOpt,
    answer,
    money,
    offline_choice,
    print_solved_header,
    time_limit_s,
    user_errors,
)
from optimizer.cli.export_opts import ExportDirOpt
from optimizer.errors import ConfigError
from optimizer.units import quantile_label

__all__ = ["register", "render_rl"]

ExportOpt = Annotated[
    str | None,
    typer.Option(
        "--export",
        help="Write the plan as a launch config: verl (a colocated GRPO/PPO plan)",
        metavar="FORMAT",
        show_default=False,
    ),
]
JobArg = Annotated[
    Path, typer.Argument(help='RL job file (TOML, workload.kind = "dpo" | "grpo" | "ppo")', metavar="JOB")
]


def _plan_lines(p: dict[str, Any]) -> list[str]:
    """The plan's pools, its step by phase and its whole run."""
    lines = []
    for pool in p["pools"]:
        lines.append(
            f"  {pool['role']:<10} {pool['instances']}× {pool['instance']} ({pool['provider']}, "
            f"{pool['pricing']}): {pool['gpus']}× {pool['gpu']}, {money(pool['usd_per_hour'])}/h"
        )
    s = p["step"]
    rollout = s.get("rollout")
    # the median, as training plans report it (older answers without it: the model's point)
    shown, what = (p["step_p50"], "P50") if p.get("step_p50") else (s, "point")
    lines.append(
        f"  step {shown['time_s']:.1f} s ({what}): generation {shown['generation_s']:.1f} s"
        + (
            f" (TP{rollout['tp']} × {rollout['replicas']} replica{'s' if rollout['replicas'] != 1 else ''}, "
            f"batch {rollout['batch']})"
            if rollout
            else ""
        )
        + f", log-probs {shown['logprob_s']:.1f} s, update {shown['update_s']:.1f} s, "
        f"weight sync {shown['sync_s']:.1f} s"
        + (" — generation overlaps training (one-step off-policy)" if s["pipelined"] else "")
    )
    return lines


def _subject(job: dict[str, Any], _plan: dict[str, Any]) -> str:
    """What the first line names: the RL kind, the model, steps and sequences per step."""
    return f"{job['kind']} on {job['model']}, {job['steps']} steps × {job['sequences_per_step']} sequences"


def render_rl(data: dict[str, Any]) -> None:
    """Rich rendering of an rl_json answer."""
    shown = print_solved_header(data, "candidates", _subject)
    if shown is None:
        return
    c, job, p = shown
    c.print(
        f"  [b]{p['mode']}[/b]: [b]{money(p['cost_usd'])}[/b], {p['hours']:.1f} h at "
        f"{quantile_label(job['confidence'])} ({p['step_s_at_confidence']:.1f} s per step)"
    )
    for line in _plan_lines(p):
        c.print(line)
    other = data.get("other_mode")
    if other is not None:
        c.print(
            f"  best {other['mode']} plan: {money(other['cost_usd'])}, {other['hours']:.1f} h — "
            f"{other['label']}"
        )


def rl(
    job: JobArg,
    json_out: JsonOpt = False,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    time_limit: TimeLimitOpt = None,
    export: ExportOpt = None,
    out_dir: ExportDirOpt = None,
) -> None:
    """The cheapest GPU pools (colocated, or generation beside training) that finish JOB's RL
    post-training (dpo, grpo, ppo) by its deadline."""
    with user_errors():
        _check_export(export, out_dir, json_out)
        limit = time_limit_s(time_limit, None)
        data = run_rl(job, prices=prices, offline=offline_choice(offline), time_limit_s=limit)
    if export is not None and data["status"] != "infeasible":
        with user_errors():
            file = api.rl_export(data, export)
            if out_dir is None:
                sys.stdout.write(file.text)
                return
            # the one output check: never over an input or a store, an earlier export replaced
            api.output_file(out_dir / file.name, "-o", inputs={"the job file": job}).write(file.text)
        sys.stderr.write(f"exported {file.format} of job {file.job!r}: {out_dir / file.name}\n")
    answer(data, json_out, render_rl)


def _check_export(fmt: str | None, out_dir: Path | None, json_out: bool) -> None:
    """The export options, before solving (ConfigError: exit 2)."""
    if fmt is None:
        if out_dir is not None:
            raise ConfigError("-o/--output-dir: only with --export FORMAT")
        return
    api.check_rl_export(fmt)
    if out_dir is None and json_out:
        raise ConfigError("--export without -o DIR prints the file to stdout; with --json give -o DIR")
    if out_dir is not None and not out_dir.is_dir():
        raise ConfigError(f"-o {out_dir}: not an existing folder; allowed: an existing folder")


def register(app: typer.Typer) -> None:
    """Add `rl` to the ccopt app."""
    app.command("rl")(rl)
