"""Rent or buy in the JSON contract: the verdict block and the break-even rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: `ccopt plan` loads the comparison with boxes to compare
    from optimizer.solve.train.compare import BreakEven

__all__ = ["break_even_dict", "verdict_dict", "verdict_summary", "pct"]


def _r2(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _usd(value: float) -> str:
    return f"${value:,.2f}" if abs(value) < 1000 else f"${value:,.0f}"


def pct(share: float) -> str:
    """A utilisation as a percentage, with a decimal below 1% (0% would read as never used)."""
    return f"{share:.0%}" if share >= 0.01 or share == 0 else f"{share:.2%}"


def verdict_summary(v: dict[str, Any]) -> str:
    """The verdict in one sentence, from the contract's fields."""
    cheaper, dearer = ("owning", "renting") if v["verdict"] == "own" else ("renting", "owning")
    line = (
        f"{cheaper} is cheaper at {v['jobs_per_month']:.3g} jobs a month "
        f"({pct(v['utilisation'])} utilisation; {v['usage']}): {_usd(v['own_usd_per_job'])} a job owned "
        f"({_usd(v['own_capital_usd_per_job'])} capital and ops + {_usd(v['own_running_usd_per_job'])} "
        f"power) vs {_usd(v['rent_usd_per_job'])} rented; over {v['holding_months']:g} months "
        f"{_usd(v['own_usd_over_holding'])} owned vs {_usd(v['rent_usd_over_holding'])} rented"
    )
    if v["saturated"]:
        line += (
            f"; the stated workload needs more than the boxes can run back to back: they do "
            f"{v['jobs_per_month']:.3g} jobs a month, the rest would be rented"
        )
    if v["break_even_months"] is not None:
        line += (
            f"; break-even after {v['break_even_jobs']:,.1f} jobs ({v['break_even_months']:,.1f} months "
            f"at {v['break_even_jobs_per_month']:.3g} jobs a month)"
        )
    flip = v["flip_utilisation"]
    if flip is None:
        line += f"; {dearer} never wins: a job's power costs more than renting it"
    elif flip > 1:
        line += f"; owning would need {flip:.0%} utilisation, more than the boxes can run"
    else:
        line += f"; the answer flips at {flip:.0%} utilisation ({v['flip_jobs_per_month']:.3g} jobs a month)"
    return line


def verdict_dict(be: BreakEven) -> dict[str, Any] | None:
    """The `rent_or_buy` block of plan, compare and the report (pricing/verdict.rent_or_buy)."""
    v = be.verdict
    if v is None:
        return None
    flip_jobs = None if v.flip_utilisation is None else v.flip_utilisation * v.jobs_per_month / v.utilisation
    out: dict[str, Any] = {
        "verdict": v.choice,
        "usage": v.usage,
        "utilisation": round(v.utilisation, 4),
        "jobs_per_month": round(v.jobs_per_month, 4),
        "holding_months": v.holding_months,
        "rent_plan": be.cloud_plan or "",
        "rent_gpu": be.gpu or "",
        "rent_hours": round(v.rent_hours, 2),
        "rent_usd_per_job": round(v.rent_usd_per_job, 2),
        "rent_usd_per_month": round(v.rent_usd_per_month, 2),
        "rent_usd_over_holding": round(v.rent_usd_holding, 2),
        "own_plan": be.own_plan,
        "own_gpu": be.own_gpu,
        "own_hours": round(v.own_hours, 2),
        "own_usd_per_job": round(v.own_usd_per_job, 2),
        "own_capital_usd_per_job": round(v.own_fixed_usd_per_job, 2),
        "own_running_usd_per_job": round(v.own_power_usd_per_job, 2),
        "own_usd_per_month": round(v.own_usd_per_month, 2),
        "own_usd_over_holding": round(v.own_usd_holding, 2),
        "net_capital_usd": round(v.net_capital_usd, 2),
        "break_even_jobs": _r2(v.break_even_jobs),
        "break_even_months": _r2(v.break_even_months),
        "break_even_jobs_per_month": round(v.break_even_jobs_per_month, 4),
        "flip_utilisation": None if v.flip_utilisation is None else round(v.flip_utilisation, 4),
        "flip_jobs_per_month": _r2(flip_jobs),
        "saturated": v.saturated,
        "by_utilisation": [
            {
                "utilisation": row.utilisation,
                "jobs_per_month": round(row.jobs_per_month, 3),
                "rent_usd_per_job": round(row.rent_usd_per_job, 2),
                "own_usd_per_job": round(row.own_usd_per_job, 2),
                "rent_usd_per_month": round(row.rent_usd_per_month, 2),
                "own_usd_per_month": round(row.own_usd_per_month, 2),
                "cheaper": row.choice,
            }
            for row in v.table
        ],
    }
    out["summary"] = verdict_summary(out)
    return out


def break_even_dict(be: BreakEven) -> dict[str, Any]:
    """One row of `break_even` / `break_even_per_gpu`."""
    return {
        "gpu": be.gpu,
        "cloud_plan": be.cloud_plan,
        "net_capital_usd": round(be.net_capital_usd, 2),
        "power_usd_per_job": round(be.power_usd_per_job, 2),
        "cloud_usd_per_job": round(be.cloud_usd_per_job, 2),
        "jobs_to_break_even": _r2(be.jobs),
        "months_to_break_even": _r2(be.months),
        "months_continuous": _r2(be.months_continuous),
        "jobs_per_month": None if be.jobs_per_month is None else round(be.jobs_per_month, 4),
        "verdict": verdict_dict(be),
        "note": be.note,
    }
