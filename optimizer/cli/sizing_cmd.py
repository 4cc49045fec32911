"""`ccopt sizing JOB.toml`: the cheapest sizing run that would settle the decision."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table

from optimizer import api
from optimizer.cli.common import (
    ConfidenceOpt,
    JobArg,
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    WarmupStepsOpt,
    answer,
    console,
    layout_words,
    money,
    offline_choice,
    user_errors,
)

__all__ = ["register"]

_DEFAULT = api.SizingRule()


def sizing(
    job: JobArg,
    json_out: JsonOpt = False,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    warmup_steps: WarmupStepsOpt = _DEFAULT.warmup_steps,
    min_steps: Annotated[int, typer.Option(help="Steps averaged at least")] = _DEFAULT.min_steps,
    min_measure_s: Annotated[float, typer.Option(help="Seconds measured at least")] = _DEFAULT.min_measure_s,
    startup_minutes: Annotated[
        float, typer.Option(help="Boot + install + load before the first step")
    ] = _DEFAULT.startup_minutes,
    confidence: ConfidenceOpt = None,
    step_time_cv: Annotated[
        float, typer.Option(help="Step-to-step variation of step time (GUESS)")
    ] = _DEFAULT.step_time_cv,
    reading_precision: Annotated[
        float, typer.Option(help="Relative margin the mean step is pinned to")
    ] = _DEFAULT.reading_precision,
    reading_level: Annotated[
        float, typer.Option(help="Confidence level of that margin")
    ] = _DEFAULT.reading_level,
) -> None:
    """Which GPU types still contend (their plans' cost bands overlap), the short on-demand run
    that measures each (steps, minutes, offering, cost) and the `ccopt calibrate` line to feed
    the reading back, after which the plan's band narrows."""
    with user_errors():
        api.check_number(warmup_steps, "--warmup-steps", ge=0, le=10**6)
        api.check_number(min_steps, "--min-steps", gt=0, le=10**6)
        api.check_number(min_measure_s, "--min-measure-s", ge=0, le=10**6)
        api.check_number(startup_minutes, "--startup-minutes", ge=0, le=10**4)
        api.check_number(step_time_cv, "--step-time-cv", ge=0, le=10)
        api.check_number(reading_precision, "--reading-precision", gt=0, le=1)
        api.check_number(reading_level, "--reading-level", gt=0, lt=1)
        rule = api.SizingRule(
            warmup_steps,
            min_steps,
            min_measure_s,
            startup_minutes,
            step_time_cv,
            reading_precision,
            reading_level,
        )
        data = api.sizing(
            job, prices=prices, offline=offline_choice(offline), rule=rule, confidence=confidence
        )
    answer(data, json_out, _render)


def _render(data: dict) -> None:
    c = console()
    if data["status"] == "infeasible":
        sys.stderr.write("no plan meets the constraints: nothing to size (see `ccopt plan`)\n")
        return
    runs = data["runs"]
    words = {
        "contending": f"{len(runs)} GPU types still contend (their P10-P90 cost bands "
        f"overlap {data['best_gpu']}'s, or a cheaper plan of theirs could hold once measured)",
        "settled": f"settled: {data['best_gpu']} wins even at its P90 against every other "
        "type's P10; a reading only narrows its own band",
    }
    c.print(
        f"[b]{data['job']}[/b] — {words[data['status']]}; sizing runs {money(data['total_cost_usd'])} in all"
    )
    table = Table(title="Sizing runs (hourly-billed, fewest instances; warm-up excluded from the reading)")
    right = ("steps", "minutes", "cost", "holds if ≤", "P", "exp. saving")
    for col in ("gpu", "plan P10-P90", "run on", "layout", *right):
        table.add_column(col, justify="right" if col in right else "left")
    for r in runs:
        st = r.get("settles")
        table.add_row(
            r["gpu"],
            f"{money(r['plan_cost_p10_usd'])}-{money(r['plan_cost_p90_usd'])}",
            f"{r['instances']}× {r['instance']} ({r['provider']})",
            layout_words(r["layout"], short=True),
            f"{r['warmup_steps']}+{r['measured_steps']}",
            f"{r['minutes']:.0f}",
            money(r["cost_usd"]),
            f"{st['threshold_multiplier']:.2f}×" if st else "-",
            f"{st['p_holds']:.0%}" if st else "-",
            _signed(st["expected_saving_usd"]) if st else "-",
        )
    c.print(table)
    c.print(
        "  ranked by expected saving: P(holds) = the type's band (split log-normal) at m*, the "
        "measured/predicted step at which its cheaper plan holds after calibration; expected "
        "saving = P × saving − the run's cost",
        soft_wrap=True,
    )
    for r in runs:
        if r.get("settles"):
            c.print(f"  {r['gpu']}: {_settle_words(r['settles'])}", soft_wrap=True)
    for r in runs:
        c.print(f"  then: {r['command']}", soft_wrap=True)
    for s in data["settled"]:
        c.print(f"  [dim]out: {s['gpu']} — {s['reason']}[/dim]")


def _signed(usd: float) -> str:
    """ "$1,997", or "-$47.55" for a reading that costs more than it is expected to save."""
    return money(usd) if usd >= 0 else f"-{money(-usd)}"


def _settle_words(st: dict) -> str:
    t = st["target"]
    net = "; the network stays modelled (a one-node reading is compute)" if st["network_matters"] else ""
    return (
        f"{t['gpus']}× {t['gpu']} ({t['provider']} {t['instance']}, {t['pricing']}) holds if a step "
        f"takes ≤ {st['threshold_multiplier']:.2f}× the prediction; if it holds, its median cost is "
        f"{money(t['cost_if_holds_usd'])}, {money(st['saving_usd'])} less than the plan{net}"
    )


def register(app: typer.Typer) -> None:
    app.command("sizing")(sizing)
