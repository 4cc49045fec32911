"""The serving problem in integers: replica options as cents and replica-time per load unit.

Each bucket's load (after headroom) is cut into LOAD_UNITS integer units; a replica serving
bucket b at rate r_b spends 1/r_b replica-seconds per request, scaled to TIME_UNITS per
replica-second and rounded up (conservative). The brute-force tests build IntProblems directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from optimizer.errors import Status
from optimizer.inputs.jobs.serve import ServeConstraints
from optimizer.solve.cpsat.lexicographic import tie_ranks
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.cpsat.solver import SolveResult
from optimizer.solve.serve.options import ReplicaOption

__all__ = [
    "LOAD_UNITS",
    "TIME_UNITS",
    "IntOption",
    "IntProblem",
    "IntSolution",
    "problem_cost_cents",
    "build_problem",
    "instance_rps",
    "option_ranks",
]

#: each bucket's load (after headroom) is cut into this many integer units: 0.1% resolution
LOAD_UNITS = 1000
#: one replica-second per second in integer units; per-unit times are rounded up (conservative)
TIME_UNITS = 10**6


@dataclass(frozen=True)
class IntOption:
    """A replica option in integers: cost per instance, per-bucket replica-time per load unit."""

    cost_cents: int  # per instance and served hour
    replicas_per_instance: int
    time_per_unit: tuple[int | None, ...]  # None: cannot serve that bucket
    gpus_per_instance: int = 1
    group: str = ""  # options of one offering share its instance limit
    max_instances: int | None = None
    #: tie-break among plans of equal cost and GPUs: lower rank preferred (0 = no preference)
    rank: int = 0


@dataclass(frozen=True)
class IntProblem:
    """Integer data of the CP-SAT model."""

    options: tuple[IntOption, ...]
    load_units: tuple[int, ...]  # per bucket
    time_per_replica: int = TIME_UNITS
    spare: int = 0  # spare instances per deployment used (a failed box loses all its replicas)
    max_replicas: int | None = None

    def upper_bound(self, i: int) -> int:
        """Instances of option i beyond which it could carry every bucket it can serve alone."""
        o = self.options[i]
        pairs = zip(self.load_units, o.time_per_unit, strict=True)
        work = sum(u * t for u, t in pairs if t is not None and u)
        if work == 0:
            return 0
        replicas = math.ceil(work / self.time_per_replica)
        ub = math.ceil(replicas / o.replicas_per_instance) + self.spare  # spare instances
        if o.max_instances is not None:
            ub = min(ub, o.max_instances)
        if self.max_replicas is not None:
            ub = min(ub, self.max_replicas // o.replicas_per_instance)
        return max(ub, 0)


@dataclass(frozen=True)
class IntSolution:
    status: Status
    counts: tuple[int, ...]
    assignment: tuple[tuple[int, ...], ...]  # [option][bucket] load units
    cost_cents: int | None
    result: SolveResult | None


def problem_cost_cents(problem: IntProblem, counts: Sequence[int]) -> int:
    """Plain-Python objective of a count vector (for validation and brute force)."""
    return sum(o.cost_cents * n for o, n in zip(problem.options, counts, strict=True))


def instance_rps(option: ReplicaOption, shares: Sequence[float]) -> float:
    """Requests/s one instance of `option` carries at the request mix of the buckets it serves."""
    served = [
        (share, rate) for share, rate in zip(shares, option.rates, strict=True) if rate > 0 and share > 0
    ]
    busy = sum(share / rate for share, rate in served)  # replica-seconds per request of the mix
    return option.replicas_per_instance * sum(share for share, _ in served) / busy if busy else 0.0


def option_ranks(options: Sequence[ReplicaOption], shares: Sequence[float]) -> list[int]:
    """Rank of each option (1 = preferred) by the tie-break key: most requests/s per instance at
    the request mix (more headroom for the same price), then (offering key, tp, batch)."""
    return tie_ranks(options, lambda o: (-instance_rps(o, shares), *o.sort_key))


def build_problem(
    options: Sequence[ReplicaOption], load_rps: Sequence[float], constraints: ServeConstraints
) -> tuple[IntProblem, tuple[float, ...]]:
    """Integer problem of the options for per-bucket loads (req/s, before headroom).

    Returns the problem and the request rate of one load unit per bucket (req/s).
    """
    factor = 1.0 + constraints.min_capacity_headroom_fraction
    unit_rps = tuple(load * factor / LOAD_UNITS for load in load_rps)
    int_options = []
    ranks = option_ranks(options, load_rps)
    for opt, rank in zip(options, ranks, strict=True):
        times: list[int | None] = []
        for rate, unit in zip(opt.rates, unit_rps, strict=True):
            times.append(math.ceil(TIME_UNITS * unit / rate) if rate > 0 and unit > 0 else None)
        off = opt.offering
        int_options.append(
            IntOption(
                cost_cents=to_cents(opt.usd_per_instance_hour),
                replicas_per_instance=opt.replicas_per_instance,
                time_per_unit=tuple(times),
                gpus_per_instance=off.gpus_per_instance,
                group=off.key,
                max_instances=off.max_instances,
                rank=rank,
            )
        )
    loads = tuple(LOAD_UNITS if u > 0 else 0 for u in unit_rps)
    return IntProblem(
        tuple(int_options), loads, TIME_UNITS, constraints.spare_replicas, constraints.max_replicas
    ), unit_rps
