"""The JSON contract of `ccopt serve` and `ccopt serve-compare` (DESIGN.md)."""

from __future__ import annotations

from pydantic import Field

from optimizer.report.contract.common import (
    SCHEMA_VERSION,
    AnswerStatus,
    Contract,
    ExplanationOut,
    LinePrice,
    MemoryGiB,
    PriceSource,
    RejectedOut,
    SolverOut,
)
from optimizer.report.contract.train import CatalogOut, PriceFlagOut

__all__ = ["DeploymentOut", "ServePlanOut", "ServeJobOut", "ServeOutput", "ServeCompareOutput"]


class DeploymentOut(Contract):
    """Replicas of one (offering, TP degree, batch) and the load they carry."""

    gpu: str
    gpus: int = Field(description="GPUs of this deployment")
    gpu_generation: str = Field(
        default="",
        description="the GPU's generation (hopper, ampere-dc, ada, ...): which kernels its engine runs",
    )
    tp: int = Field(description="tensor-parallel degree of one replica")
    precision: str = Field(description="weight precision: fp16 | bf16 | fp8 | int8 | int4")
    quantization: str = Field(description="old name of precision")
    replicas: int
    provider: str
    instance: str
    pricing: str
    region: str
    instances: int
    gpus_per_instance: int
    batch: int = Field(description="concurrent sequences per replica")
    usd_per_hour: float
    usd_per_instance_hour: float
    requests_per_s: float = Field(description="load assigned to this deployment")
    capacity_requests_per_s: float
    requests_per_s_per_replica: list[float] = Field(description="per request bucket")
    bucket_requests_per_s: list[float]
    ttft_s: float
    tpot_ms: float
    e2e_s: float
    memory_gib: MemoryGiB = Field(description="per GPU, at the replica's batch and context")
    price_flags: list[PriceFlagOut] = Field(default_factory=list)
    price_source: PriceSource = "bundled"
    price: LinePrice = None


class ServePlanOut(Contract):
    deployments: list[DeploymentOut]
    usd_per_hour: float = Field(description="per served hour, all deployments")
    usd_per_month: float = Field(description="usd_per_hour × hours_per_day × 30.4")
    capacity_requests_per_s: float
    load_requests_per_s: float
    headroom: float | None = Field(description="capacity ÷ load − 1")
    ttft_s: float
    tpot_ms: float
    e2e_s: float
    replicas: int
    gpus: int
    spare_replicas: int = Field(
        description="replicas on the spare instances N+k keeps (k per deployment × its replicas per instance)"
    )
    instance_failures_survived: int = Field(
        description="instances that may fail, each losing all its replicas, with the load "
        "(with headroom) still carried: the fewest spare instances of any deployment"
    )


class ServeTargetsOut(Contract):
    ttft_s: float | None
    tpot_ms: float | None
    e2e_p50_s: float | None


class BucketOut(Contract):
    prompt_tokens: int
    output_tokens: int
    share: float


class ServeJobOut(Contract):
    name: str
    model: str
    params: int
    precision: str
    quantization: str = Field(description="old name of precision")
    load_requests_per_s: float
    hours_per_day: float
    buckets: list[BucketOut]
    targets: ServeTargetsOut
    confidence: float | None = Field(
        default=None,
        description="replica speeds, latencies and capacity are at this quantile of each GPU's "
        "serving band (constraints.confidence)",
    )
    redundancy_spare_replicas: int = Field(description="old name of spare_instances_per_deployment")
    spare_instances_per_deployment: int | None = Field(
        default=None, description="N+k: k spare instances per deployment"
    )
    headroom_required: float = Field(description="old name of min_capacity_headroom_fraction")
    min_capacity_headroom_fraction: float | None = Field(
        default=None, description="capacity ≥ load × (1 + this)"
    )
    kv_cache_precision: str | None = Field(default=None, description="KV cache element type")
    stack: str | None = None


class ServeOutput(Contract):
    """`ccopt serve --json`."""

    schema_version: int = SCHEMA_VERSION
    status: AnswerStatus
    plan: ServePlanOut | None
    explanation: ExplanationOut | None
    solver: SolverOut
    job: ServeJobOut
    rejected: list[RejectedOut] = Field(default_factory=list)
    catalog: CatalogOut | None = None
    notes: list[str] = Field(default_factory=list)


class ServeCompareOutput(Contract):
    """`ccopt serve-compare --json`: the best mix, and each GPU type alone."""

    schema_version: int = SCHEMA_VERSION
    status: AnswerStatus
    best: ServeOutput
    per_gpu: dict[str, ServePlanOut | None] = Field(description="null: that type cannot serve it")
    per_gpu_explanation: dict[str, ExplanationOut] = Field(default_factory=dict)
