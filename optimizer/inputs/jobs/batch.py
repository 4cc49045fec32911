"""Batch files (TOML): shared `[capacity]` (quotas, owned boxes, reservations, blocks), `[[job]]`s.

A batch file is many single jobs (the `ccopt plan` job model, `optimizer.inputs.jobs.train.Job`) plus what
they share over a planning horizon::

    [capacity]
    horizon_days = 30
    quota_only = true              # rent only where a [[capacity.quota]] says we may
    [[capacity.quota]]             # max GPUs rented at the same time
    provider = "lambda"
    gpu = "H100-80GB"
    max_gpus = 16
    [[capacity.owned]]             # boxes we already have (HardwareSpec fields override)
    gpu = "RTX4090"
    num_boxes = 1
    gpus_per_box = 8
    [[capacity.reservation]]       # the solver picks how many instances to reserve (0..max)
    provider = "aws"
    instance = "p5.48xlarge"
    pricing = "reserved_1y"
    max_instances = 2
    [[capacity.block]]             # a capacity block: the solver buys 0..instances, paid in full
    provider = "aws"
    instance = "p5.48xlarge"
    instances = 2
    start_day = 3
    length_days = 7

    [defaults.constraints]         # merged under every [[job]] (the job's own keys win)
    gpu_types = ["H100-80GB", "RTX4090"]

    [[job]]
    name = "ft-support-bot"
    release_days = 2               # may not start earlier
    droppable = true               # may be left out, at a penalty of value_usd
    value_usd = 500
    [job.model]
    ...
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from optimizer.errors import ConfigError
from optimizer.inputs.aliases import rename_old_fields
from optimizer.inputs.jobs.common import MAX_DAYS, MAX_USD, StrictModel, entries_old_names
from optimizer.inputs.jobs.pricing import PriceOverlay
from optimizer.inputs.jobs.strict import GpuName
from optimizer.inputs.jobs.train import HardwareEntry, Job, format_validation_error
from optimizer.inputs.toml_file import read_toml
from optimizer.units import HOURS_PER_DAY

__all__ = [
    "BatchJob",
    "Quota",
    "Reservation",
    "Block",
    "Capacity",
    "BatchFile",
    "batch_from_dict",
    "load_batch",
]


class BatchJob(Job):
    """One `[[job]]`: a single job (optimizer.inputs.jobs.train.Job) plus its place in the batch."""

    release_days: float | None = Field(default=None, ge=0, le=MAX_DAYS, description="earliest start, days")
    release_hours: float | None = Field(
        default=None, ge=0, le=MAX_DAYS * 24, description="earliest start, hours"
    )
    priority: int = Field(
        default=0, ge=0, le=100, description="among plans of equal cost, finish higher priority first"
    )
    value_usd: float | None = Field(
        default=None, gt=0, le=MAX_USD, description="what leaving the job out costs (droppable)"
    )
    droppable: bool = Field(default=False, description="may be left out at a penalty of value_usd")

    @model_validator(mode="after")
    def _check_batch(self) -> BatchJob:
        if self.release_days is not None and self.release_hours is not None:
            raise ValueError("give release_days or release_hours, not both")
        if self.droppable and self.value_usd is None:
            raise ValueError("droppable = true needs value_usd (the penalty of leaving it out)")
        if self.pricing is not None:
            raise ValueError(
                "pricing is shared by the jobs of a batch (one catalog); put [pricing] at the "
                "top of the batch file"
            )
        if self.constraints.reserved_held:
            raise ValueError(
                "constraints.reserved_held is for a single job's plan; in a batch put reserved "
                "instances in [[capacity.reservation]] (shared by all jobs)"
            )
        if self.hardware.owned or self.hardware.buy:
            raise ValueError(
                "hardware.owned/buy are per job; in a batch put owned boxes in "
                "[[capacity.owned]] (shared by all jobs)"
            )
        return self

    @property
    def release_h(self) -> float:
        """Earliest start in hours from the start of the horizon."""
        if self.release_hours is not None:
            return self.release_hours
        return (self.release_days or 0.0) * HOURS_PER_DAY


class Quota(StrictModel):
    """`[[capacity.quota]]`: at most `max_gpus` GPUs of `gpu` rented at once from `provider`
    (in `region` if given). Applies to on-demand and spot rows, not to sized reservations."""

    provider: str = Field(description="provider of the quota (aws, gcp, lambda, ...)")
    gpu: GpuName = Field(description="GPU type the quota is for (id or alias, `ccopt gpus`)")
    max_gpus: int = Field(
        ge=0,
        le=10**6,
        description="at most this many GPUs of `gpu` rented "
        "from `provider` at the same time (on-demand and spot, all jobs together)",
    )
    region: str | None = Field(
        default=None, description="region the quota applies to (default: every region)"
    )


class Reservation(StrictModel):
    """`[[capacity.reservation]]`: reserve R ∈ [0, max_instances] instances for a term.

    The commitment R × usd_per_hour × billed hours is paid whether used or not; jobs on it
    cost nothing more. `bill = "term"` charges every hour of the term (the catalog's
    commitment_hours); `"horizon"` charges only the planning horizon (the rest of the term is
    assumed to be used by other work — a user choice, stated in the output).
    """

    provider: str = Field(description="provider to reserve at (aws, gcp, azure, ...)")
    instance: str | None = Field(default=None, description="instance type to reserve (a catalog row; or gpu)")
    gpu: GpuName | None = Field(
        default=None, description="GPU type to reserve: any instance of it at the provider (or instance)"
    )
    region: str | None = Field(
        default=None, description="region of the reservation (default: any region of the catalog)"
    )
    pricing: Literal["reserved_1y", "reserved_3y"] = Field(
        default="reserved_1y",
        description="term of the reservation: reserved_1y | reserved_3y (its catalog price)",
    )
    max_instances: int = Field(
        gt=0,
        le=10**5,
        description="at most this many instances reserved; the solver picks how many (0 to max_instances)",
    )
    bill: Literal["term", "horizon"] = Field(
        default="term",
        description="term: the commitment of the whole term (1 or 3 years) is "
        "charged to the batch | horizon: only the planning horizon's share is charged (the rest "
        "of the term assumed used by other work)",
    )

    @model_validator(mode="after")
    def _check(self) -> Reservation:
        self.require_one_of("instance", "gpu")
        return self


class Block(StrictModel):
    """`[[capacity.block]]`: a capacity block (a catalog `capacity_block` row) the jobs share.

    Up to `instances` instances from day `start_day` for `length_days` whole days; the solver
    buys B ∈ [0, instances] of them, each paid in full (usd_per_hour × length hours) whether
    used or not. Jobs run on it only inside [start, start + length], together on at most B
    instances at any time: one after another or side by side.
    """

    provider: str = Field(description="provider selling the block (aws, ...)")
    instance: str = Field(description="instance type of the block (a catalog capacity_block row)")
    region: str | None = Field(default=None, description="region of the block (default: the cheapest)")
    instances: int = Field(
        gt=0, le=10**4, description="at most this many instances in the block; the solver picks how many"
    )
    start_day: int = Field(
        ge=0, le=MAX_DAYS, description="the block starts this many whole days into the horizon"
    )
    length_days: int = Field(
        gt=0, le=MAX_DAYS, description="whole days of the block (a length the row sells)"
    )


class Capacity(StrictModel):
    """`[capacity]`: the planning horizon and everything the jobs share."""

    horizon_days: float | None = Field(
        default=None, gt=0, le=MAX_DAYS, description="planning horizon, days (or horizon_hours)"
    )
    horizon_hours: float | None = Field(
        default=None, gt=0, le=MAX_DAYS * 24, description="planning horizon, hours"
    )
    quota_only: bool = Field(default=False, description="rent only (provider, GPU) pairs that have a quota")
    quota: tuple[Quota, ...] = Field(
        default=(), description="`[[capacity.quota]]`: max GPUs of a type rented at once from a provider"
    )
    owned: tuple[HardwareEntry, ...] = Field(
        default=(), description="`[[capacity.owned]]`: boxes we have, shared by all jobs"
    )
    reservation: tuple[Reservation, ...] = Field(
        default=(), description="`[[capacity.reservation]]`: reserved instances the solver may size"
    )
    block: tuple[Block, ...] = Field(
        default=(),
        description="`[[capacity.block]]`: capacity blocks (a start day and whole days) jobs share",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: object) -> Any:
        return entries_old_names(data, {"owned": "capacity.owned"})

    @model_validator(mode="after")
    def _check(self) -> Capacity:
        self.require_one_of("horizon_days", "horizon_hours")
        for i, entry in enumerate(self.owned):
            if entry.num_boxes is None:
                raise ValueError(f"owned[{i}] ({entry.gpu}): give num_boxes (how many we have)")
            entry.check_owned(i)
        return self

    @property
    def horizon_h(self) -> float:
        """Planning horizon in hours."""
        return (
            self.horizon_hours
            if self.horizon_hours is not None
            else float(self.horizon_days or 0.0) * HOURS_PER_DAY
        )


class BatchFile(StrictModel):
    """A validated batch: capacity and jobs (defaults already merged into each job)."""

    name: str = Field(
        default="batch", description="a label for the batch in outputs (default: the file name without .toml)"
    )
    capacity: Capacity = Field(
        description="`[capacity]`: the planning horizon and the quotas, "
        "owned boxes and reservations the jobs share"
    )
    pricing: PriceOverlay | None = Field(
        default=None,
        description="`[pricing]`: your prices for every job of the batch, over ~/.config/ccopt/prices.toml",
    )
    job: tuple[BatchJob, ...] = Field(
        min_length=1,
        description="`[[job]]`: the jobs, each a "
        "training job (`ccopt plan` fields) plus release, priority "
        "and value; `[defaults]` is merged under each",
    )

    @model_validator(mode="after")
    def _check(self) -> BatchFile:
        seen: set[str] = set()
        for j in self.job:
            if j.name in seen:
                raise ValueError(f"job names must be unique; {j.name!r} appears twice")
            seen.add(j.name)
        return self

    def named_regions(self) -> tuple[str, ...]:
        """The regions the batch names (every job's, its quotas' and reservations'): a reduced
        large price table keeps every row of them."""
        named = [r for j in self.job for r in j.named_regions()]
        named += [q.region for q in self.capacity.quota if q.region]
        named += [r.region for r in self.capacity.reservation if r.region]
        named += [b.region for b in self.capacity.block if b.region]
        return tuple(named)


def _current_names(job: dict[str, Any]) -> dict[str, Any]:
    """A job table with the old field names of its sub-tables renamed (aliases.py)."""
    return {k: rename_old_fields(v, k) if isinstance(v, dict) else v for k, v in job.items()}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep merge of TOML tables: keys of `over` win; sub-tables merge."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def batch_from_dict(data: dict[str, Any], source: str = "batch") -> BatchFile:
    """Validate a decoded batch table; ConfigError with one line naming the field on failure.

    `[defaults]` (any job field) is merged under every `[[job]]`; jobs without a name get
    "job-<n>".
    """
    data = dict(data)
    defaults = data.pop("defaults", {}) or {}
    if not isinstance(defaults, dict):
        raise ConfigError(f"{source}: defaults: must be a table")
    jobs = data.get("job")
    if not isinstance(jobs, list) or not jobs:
        raise ConfigError(f"{source}: no [[job]] tables; a batch needs at least one job")
    merged = []
    for i, raw in enumerate(jobs):
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: job[{i}]: must be a table")
        try:  # current names first, so a default's old name cannot clash with a job's new one
            entry = _merge(_current_names(defaults), _current_names(raw))
        except ValueError as exc:
            raise ConfigError(f"{source}: job[{i}]: {exc}") from None
        entry.setdefault("name", f"job-{i + 1}")
        merged.append(entry)
    data["job"] = merged
    if "capacity" not in data:
        raise ConfigError(f"{source}: [capacity] is missing (needs at least horizon_days)")
    try:
        return BatchFile.model_validate(data)
    except ValidationError as exc:
        line = format_validation_error(exc, model=BatchFile)
        loc = exc.errors()[0]["loc"]
        if len(loc) >= 2 and loc[0] == "job" and isinstance(loc[1], int):
            line = line.replace(f"job[{loc[1]}]", f"job[{loc[1]}] ({merged[loc[1]].get('name')})", 1)
        raise ConfigError(f"{source}: {line}") from None


def load_batch(path: str | Path) -> tuple[BatchFile, Path]:
    """Read and validate a batch TOML file. Returns the batch and its directory.

    Raises:
        ConfigError: missing file, invalid TOML or an invalid field (one line, names it).
    """
    file = Path(path)
    data = read_toml(file, "batch file")
    data.setdefault("name", file.stem)
    return batch_from_dict(data, str(file)), file.parent
