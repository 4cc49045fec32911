"""The measurement that settles the plan in the report (issue 45): the plan's `sizing_run`
block — which run, how long, what it costs, the step at or below which the cheaper plan holds,
how likely that is and the expected saving — as a section with the block's own arithmetic."""

from __future__ import annotations

from typing import Any

from optimizer.report.html.page import Section, Table, layout_words, money, num

__all__ = ["sizing_run_section"]


def _run_words(s: dict[str, Any]) -> str:
    return (
        f"{s['instances']}× {s['instance']} ({s['provider']}, {s['gpus']}× {s['gpu']}, {s['pricing']}); "
        + layout_words(s["layout"], checkpointing=False)
    )


def _target_words(t: dict[str, Any]) -> str:
    return f"{t['gpus']}× {t['gpu']} ({t['provider']} {t['instance']}, {t['pricing']})"


def sizing_run_section(result: dict[str, Any]) -> Section | None:
    """The plan's sizing run (None when the plan's choice does not hang on a band)."""
    s = result.get("sizing_run")
    if not s:
        return None
    t = s["target"]
    steps = s["warmup_steps"] + s["measured_steps"]
    pct = f"±{s['reading_precision']:.0%} at {s['reading_level']:.0%}"
    cv = f"{s['step_time_cv']:.0%}"
    rows = (
        ("run on", _run_words(s), "hourly-billed, the fewest instances of the offering or GPU type"),
        (
            "steps",
            f"{s['warmup_steps']} + {s['measured_steps']}",
            f"warm-up, then n = ⌈(z·CV/E)²⌉ pins the mean step to {pct} (CV {cv}, a guess)",
        ),
        ("predicted step", f"{num(s['step_time_s'], 3)} s", "the model's step on the run's layout"),
        ("minutes", num(s["minutes"], 1), f"start-up + {steps} steps × the predicted step"),
        ("cost", money(s["cost_usd"]), "instances × $/h × minutes ÷ 60"),
        (
            "holds if a step takes",
            f"≤ {s['threshold_multiplier']:.3f}× the prediction",
            f"then {_target_words(t)} meets the job at P{s['confidence'] * 100:.0f} and costs less",
        ),
        ("P(holds)", f"{s['p_holds']:.0%}", "its band (split log-normal) at that multiplier"),
        (
            "cost if it holds",
            money(t["cost_if_holds_usd"]),
            f"{money(t['cost_usd'])} at P{s['confidence'] * 100:.0f} before the reading",
        ),
        ("saving", money(s["saving_usd"]), "the plan's cost − the cost if it holds"),
        ("expected saving", money(s["expected_saving_usd"]), "P(holds) × saving − the run's cost"),
    )
    network = (
        "the target spans more instances than the run: its network is not read"
        if s["network_matters"]
        else "the target is the run's instance count: the reading covers its compute and network"
    )
    return Section(
        "sizing-run",
        "The measurement that settles the plan",
        lead=(
            f"A {num(s['minutes'], 0)}-minute run for {money(s['cost_usd'])} decides whether "
            f"{_target_words(t)} can replace the plan; feed its log back with "
            "`ccopt calibrate --from-log` (`ccopt sizing` ranks every contender)."
        ),
        tables=[Table("The sizing run", ("", "value", "how"), rows, numeric=(1,))],
        notes=[network],
    )
