"""How much of each shared resource a solved batch uses over time (the report's usage
profiles), worked out once when the plan is validated (solve/batch/solve.py)."""

from __future__ import annotations

from optimizer.solve.batch.problem import BatchResult

__all__ = ["usage_profile", "usage_profiles"]


def usage_profile(result: BatchResult, key: str) -> list[list[float]]:
    """[[from_hour, to_hour, level], ...] of a resource, where the level changes."""
    res = result.problem.resources[key]
    spans = [
        (
            s.start_h or 0.0,
            s.slot_end_h or 0.0,
            res.demand(s.row.candidate.offering, s.row.candidate.instances),
        )
        for s in result.jobs
        if s.row is not None
    ]
    spans = [sp for sp in spans if sp[2]]
    times = sorted({t for a, b, _ in spans for t in (a, b)})
    out: list[list[float]] = []
    for a, b in zip(times, times[1:], strict=False):
        level = sum(d for s, e, d in spans if s <= a < e)
        if out and out[-1][2] == level and out[-1][1] == a:
            out[-1][1] = b
        elif level:
            out.append([round(a, 2), round(b, 2), level])
    return out


def usage_profiles(result: BatchResult) -> dict[str, list[list[float]]]:
    """The usage profile of every shared resource (empty lists when nothing is scheduled)."""
    return {key: usage_profile(result, key) if result.jobs else [] for key in result.problem.resources}
