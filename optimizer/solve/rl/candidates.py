"""Candidates of the RL planner: a colocated pool, or a generation pool with a training pool,
each with its step time at the job's confidence, its hours and its cost.

Separate pairs are built from the options that no other option beats on price per hour,
phase time and network at once (a dominated option never gives a cheaper or faster pair,
billing per hour used); every surviving pair is priced exactly with pricing.cost_usd.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.rl.step import RlStep, separate_step
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import cost_usd
from optimizer.solve.rl.options import PoolOption

__all__ = ["RlCandidate", "step_at_confidence", "colocated_candidates", "separate_candidates", "pareto"]

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class RlCandidate:
    """One plan: its pools, its step (point and at confidence), whole-run hours and cost."""

    mode: str  # colocated | separate
    train_pool: PoolOption  # the colocated pool, or the training pool
    gen_pool: PoolOption | None
    step: RlStep
    step_s: float  # at the job's confidence
    hours: float
    cost_usd: float
    step_s_p50: float = 0.0  # at P50 (the bands' medians)

    @property
    def gpus(self) -> int:
        return self.train_pool.gpus + (self.gen_pool.gpus if self.gen_pool else 0)

    @property
    def label(self) -> str:
        def pool(p: PoolOption) -> str:
            return f"{p.instances}× {p.offering.key} ({p.gpus} {p.offering.gpu_id})"

        if self.gen_pool is None:
            return f"colocated {pool(self.train_pool)}"
        return f"generate {pool(self.gen_pool)} + train {pool(self.train_pool)}"


def step_at_confidence(step: RlStep, gen_band: float, train_band: float) -> float:
    """Step seconds with each phase at its band's quantile (the sync is network arithmetic,
    unbanded): generation × the serving band, log-probs and updates × the training band."""
    gen = step.generation_s * gen_band
    train = (step.logprob_s + step.update_s) * train_band
    if step.pipelined:
        return max(gen, train) + step.sync_s
    return gen + train + step.sync_s


def _priced(mode: str, train: PoolOption, gen: PoolOption | None, step: RlStep, rl_steps: int) -> RlCandidate:
    gen_bands = (gen or train).bands
    step_s = step_at_confidence(step, gen_bands.generation, train.bands.training)
    p50 = step_at_confidence(step, gen_bands.generation_p50, train.bands.training_p50)
    hours = rl_steps * step_s / SECONDS_PER_HOUR
    cost = cost_usd(train.offering, train.instances, hours).total_usd
    if gen is not None:
        cost += cost_usd(gen.offering, gen.instances, hours).total_usd
    return RlCandidate(mode, train, gen, step, step_s, hours, cost, p50)


def colocated_candidates(options: Sequence[PoolOption], rl_steps: int) -> list[RlCandidate]:
    """One candidate per option whose every phase fits on it."""
    return [_priced("colocated", o, None, o.colocated, rl_steps) for o in options if o.colocated is not None]


def pareto(options: Sequence[PoolOption], time_of: Callable[[PoolOption], float]) -> list[PoolOption]:
    """Options no other option beats on (USD per hour, time, −network) at once (ties: first)."""
    keyed = sorted(options, key=lambda o: (o.usd_per_hour, time_of(o), -o.network_gbps, o.offering.key))
    kept: list[PoolOption] = []
    for o in keyed:
        t = time_of(o)
        if any(time_of(k) <= t and k.network_gbps >= o.network_gbps for k in kept):
            continue
        kept.append(o)
    return kept


def separate_candidates(
    model: ModelSpec,
    rl: RlSetup,
    gen_options: Sequence[PoolOption],
    train_options: Sequence[PoolOption],
    rla: RlAssumptions,
    rl_steps: int,
) -> list[RlCandidate]:
    """Every pair of a non-dominated generation option and a non-dominated training option."""
    gens = pareto(
        [o for o in gen_options if o.generation is not None],
        lambda o: o.generation.time_s * o.bands.generation if o.generation else 0.0,
    )
    trains = pareto(
        [o for o in train_options if o.train is not None],
        lambda o: o.train.time_s * o.bands.training if o.train else 0.0,
    )
    out = []
    for g in gens:
        for t in trains:
            assert g.generation is not None and t.train is not None  # filtered above
            network = min(g.network_gbps, t.network_gbps)
            step = separate_step(model, rl, g.generation, t.train, network, rla)
            out.append(_priced("separate", t, g, step, rl_steps))
    return out
