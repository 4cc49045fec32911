"""Pool options of an RL job: per offering and instance count, what the pool does in a step.

The phases are timed once per hardware class (GPU, GPUs per instance, fabric) and count;
offerings of a class share them and differ only in price. A pool can be the colocated pool
(every phase), a generation pool or a training pool; separate pools pair a generation option
with a training option (candidates.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optimizer.model.bands import quantile_multiplier
from optimizer.model.cluster import Cluster
from optimizer.model.rl.phases import Generation, generation_phase
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.rl.step import RlStep, TrainSide, colocated_step, train_side
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import Offering

__all__ = ["PoolOption", "Bands", "INSTANCE_COUNTS", "usable_gib", "pool_options"]

#: instance counts tried per offering (a pool of 1, 2, 4 or 8 instances)
INSTANCE_COUNTS = (1, 2, 4, 8)
#: device memory kept free per GPU: 5% + 1 GiB, the training planner's default headroom
#: (constraints.min_memory_headroom_fraction / _gib; GUESS)
HEADROOM_FRACTION = 0.05
HEADROOM_GIB = 1.0


def usable_gib(card_gib: float) -> float:
    """What a phase may use of a `card_gib` card."""
    return card_gib * (1.0 - HEADROOM_FRACTION) - HEADROOM_GIB


@dataclass(frozen=True)
class Bands:
    """Step-time multipliers at the job's confidence, per phase group: generation, and the
    training side (log-probs, updates). Both are the RL step band's quantile
    (RlAssumptions.step_band, fitted on published RL steps) until phases have bands of their own."""

    generation: float
    training: float
    #: the same at P50 (the planner's answer as a median, as training plans report it)
    generation_p50: float = 1.0
    training_p50: float = 1.0


@dataclass(frozen=True)
class PoolOption:
    """`instances` of `offering` as one pool, with what it can do in a step."""

    offering: Offering
    instances: int
    generation: Generation | None  # as a generation pool (None: no replica fits)
    train: TrainSide | None  # as a training pool (None: the update does not fit)
    colocated: RlStep | None  # as the only pool (None: some phase does not fit)
    bands: Bands

    @property
    def gpus(self) -> int:
        return self.offering.gpus_per_instance * self.instances

    @property
    def network_gbps(self) -> float:
        """Aggregate network of the pool: instances × Gbit/s per instance."""
        return self.instances * self.offering.inter_node_gbps

    @property
    def usd_per_hour(self) -> float:
        return self.offering.usd_per_hour_for(self.instances)


@dataclass(frozen=True)
class _Timed:
    generation: Generation | None
    train: TrainSide | None
    colocated: RlStep | None
    bands: Bands


def _time_class(
    model: ModelSpec, rl: RlSetup, cluster: Cluster, a: PerfAssumptions, rla: RlAssumptions, q: float
) -> _Timed:
    gpu = cluster.gpu
    budget = usable_gib(gpu.memory_gib)
    held = gpu.memory_gib - budget  # headroom the rollout engine leaves too
    gen = None
    if rl.generates:
        gen = generation_phase(model, rl, gpu, cluster.gpus, cluster.gpus_per_node, a, held, rla=rla)
    side = train_side(model, rl, cluster, a, budget, rla)
    both = colocated_step(model, rl, cluster, a, budget, rla)
    m, m50 = quantile_multiplier(rla.step_band, q), quantile_multiplier(rla.step_band, 0.5)
    return _Timed(gen, side, both, Bands(m, m, m50, m50))


def pool_options(
    model: ModelSpec,
    rl: RlSetup,
    offerings: Sequence[Offering],
    a: PerfAssumptions,
    rla: RlAssumptions,
    confidence: float,
    max_gpus: int,
) -> list[PoolOption]:
    """Every (offering, instance count) of at most `max_gpus` GPUs that can do some phase."""
    timed: dict[tuple[object, ...], _Timed] = {}
    out: list[PoolOption] = []
    for off in offerings:
        for n in INSTANCE_COUNTS:
            if n * off.gpus_per_instance > max_gpus or (
                off.max_instances is not None and n > off.max_instances
            ):
                continue
            key = (*off.hardware_class, n)
            t = timed.get(key)
            if t is None:
                t = timed[key] = _time_class(model, rl, off.cluster(n), a, rla, confidence)
            if t.generation is None and t.train is None and t.colocated is None:
                continue
            out.append(PoolOption(off, n, t.generation, t.train, t.colocated, t.bands))
    return out
