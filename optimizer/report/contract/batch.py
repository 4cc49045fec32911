"""The JSON contract of `ccopt batch` (DESIGN.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, create_model

from optimizer.report.contract.common import SCHEMA_VERSION, AnswerStatus, Contract, ExplanationOut, SolverOut
from optimizer.report.contract.train import CatalogOut, PlanOut

__all__ = ["BatchJobOut", "ResourceOut", "BatchOutput"]


def _or_none(annotation: Any) -> Any:
    """`annotation | None`; a model field's annotation is never None (pydantic sets it)."""
    if annotation is None:
        raise TypeError("a plan field without an annotation")
    return annotation | None


#: the plan fields, each absent for jobs that are dropped or unplanned
_PlanFields = create_model(  # type: ignore[call-overload]
    "BatchPlanFields",
    __base__=Contract,
    **{
        k: (_or_none(f.annotation), Field(default=None, description=f.description))
        for k, f in PlanOut.model_fields.items()
    },
)


class BatchJobOut(_PlanFields):  # type: ignore[misc,valid-type]
    """A job of the batch: the plan fields when scheduled, and its slot."""

    name: str
    status: Literal["scheduled", "dropped", "unplanned"]
    start_hour: float | None
    end_hour: float | None
    slot_end_hour: float | None = None
    resources: list[str] | None = None
    placement: str | None = Field(default=None, description="why it runs where it runs")
    model: str
    stack: str | None = Field(default=None, description="workload.stack (what --export launches)")
    workload_kind: str | None = Field(
        default=None, description="workload.kind: pretrain | finetune | lora | qlora"
    )
    seq_len: int | None = Field(default=None, description="tokens per sequence (1: per-sample)")
    release_hour: float
    deadline_hour: float | None
    priority: int
    value_usd: float | None
    candidates: int = Field(description="plan options of this job (old name of rows)")
    rows: int | None = Field(
        default=None, description="plan options of this job (as the solver block's rows)"
    )


class ResourceOut(Contract):
    key: str
    kind: str = Field(description="quota | owned | reservation (a capacity block too, with window_h)")
    label: str
    capacity: int
    unit: str
    reserved: int | None = None
    commitment_usd_per_instance: float | None = None
    window_h: list[float] | None = Field(
        default=None,
        description="a capacity block ([[capacity.block]], kind reservation): [from_hour, to_hour] "
        "of the horizon its jobs must run in; its commitment is paid for the whole block",
    )
    peak: float
    usage: list[list[float]] = Field(description="[[from_hour, to_hour, level], ...]")


class CostBreakdownOut(Contract):
    cloud: float
    owned: float
    reservations: float
    dropped_value: float


class BatchOutput(Contract):
    """`ccopt batch --json`."""

    schema_version: int = SCHEMA_VERSION
    status: AnswerStatus
    total_cost_usd: float | None
    cost_breakdown_usd: CostBreakdownOut
    horizon_hours: float
    jobs: list[BatchJobOut]
    dropped: list[str]
    resources: list[ResourceOut]
    explanation: ExplanationOut | None
    notes: list[str]
    solver: SolverOut
    catalog: CatalogOut | None = None
