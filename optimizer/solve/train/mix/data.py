"""The data of a mixed cluster: instance types in one place with the pricing rows a mix may
combine (held reservations included), and the fastest step of one GPU type in a
data-parallel mix at a given number of samples per GPU.

A mix is planned per *type group* (one instance type in one provider region, or one owned box
type) and per *pair* of such groups that share a fabric (the same provider region, or the
owned site). Everything here is Python: the CP-SAT model (solve/train/mix/model.py) only reads
integer tables built from the one step-time and memory model (model/step_time.py,
model/memory.py), as every planner of this package does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from optimizer.errors import ConfigError
from optimizer.model.bands import step_band
from optimizer.model.cluster import Cluster, StepTime
from optimizer.model.memory import memory_model_for
from optimizer.model.setup import CHECKPOINTING, Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_model import StepModel, step_model_for
from optimizer.model.step_time import training_step_time
from optimizer.pricing.names import catalog_rows_named
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import cloud_offering
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.train.search_space import Headroom, micro_batches_of

__all__ = [
    "MIX_MAX_INSTANCES",
    "PriceRow",
    "TypeGroup",
    "MixShape",
    "held_offerings",
    "type_groups",
    "type_step",
    "fastest_at",
    "mix_band_factor",
    "hourly_usd",
    "pareto_useful",
]

#: search limit: instances of one type in a GPU-type mix when nothing caps it (GUESS: a mix is
#: worth planning where a cap binds; past 16 instances of the uncapped type a single-type plan
#: of that type is the usual answer). Overridable by the caller.
MIX_MAX_INSTANCES = 16


@dataclass(frozen=True)
class PriceRow:
    """One pricing row a mix may take instances from, and how many it may take."""

    offering: Offering
    cap: int
    held: bool = False  # a reservation the team already holds ([[constraints.reserved_held]])


@dataclass(frozen=True)
class TypeGroup:
    """One instance type in one place (provider region, or the owned site) and its rows."""

    provider: str
    instance: str
    region: str
    rows: tuple[PriceRow, ...]

    @property
    def first(self) -> Offering:
        return self.rows[0].offering

    @property
    def fabric(self) -> str:
        """Where instances can join one data-parallel job over a cluster network."""
        return "the owned site" if self.first.kind == "owned" else f"{self.provider} {self.region}"

    @property
    def label(self) -> str:
        return f"{self.first.gpu_id} ({self.provider} {self.instance})"

    @property
    def cap(self) -> int | None:
        """Instances obtainable over all rows (None: a row without a limit)."""
        caps = [r.cap for r in self.rows]
        return None if any(c <= 0 for c in caps) else sum(caps)


def held_offerings(
    rows: Sequence[OfferingRow] | None,
    held: Sequence[Any],
    data_of: dict[tuple[str, str, str], Any],
    allowed_gpus: frozenset[str] | None = None,
    unused: list[str] | None = None,
) -> list[PriceRow]:
    """The `[[constraints.reserved_held]]` entries as pricing rows: the term's catalog row
    billed per hour used (as `reservation_prepaid`), capped at the count held; `data_of` gives
    the job's data charge per (provider, instance, region). An entry of a GPU type outside
    `allowed_gpus` (the job's gpu_types) is left out, with a line in `unused` saying so.

    Raises:
        ConfigError: an unknown provider or instance (the field, the closest names), a region
            the catalog does not list for it, or several regions and none given.
    """
    out: list[PriceRow] = []
    for i, h in enumerate(held):
        field_ = f"constraints.reserved_held[{i}]"
        if rows is None:
            raise ConfigError(
                f"{field_}: a held reservation needs the cloud catalog (constraints.cloud = true)"
            )
        named = catalog_rows_named(rows, h.provider, h.instance, f"{field_}.provider", f"{field_}.instance")
        terms = [r for r in named if r.pricing_model == h.pricing]
        regions = sorted({r.region for r in terms})
        if h.region is not None:
            terms = [r for r in terms if r.region.lower() == h.region.lower()]
        if not terms or (h.region is None and len(regions) > 1):
            where = "several regions" if regions and h.region is None else f"no {h.pricing} row there"
            raise ConfigError(
                f"{field_}.region: {h.instance} has {where}; allowed: {', '.join(regions) or 'none'}"
            )
        row = terms[0]
        if allowed_gpus is not None and row.gpu_id not in allowed_gpus:
            if unused is not None:  # said, never dropped without a word
                unused.append(
                    f"{field_} ({h.count}× {row.instance_type}, {row.gpu_id}) is not used: "
                    f"constraints.gpu_types allows {', '.join(sorted(allowed_gpus))}"
                )
            continue
        off = cloud_offering(
            row,
            key_prefix="held:",
            reservation_prepaid=True,
            usd_per_hour=h.usd_per_hour,
            max_instances=h.count,
        )
        data = data_of.get((row.provider, row.instance_type, row.region))
        if data is not None:
            off = _with_data(off, data)
        out.append(PriceRow(off, h.count, held=True))
    return out


def _with_data(off: Offering, data: Any) -> Offering:
    return replace(off, data=data)


def type_groups(offerings: Sequence[Offering], held: Sequence[PriceRow]) -> tuple[list[TypeGroup], list[str]]:
    """The offerings a mix may use, grouped per instance type and place, and why others are out.

    Out of a mix: a reserved term billed in full (its commitment is one plan's own choice), an
    offering with a minimum term, billing increment, capacity block or minimum node count,
    boxes whose fixed costs are charged per job (buy, owned with charge_capital: not linear in
    hours)."""
    groups: dict[tuple[str, str, str], list[PriceRow]] = {}
    left_out: list[str] = []
    for off in offerings:
        if off.commitment_hours:
            left_out.append(f"{off.provider} {off.instance} {off.pricing}: a full reserved term is not mixed")
            continue
        if off.terms.any or off.terms.min_nodes > 1:  # issue 42: billed by its own terms
            left_out.append(
                f"{off.provider} {off.instance} {off.pricing}: a term ({off.terms.describe()}) is not mixed"
            )
            continue
        if off.kind not in ("cloud", "owned") or off.capital_usd_per_instance > 0:
            left_out.append(f"{off.gpu_id} {off.kind} boxes: a per-job capital charge is not mixed")
            continue
        groups.setdefault((off.provider, off.instance, off.region), []).append(
            PriceRow(off, off.max_instances or 0)
        )
    for row in held:
        o = row.offering
        groups.setdefault((o.provider, o.instance, o.region), []).insert(0, row)
    out = [TypeGroup(k[0], k[1], k[2], tuple(v)) for k, v in sorted(groups.items())]
    return out, sorted(set(left_out))


def mix_band_factor(
    steps: Sequence[tuple[Any, StepTime]], setup: TrainingSetup, a: PerfAssumptions, confidence: float | None
) -> float:
    """The step-time multiplier of a mix at `confidence`: the widest of its types' bands, each
    the band the planner gives that type's step (model/bands.step_band: a profile's own, the
    calibrated one, else the GPU generation's). A mixed step waits for its slowest type, so its
    spread is taken as the widest one's (a conservative choice)."""
    if confidence is None:
        return 1.0
    return max(
        step_band(st, gpu, setup.precision, setup.stack, a).multiplier(confidence) for gpu, st in steps
    )


def type_step(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    off: Offering,
    nodes: int,
    slowest_gbps: float,
    a: PerfAssumptions,
    micro: tuple[float, float, float, float] | None = None,
) -> StepTime:
    """The step of one type's GPUs in a mix: the model's step time (model/step_time.py) of its
    micro-batches × accumulation, with the data-parallel all-reduce over all `layout.dp` GPUs of
    the mix on `nodes` instances joined by the slowest link of the mix."""
    cluster = Cluster(off.gpu, off.gpus_per_instance, nodes, slowest_gbps)
    return training_step_time(model, setup, layout, cluster, a, micro)


@dataclass(frozen=True)
class MixShape:
    """What a type's step in a mix depends on besides its samples per GPU: the ZeRO stage, all
    GPUs of the mix (ZeRO shards and the all-reduce ring span them), its instances and slowest
    link, the checkpointing modes allowed and the memory headroom."""

    zero: int
    gpus: int
    nodes: int
    slowest_gbps: float
    checkpointing: tuple[str, ...]
    headroom: Headroom


def fastest_at(
    model: ModelSpec,
    setup: TrainingSetup,
    off: Offering,
    shape: MixShape,
    samples: int,
    a: PerfAssumptions,
    memo: dict[tuple, Any],
) -> tuple[Layout, StepTime] | None:
    """The fastest way `off`'s GPUs process `samples` samples per step in a pure data-parallel
    mix of `shape`: a micro-batch m of the planner's ladder (search_space.micro_batches_of)
    dividing `samples`, accumulation samples/m, the least checkpointing that fits the usable
    memory (None: nothing fits). `memo` caches memory, micro-batch times and answers."""
    key = ("best", off.hardware_class, shape, samples)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    best: tuple[Layout, StepTime] | None = None
    for m, ckpt in _fits(model, setup, off, shape, a, memo):
        if samples % m:
            continue
        lay = Layout(
            dp=shape.gpus, zero_stage=shape.zero, checkpointing=ckpt, micro_batch=m, grad_accum=samples // m
        )
        mkey = ("micro", off.hardware_class, m, ckpt, shape.slowest_gbps)
        steps = _step_model(model, setup, off, a, memo)
        cluster = Cluster(off.gpu, off.gpus_per_instance, shape.nodes, shape.slowest_gbps)
        if mkey not in memo:
            memo[mkey] = steps.microbatch_times_s(lay, cluster)
        step = steps.step_time(lay, cluster, memo[mkey])
        if best is None or step.time_s < best[1].time_s:
            best = (lay, step)
    memo[key] = best
    return best


def _step_model(
    model: ModelSpec, setup: TrainingSetup, off: Offering, a: PerfAssumptions, memo: dict[tuple, Any]
) -> StepModel:
    """The step model of `off`'s GPU type for this job, built once per type (kept in `memo`)."""
    key = ("step model", off.gpu.gpu_id)
    if key not in memo:
        memo[key] = step_model_for(model, setup, off.gpu, a)
    found: StepModel = memo[key]
    return found


def _fits(
    model: ModelSpec,
    setup: TrainingSetup,
    off: Offering,
    shape: MixShape,
    a: PerfAssumptions,
    memo: dict[tuple, Any],
) -> list[tuple[int, str]]:
    """(micro-batch, least checkpointing that fits) of `off`'s GPU in `shape`, smallest first."""
    key = ("fits", off.gpu.memory_gib, shape.zero, shape.gpus, shape.checkpointing, shape.headroom)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    usable = shape.headroom.usable_gib(off.gpu.memory_gib)
    memory = memo.get(("memory model",))
    if memory is None:  # one memory model per job (model × setup × assumptions), built once
        memory = memo[("memory model",)] = memory_model_for(model, setup, a)
    ordered = [c for c in CHECKPOINTING if c in shape.checkpointing]
    fits: list[tuple[int, str]] = []
    for m in sorted(micro_batches_of(model)):
        lays = [Layout(dp=shape.gpus, zero_stage=shape.zero, checkpointing=c, micro_batch=m) for c in ordered]
        ckpt = next((x.checkpointing for x in lays if memory.memory(x).device <= usable), None)
        if ckpt is None:
            break  # a larger micro-batch needs more memory still
        fits.append((m, ckpt))
    memo[key] = fits
    return fits


def hourly_usd(off: Offering) -> float:
    """USD per instance-hour a mix pays (rented price or power, + hourly capital share)."""
    return off.usd_per_hour + off.capital_usd_per_instance_hour


def _shape(off: Offering) -> Offering:
    """The offering without what may differ between two places of one instance type: the
    place, the price and its labels, the cap (a mix's step, memory and network read none)."""
    return replace(
        off,
        key="",
        region="",
        usd_per_hour=0.0,
        capital_usd_per_instance_hour=0.0,
        max_instances=None,
        flags=(),
        price_origin="",
        price_as_of=None,
        price_note="",
        catalog_usd_per_hour=None,
    )


def _group_shape(g: TypeGroup) -> str:
    return repr(tuple((_shape(r.offering), r.held, r.offering.pricing) for r in g.rows))


def _prices(groups: Sequence[TypeGroup]) -> tuple[float, ...]:
    """Per row of the groups: its hourly price, then minus its cap (no cap: −inf)."""
    rows = [r for g in groups for r in g.rows]
    return tuple(hourly_usd(r.offering) for r in rows) + tuple(-(r.cap or math.inf) for r in rows)


def pareto_useful(items: Sequence[tuple[TypeGroup, ...]]) -> list[tuple[TypeGroup, ...]]:
    """The groups (or pairs of groups) a mix search needs: of those of one shape (the same
    instance types, pricing models and data charges, places and prices aside), each that no
    other beats on every row — price ≤ and cap ≥ — where a tie keeps the first. A beaten one
    can only give a mix at least as dear (the same counts fit the other's caps at no higher
    price per row), so the cheapest mix is unchanged. Order kept; linear in items but for the
    comparisons within a shape's front (sorted by total price, usually one or a few)."""
    shapes: dict[str, list[int]] = {}
    for n, item in enumerate(items):
        shapes.setdefault("|".join(_group_shape(g) for g in item), []).append(n)
    keep: set[int] = set()
    for members in shapes.values():
        vectors = {n: _prices(items[n]) for n in members}
        front: list[int] = []
        for n in sorted(members, key=lambda n: (sum(vectors[n][: len(vectors[n]) // 2]), n)):
            v = vectors[n]
            if not any(all(a <= b for a, b in zip(vectors[f], v, strict=True)) for f in front):
                front.append(n)
        keep.update(front)
    return [item for n, item in enumerate(items) if n in keep]
