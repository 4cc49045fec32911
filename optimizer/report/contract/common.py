"""Pieces of the JSON contract that every command shares: version, memory, layout, solver,
explanation, rejected options.

The same concept has the same field name and shape in every command's `--json` output; the
models here are that shape, and `ccopt schema COMMAND` prints them as JSON Schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SCHEMA_VERSION",
    "Contract",
    "MemoryGiB",
    "LayoutOut",
    "StepOut",
    "SolverOut",
    "FixOut",
    "ExplanationOut",
    "RejectedOut",
    "PriceOut",
    "AnswerStatus",
    "PriceSource",
    "LinePrice",
    "MemoryActivationFactor",
    "significant",
    "emit",
    "emit_list",
    "explanation_of",
    "rejected_list",
]

#: version of every command's JSON contract; bumped only when a field is removed or reshaped.
#: 2 (this release): schema_version added; explanation is an object with a `text`; `rejected` a
#: list of {option, reason}; serve's memory_gib an object; solver blocks share status,
#: proven_optimal, wall_s, rows. Fields renamed in 2 keep their old name beside the new one.
SCHEMA_VERSION = 2


#: the status of a planner's answer (plan, serve, serve-compare, rl, batch): optimal (proven),
#: feasible (the best found within the time limit) or infeasible
AnswerStatus = Literal["optimal", "feasible", "infeasible"]


class Contract(BaseModel):
    """Base of every output model: unknown fields are a bug (forbid), NaN/inf are not JSON."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, defer_build=True)


class PlaceOut(Contract):
    """Where a cluster runs (report/place.place_dict): the base of every output naming one."""

    gpu: str = Field(description="GPU type id")
    provider: str
    instance: str
    region: str
    pricing: str = Field(
        description="on_demand | spot | reserved_1y | reserved_3y | capacity_block | owned | buy"
    )
    instances: int = Field(ge=1)
    gpus: int = Field(ge=1, description="GPUs in total (instances × GPUs per instance)")


class PriceOut(Contract):
    """Where a plan line's price comes from, its date and age (issue 33)."""

    source: Literal["bundled", "refreshed", "file", "overlay", "hardware"] = Field(
        description="bundled tables, refreshed cache, a --prices file, your prices "
        "(overlay), or an owned/bought box's specs"
    )
    as_of: str | None = Field(description="ISO date of the price (None: a box's specs)")
    age_days: int | None = Field(description="days from as_of to today")
    stale: bool = Field(description="older than max_age_days: check the price before relying on it")
    max_age_days: int = Field(
        description="the age beyond which a price is flagged ($CCOPT_PRICE_MAX_AGE_DAYS)"
    )
    note: str = Field(
        description="what your prices changed, e.g. 'on_demand 30% off (prices.toml)'; '' if nothing"
    )
    catalog_usd_per_hour: float | None = Field(
        description="the catalog price per instance-hour before your prices changed it"
    )


#: `price_source` of a plan line (a training plan, a serving deployment); default "bundled"
PriceSource = Annotated[str, Field(description="bundled | refreshed | file | overlay | hardware (see price)")]
#: `price` of a plan line; default None
LinePrice = Annotated[PriceOut | None, Field(description="source, date and age of the price")]
#: `memory_activation_factor` of an estimate and a plan; default None
MemoryActivationFactor = Annotated[
    float | None, Field(description="memory_calibrated: the factor on the model's activation bytes")
]


class MemoryGiB(Contract):
    """Memory per GPU in GiB (2^30 bytes), by part; `total` is the peak allocated."""

    weights: float
    gradients: float = 0.0
    optimizer: float = 0.0
    activations: float = 0.0
    kv_cache: float = 0.0
    overhead: float = Field(description="CUDA context, communication buffers, fragmentation")
    total: float = Field(description="peak allocated memory per GPU (what the planner fits)")
    reserved: float | None = Field(
        default=None, description="what the caching allocator holds at peak (torch.cuda.max_memory_reserved)"
    )
    device: float | None = Field(
        default=None, description="what nvidia-smi shows: reserved + CUDA context and library workspaces"
    )


class LayoutOut(Contract):
    """How a training job is split over its GPUs."""

    dp: int = Field(ge=1, description="data-parallel replicas")
    tp: int = Field(ge=1, description="tensor-parallel degree (within a node)")
    pp: int = Field(ge=1, description="pipeline stages")
    zero_stage: int = Field(ge=0, le=3, description="ZeRO stage (3 = FSDP full sharding)")
    activation_checkpointing: str = Field(description="none | selective | full")
    micro_batch: int = Field(ge=1, description="sequences per GPU per micro-step")
    grad_accum: int = Field(ge=1, description="micro-steps per optimizer step")
    cp: int | None = Field(default=None, description="context-parallel degree (when > 1)")
    vp: int | None = Field(
        default=None, description="virtual pipeline stages per GPU, interleaved 1F1B (when > 1)"
    )


class StepOut(Contract):
    """One optimizer step, seconds: time = compute + exposed communication + pipeline bubble
    + host wait."""

    time_s: float
    compute_s: float
    communication_s: float
    bubble_s: float
    host_wait_s: float = Field(
        default=0.0, description="the GPU idle while the host launches an eager step's kernels"
    )


class SolverOut(Contract):
    """How the answer was found. Every command has status, proven_optimal, wall_s and rows."""

    name: str = Field(description="cp-sat, or enumeration when nothing was left to optimise")
    status: str = Field(description="optimal | feasible | infeasible")
    proven_optimal: bool
    wall_s: float = Field(ge=0, description="solver wall time, seconds")
    rows: int = Field(ge=0, description="options the solver chose among")
    enumerate_s: float | None = Field(default=None, description="time to build the options, s")
    candidates: int | None = Field(default=None, description="plan: old name of rows")
    options: int | None = Field(default=None, description="serve: old name of rows")
    objective: float | None = Field(
        default=None,
        description="raw solver objective (scaled integer units; see the *_usd / *_cents fields)",
    )
    best_bound: float | None = None
    objective_cents: int | None = Field(
        default=None, description="serve: cents per hour (old name of objective_cents_per_hour)"
    )
    objective_usd_per_hour: float | None = Field(default=None, description="serve: the optimum")
    objective_usd: float | None = Field(default=None, description="batch: the optimum")
    best_bound_usd: float | None = None
    gap: float | None = Field(default=None, description="batch: relative optimality gap")
    first_plan: str | None = Field(
        default=None,
        description="batch: 'greedy' when the plan is the greedy first plan (no better one found in time)",
    )
    solve_s: float | None = None
    solves: int | None = Field(default=None, description="compare: solver calls summed here")
    horizon_steps: int | None = None
    time_unit_hours: float | None = None
    jobs: int | None = Field(default=None, description="batch: old name of num_jobs")
    model_rows: int | None = Field(default=None, description="batch: old name of num_model_rows")
    resources: int | None = Field(default=None, description="batch: old name of num_resources")
    num_jobs: int | None = Field(default=None, description="batch: jobs in the model")
    num_model_rows: int | None = Field(
        default=None, description="batch: rows left in the CP-SAT model after pruning (rows: all options)"
    )
    num_resources: int | None = Field(default=None, description="batch: shared resources")
    objective_cents_per_hour: int | None = Field(
        default=None, description="serve: the optimum, cents per hour (objective_cents, named)"
    )


class FixOut(Contract):
    """One change that would make an infeasible problem feasible, and what it costs."""

    change: str
    requirement: str | None = Field(default=None, description="the requirement it relaxes")
    cost_usd: float | None = Field(default=None, description="total cost after the change")
    usd_per_hour: float | None = Field(
        default=None,
        description="serve: USD per served hour of the plan after the change (null: not re-solved)",
    )
    total_cost_usd: float | None = Field(default=None, description="batch: old name of cost_usd")
    detail: dict[str, Any] | str | None = Field(
        default=None, description="batch: per requirement, what was needed"
    )


class ExplanationOut(Contract):
    """Why there is no answer (null when there is one): the sentence, what binds, what fixes it."""

    text: str = Field(description="one or two sentences for a human")
    binding_constraint: str | None = Field(
        default=None, description="deadline | budget | memory | latency | capacity | ..."
    )
    fixes: list[FixOut] = Field(default_factory=list, description="nearest fixes, cheapest first")
    conflict: list[str] | None = Field(default=None, description="batch: requirement keys")
    labels: list[str] | None = Field(default=None, description="batch: requirements in words")
    message: str | None = Field(default=None, description="batch: old name of text")


class RejectedOut(Contract):
    """An option the planner excluded before solving, and why."""

    option: str
    reason: str


def significant(value: float, digits: int = 4) -> float:
    """`value` rounded to `digits` significant figures (as serve rounds its latencies), so a
    sub-millisecond TTFT keeps its precision: 0.000123456 -> 0.0001235."""
    return float(f"{value:.{digits}g}")


def emit(model: type[Contract], data: dict[str, Any]) -> dict[str, Any]:
    """`data` checked against its contract model, as plain JSON-ready types (the output).

    Fields left out of `data` stay out of the output (optional ones are absent, not null),
    except `schema_version`, which every top-level output carries."""
    if "schema_version" in model.model_fields:
        data = {"schema_version": SCHEMA_VERSION, **data}
    return model.model_validate(data).model_dump(mode="json", exclude_unset=True)


def emit_list(model: Any, rows: list[dict[str, Any]]) -> list[Any]:
    """A list output (a RootModel of rows) checked against its contract, as plain JSON; each
    row's own columns come first, its `schema_version` last (scripts read the columns)."""
    out = model.model_validate(rows).model_dump(mode="json")
    return [
        {k: v for k, v in r.items() if k != "schema_version"}
        | ({"schema_version": r["schema_version"]} if "schema_version" in r else {})
        for r in out
    ]


def explanation_of(
    text: str | None, binding: str | None = None, fixes: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any] | None:
    """The explanation object of the contract (None when there is nothing to explain)."""
    if text is None:
        return None
    return {"text": text, "binding_constraint": binding, "fixes": fixes or [], **extra}


def rejected_list(rejected: dict[str, str] | list[Any]) -> list[dict[str, str]]:
    """Rejected options as [{option, reason}] (from {option: reason} or a list of those),
    sorted by option then reason: the same catalog in another row order gives the same list."""
    if isinstance(rejected, dict):
        rows = [{"option": k, "reason": v} for k, v in rejected.items()]
    else:
        rows = [r if isinstance(r, dict) else {"option": str(r[0]), "reason": str(r[1])} for r in rejected]
    return sorted(rows, key=lambda r: (r["option"], r["reason"]))
