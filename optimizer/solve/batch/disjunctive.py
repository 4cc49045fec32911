"""Disjunctive-window cuts for the Benders master (benders.py): rows that cannot overlap.

On a resource of capacity C, two rows whose demands sum past C never run at the same time.
The rows with demand > C/2 are pairwise so (a clique); so is that clique with one row k of
demand > C − (the clique's least demand). Within a window [a, b), the members of such a
clique run one at a time, so the parts of them that must fall inside the window whatever
their start (the mandatory parts of model.energy_windows) add up to at most b − a:

    Σ_{i in clique} mandatory_i × x_i + mandatory_k × x_k ≤ b − a

This holds in every schedule (Baptiste, Le Pape, Nuijten 2001, disjunctive energetic
reasoning) and is linear in the choice literals. It catches what the energy bound of the
window misses: on 2 boxes, two jobs taking both boxes for 45 steps and a one-box job that
must run 55 of the same 96 steps need 100 steps of the window, though their energy (145 box-
steps) is within its 192. The cuts are separated: only those the master's current choice
violates are added (no CP-SAT check needed to find them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optimizer.solve.batch.problem import BatchProblem

__all__ = ["Cover", "WindowCut", "covers_of", "mandatory", "violated_windows"]


@dataclass(frozen=True)
class Cover:
    """A usable row on one capacity resource: its job, row, demand and time window."""

    job: int
    row: int
    demand: int
    release: int
    due: int
    duration: int


@dataclass(frozen=True)
class WindowCut:
    """Σ coef × x[job, row] ≤ rhs over (job, row, coef) terms."""

    terms: tuple[tuple[int, int, int], ...]
    rhs: int


def mandatory(c: Cover, a: int, b: int) -> int:
    """Steps of [a, b) the row occupies whatever its start in [release, due − duration]."""
    return max(0, min(c.duration, b - a, c.release + c.duration - a, b - c.due + c.duration))


def covers_of(problem: BatchProblem, rows: Sequence[Sequence[int]]) -> dict[str, list[Cover]]:
    """Per fixed-capacity resource with rows that cannot overlap: its usable rows."""
    out: dict[str, list[Cover]] = {}
    for j, job in enumerate(problem.jobs):
        for i in rows[j]:
            for key, demand in job.rows[i].usage:
                out.setdefault(key, []).append(
                    Cover(j, i, demand, *job.bounds(job.rows[i]), job.rows[i].duration)
                )
    kept = {}
    for key, covers in out.items():
        res = problem.resources[key]
        if res.kind != "reservation" and sum(2 * c.demand > res.capacity for c in covers) > 0:
            kept[key] = covers
    return kept


def _windows(covers: Sequence[Cover]) -> list[tuple[int, int]]:
    releases = sorted({c.release for c in covers})
    dues = sorted({c.due for c in covers})
    return [(a, b) for a in releases for b in dues if b > a]


def _cut(covers: Sequence[Cover], cap: int, a: int, b: int, small: Cover | None) -> WindowCut:
    """The clique inequality of window [a, b) around `small` (None: the big rows alone)."""
    least = 0 if small is None else cap - small.demand
    terms = [
        (c.job, c.row, mandatory(c, a, b))
        for c in covers
        if 2 * c.demand > cap and c.demand > least and mandatory(c, a, b) > 0
    ]
    if small is not None:
        terms.append((small.job, small.row, mandatory(small, a, b)))
    return WindowCut(tuple(terms), b - a)


def violated_windows(
    problem: BatchProblem, covers: dict[str, list[Cover]], chosen: Sequence[int | None], most: int
) -> list[WindowCut]:
    """Up to `most` clique inequalities the choice `chosen` (row per job) violates, the most
    violated first, at most one per resource and window."""
    found: list[tuple[int, WindowCut]] = []
    for key, all_covers in covers.items():
        cap = problem.resources[key].capacity
        picked = [c for c in all_covers if chosen[c.job] == c.row]
        if sum(2 * c.demand > cap for c in picked) == 0:
            continue
        for a, b in _windows(all_covers):
            inside = [(c, mandatory(c, a, b)) for c in picked]
            inside = [(c, m) for c, m in inside if m > 0]
            best: tuple[int, Cover | None] | None = None
            for small in [None] + [c for c, _ in inside if 2 * c.demand <= cap]:
                floor = 0 if small is None else cap - small.demand
                load = sum(m for c, m in inside if 2 * c.demand > cap and c.demand > floor)
                load += 0 if small is None else mandatory(small, a, b)
                if load > b - a and (best is None or load > best[0]):
                    best = (load, small)
            if best is not None:
                found.append((best[0] - (b - a), _cut(all_covers, cap, a, b, best[1])))
    found.sort(key=lambda f: -f[0])
    return [cut for _, cut in found[:most]]
