"""The JSON contract of `ccopt plan`, `ccopt compare` and `ccopt calibrate` (DESIGN.md;
`ccopt estimate`: contract/estimate.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import (
    SCHEMA_VERSION,
    AnswerStatus,
    Contract,
    ExplanationOut,
    LayoutOut,
    LinePrice,
    MemoryActivationFactor,
    MemoryGiB,
    PlaceOut,
    PriceSource,
    RejectedOut,
    SolverOut,
    StepOut,
)
from optimizer.report.contract.mix import MixOut
from optimizer.report.contract.rent_buy import BreakEvenOut, RentOrBuyOut
from optimizer.report.contract.settle import SettleOut

__all__ = [
    "DataOut",
    "HostOut",
    "PriceFlagOut",
    "CatalogOut",
    "PlanOut",
    "AlternativeOut",
    "PlanJobOut",
    "PlanOutput",
    "BreakEvenOut",
    "CompareOutput",
]


class PriceFlagOut(Contract):
    """A catalog row the price-sanity rules flagged (see `ccopt prices --flagged`)."""

    rule: str
    reason: str


class CatalogOut(Contract):
    """Where the prices came from and how old they are."""

    source: str = Field(description="bundled | cache | a --prices path")
    as_of: str | None = Field(default=None, description="newest row date, YYYY-MM-DD")
    age_days: int | None = None
    path: str | None = None
    note: str | None = Field(
        default=None,
        description="why a fallback happened (an invalid cache → the bundled tables); absent when none did",
    )
    overlays: list[str] | None = Field(
        default=None,
        description="your prices applied over the tables (file paths, job [pricing]); absent: none",
    )


class OptionsOut(Contract):
    """The training options of a plan (chosen by the planner where [search] allows)."""

    precision: str = Field(description="fp32 | bf16 | fp16 | fp8 (GEMMs; fp32 master weights)")
    optimizer: str
    offload: str = Field(description="none | optimizer (ZeRO-Offload) | params (ZeRO-Infinity)")
    sequence_parallel: bool | None = Field(description="null: the stack's default")
    virtual_stages: int = Field(description="interleaved pipeline chunks per stage")


class TpAvoidedOut(Contract):
    """Tensor parallelism left out because the GPUs cannot talk peer-to-peer."""

    reason: Literal["no_peer_to_peer"]
    gpu: str
    tp: int = Field(description="the tensor-parallel degree compared")
    host_bw_gb_s: float = Field(description="GB/s per direction through host memory")
    p2p_bw_gb_s: float = Field(description="GB/s per direction were the GPUs peers")
    step_time_s: float = Field(description="the plan's step (tp 1)")
    step_time_s_tp_host: float
    step_time_s_tp_p2p: float
    step_time_s_p2p: float = Field(description="tp 1 were the GPUs peers")


class DataOut(Contract):
    """What the job's data costs on this plan ([data]; pricing_data/provider_storage.csv)."""

    counted: bool = Field(description="false: the job has no [data] section; nothing counted")
    note: str | None = None
    dataset_gb: float | None = None
    egress_gb: float | None = Field(default=None, description="GB moved once to the plan")
    egress_usd_per_gb: float | None = None
    egress_usd: float | None = None
    route: str | None = Field(default=None, description="from where to where, at which price")
    storage_usd_per_gb_month: float | None = Field(
        default=None, description="object storage at the plan's provider/region (0: local disks)"
    )
    dataset_storage_usd: float | None = None
    checkpoint_gb: float | None = Field(
        default=None, description="one checkpoint (weights + optimizer state); 0 when written to local disks"
    )
    checkpoint_every_hours: float | None = None
    checkpoints_kept: int | None = None
    checkpoint_storage_usd: float | None = None
    storage_usd: float | None = Field(default=None, description="dataset copy + checkpoint storage")
    total_usd: float | None = None
    share_of_cost: float | None = Field(default=None, description="total_usd / the plan's cost_usd")
    unknown: list[str] = Field(default_factory=list, description="prices not in the tables (counted as 0)")


class HostOut(Contract):
    """The host of one instance and what the plan asks of it (None: unknown)."""

    vcpus: float | None
    ram_gib: float | None
    local_nvme_gb: float | None
    ram_needed_gib: float = Field(
        description="offloaded states + pinned buffers + loader workers, per instance"
    )
    offloaded_gib_per_gpu: float
    gpu_samples_per_s: float = Field(description="samples/s the GPUs consume at their speed")
    loader_samples_per_s: float | None = Field(
        description="samples/s all instances' free vCPUs load (null: not checked)"
    )
    unit: str = Field(default="samples/s", description="img/s for [data] kind = image")
    loader_bound: bool
    slowdown: float = Field(description="step time / GPU step time")
    notes: list[str] = Field(default_factory=list)


class TermsOut(Contract):
    """The term a plan pays for (issue 42): hours billed against hours run."""

    billed_hours: float = Field(
        description="hours billed: run hours rounded up to the increment, at least the minimum term"
    )
    run_hours: float = Field(description="hours the job runs at the plan's confidence")
    idle_hours: float = Field(description="billed_hours − run_hours: paid, not used")
    min_term_hours: float
    billing_increment_hours: float = Field(description="0: not rounded")
    max_term_hours: float | None = Field(description="a capacity block: the longest one sold")
    min_nodes: int
    max_nodes: int | None
    words: str = Field(description="the terms in words")
    source: str = Field(description="the page the terms are read from")


class SpotOut(Contract):
    """What interruptions cost a spot plan (Daly 2006 expected wall time)."""

    interruptions_per_instance_day: float
    rate_source: str = Field(description="where the rate comes from (GUESS, a source, job)")
    expected_interruptions: float = Field(description="over the run, all instances")
    checkpoint_gib: float = Field(description="one resumable checkpoint (weights + optimizer)")
    checkpoint_write_s: float
    checkpoint_interval_h: float = Field(description="compute hours between checkpoints (Daly 2006 optimum)")
    restart_s: float
    work_hours: float = Field(description="hours of uninterrupted training")
    expected_hours: float = Field(description="expected wall hours with interruptions (= hours)")


class GoodputOut(Contract):
    """Where a plan's hours go (optimizer/model/goodput.py): computing, writing checkpoints,
    redoing lost work and restarting after interruptions, starting up; they add to `hours`."""

    compute_hours: float = Field(description="steps × step time at the plan's confidence")
    checkpoint_hours: float = Field(description="checkpoint writes, one every checkpoint_interval_h")
    failures_hours: float = Field(description="expected work lost to interruptions + restarts")
    startup_hours: float = Field(description="provisioning + start-up (image, data, first compile), once")
    evaluation_hours: float = Field(
        default=0.0, description="evaluation passes between steps (assumptions.evaluation_share × compute)"
    )
    conversion_hours: float = Field(
        default=0.0,
        description="converting the final checkpoint once (assumptions.checkpoint_conversion_gb_s)",
    )
    goodput: float = Field(description="compute_hours ÷ hours")
    failures_per_gpu_day: float = Field(description="unexpected interruptions per GPU-day (hardware)")
    failure_rate_source: str = Field(
        description="where the rate comes from: the GPU generation's source, a GUESS, or the job"
    )
    interruptions_per_day: float = Field(description="expected interruptions per day, whole cluster (+ spot)")
    expected_interruptions: float = Field(description="over the run")
    checkpoint_interval_h: float | None = Field(
        description="compute hours between checkpoints (Daly 2006 optimum; null: no interruptions)"
    )


class IntervalBasis(Contract):
    """What a plan's P10-P90 band rests on (optimizer/model/bands.py)."""

    cases: int = Field(ge=0, description="measured runs behind the band (0: the wide prior alone)")
    sources: int = Field(ge=0, description="distinct published sources among them")
    group: str = Field(
        description="the evidence group: generation/precision[/stack], 'prior' (no measured run), "
        "'profile' (a per-sample profile's own band), 'any' (the pooled band of thinly measured "
        "groups) or 'any:<tier>' (a hardware tier's band)"
    )
    borrowed: str | None = Field(
        default=None,
        description="a band no run of this GPU generation and precision backs: 'pooled', or the "
        "hardware tier it is borrowed from (e.g. 'NVIDIA data-centre')",
    )


class PlanOut(PlaceOut):
    """One training plan: where it runs, how it is split, how long and what it costs."""

    gpus_per_instance: int | None = None
    layout: LayoutOut
    global_batch: int = Field(description="sequences per optimizer step")
    steps: int
    step_time_s: float
    step_time_s_p10: float | None = None
    step_time_s_p50: float | None = None
    step_time_s_p90: float | None = None
    hours: float = Field(
        description="wall hours at the plan's `confidence` (what the deadline is checked with)"
    )
    days: float = Field(description="days at the plan's `confidence`")
    days_p10: float | None = Field(default=None, description="days at the P10 step time")
    days_p50: float | None = Field(default=None, description="days at the P50 (median) step time")
    days_p90: float | None = None
    usd_per_hour: float = Field(description="running cost of all instances per hour")
    cost_usd: float = Field(
        description="what the job costs at the plan's `confidence` (committed hours for reservations)"
    )
    cost_usd_p10: float | None = Field(default=None, description="cost at the P10 step time")
    cost_usd_p50: float | None = Field(default=None, description="cost at the P50 step time")
    cost_usd_p90: float | None = None
    confidence: float | None = Field(
        default=None,
        description="the quantile of the step-time band hours, days and cost_usd are at "
        "(constraints.confidence); null: the model's point prediction",
    )
    interval_basis: IntervalBasis | None = Field(
        default=None, description="the evidence the P10-P90 band rests on"
    )
    mfu_unclipped: float | None = Field(
        default=None,
        description="the model's MFU before the plausibility ceiling clipped it (null: not clipped)",
    )
    running_usd: float | None = Field(
        default=None,
        description="the running line of cost_usd: instance-hours (the whole term for a "
        "reservation), an owned box's power; cost_usd = running + capital + data",
    )
    gpu_hours: float | None = Field(default=None, description="GPUs × hours")
    capital_usd: float = Field(description="purchase price of bought boxes (0 for cloud)")
    memory_gib: MemoryGiB
    gpu_memory_gib: float | None = Field(default=None, description="memory of one card")
    memory_headroom_gib: float | None = Field(
        default=None, description="card memory minus the device memory the plan needs, per GPU"
    )
    memory_headroom_fraction: float | None = Field(
        default=None, description="memory_headroom_gib as a share of the card's memory"
    )
    memory_headroom_required_gib: float | None = Field(
        default=None,
        description="the headroom the job asked to keep (min_memory_headroom_gib "
        "+ min_memory_headroom_fraction × card; with constraints.memory_confidence, the card "
        "minus what the prediction may use: (card − that headroom) ÷ the band's multiplier)",
    )
    memory_confidence: float | None = Field(
        default=None,
        description="the quantile of the memory band the layout was fitted at "
        "(constraints.memory_confidence; null: the prediction itself)",
    )
    memory_device_gib_p10: float | None = Field(
        default=None,
        description="memory_gib.device at the P10 of the memory band (measured ÷ predicted "
        "peak, widened for stacks the model was never shaped on)",
    )
    memory_device_gib_p90: float | None = Field(
        default=None,
        description="memory_gib.device at the P90 of the memory band: above gpu_memory_gib, "
        "at least 1 run in 10 of a stack like the new sources' would run out of memory "
        "(constraints.memory_confidence plans for it)",
    )
    step: StepOut
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float = Field(
        description="model FLOPs utilisation: 6·N·tokens/s ÷ dense peak "
        "(PaLM appendix B; attention FLOPs included)"
    )
    tokens: int = Field(description="tokens processed over the job")
    sample_unit: str | None = Field(
        default=None,
        description="what a sample is when the job counts samples (image, clip, sequence, ...); null: tokens",
    )
    samples_per_s: float | None = Field(
        default=None,
        description="samples trained per second "
        "over all GPUs (what the data loader must feed); null "
        "when the job counts tokens",
    )
    intra_node_link: str | None = Field(default=None, description="nvlink | pcie | ...")
    intra_node_path: str | None = Field(
        default=None,
        description="how two GPUs of an instance "
        "exchange data: nvlink | xgmi | nvlink-c2c | p2p (PCIe "
        "peer-to-peer) | host (PCIe through host memory)",
    )
    intra_node_bw_gb_s: float | None = Field(
        default=None, description="achieved GB/s per direction between two GPUs of an instance"
    )
    spot: SpotOut | None = Field(
        default=None,
        description="spot plans: expected interruptions, checkpoints and restarts behind `hours`",
    )
    goodput: GoodputOut | None = Field(
        default=None,
        description=(
            "the whole run: compute, evaluation, checkpoints, failures and restarts, start-up, "
            "conversion (= hours)"
        ),
    )
    tensor_parallel_avoided: TpAvoidedOut | None = Field(
        default=None,
        description="the plan keeps tp 1 because its GPUs have no peer-to-peer "
        "(tp 2 would be faster over peer-to-peer, slower through host memory)",
    )
    inter_node_gbps: float = Field(description="network per instance, Gbit/s")
    inter_node_kind: str
    inter_node_is_default: bool = Field(
        description="the bandwidth is a documented default, not the provider's published figure"
    )
    commitment_hours: float
    kind: str = Field(description="cloud | owned | buy")
    calibrated: bool = Field(description="compute efficiency from a measured run")
    memory_calibrated: bool = Field(
        default=False,
        description="activation memory scaled by measured peaks of this model × stack "
        "(`ccopt calibrate --peak-memory-gib`)",
    )
    memory_activation_factor: MemoryActivationFactor = None
    options: OptionsOut | None = Field(
        default=None, description="the options chosen (what [search] lets the planner vary)"
    )
    price_flags: list[PriceFlagOut] = Field(default_factory=list)
    price_source: PriceSource = "bundled"
    price: LinePrice = None
    terms: TermsOut | None = Field(
        default=None,
        description="the seller's terms the plan pays (minimum term, billing increment, capacity "
        "block, node range); None: billed per hour used",
    )
    warnings: list[str] = Field(default_factory=list)
    data_usd: float | None = Field(
        default=None, description="dataset transfer + dataset and checkpoint storage, included in cost_usd"
    )
    data: DataOut | None = None
    host: HostOut | None = None


class AlternativeOut(PlanOut):
    extra_cost_usd: float = Field(
        description="cost above the chosen plan (negative: cheaper, passed over for fewer GPUs by "
        "the size rule, assumptions fewer_gpus_within_share)"
    )


class PlanJobOut(Contract):
    name: str | None
    model: str
    params: int
    tokens: float | None
    deadline_hours: float | None
    budget_usd: float | None
    stack: str | None = None
    model_ref: str | None = Field(
        default=None,
        description="what `estimate --model` takes: "
        "the preset, or the config.json's path resolved against the "
        "job file's folder; null: an inline shape or profile",
    )
    kind: str | None = Field(default=None, description="workload.kind")
    seq_len: int | None = Field(default=None, description="tokens per sequence (1: per-sample)")
    lora_rank: int | None = None
    lora_targets: list[str] | None = None
    attention: str | None = Field(default=None, description="flash | eager (null: the stack's)")
    fused_kernels: bool = Field(
        default=False, description="workload.fused_kernels: fused RMSNorm/SwiGLU kernels assumed (Liger)"
    )
    head: str = Field(
        default="lm",
        description="model.head: lm (vocabulary logits on every token) or task (a classification / QA head)",
    )


class PlanOutput(Contract):
    """`ccopt plan --json`."""

    schema_version: int = SCHEMA_VERSION
    status: AnswerStatus
    plan: PlanOut | None
    alternatives: list[AlternativeOut] = Field(description="next-best distinct plans")
    explanation: ExplanationOut | None = Field(description="why infeasible (null otherwise)")
    binding_constraint: str | None = Field(
        default=None,
        description="feasible: what the plan "
        "is pressed against (deadline | none); infeasible: "
        "what binds, as explanation.binding_constraint",
    )
    cheaper_if_later: PlanOut | None = Field(
        default=None,
        description="binding deadline: the "
        "cheapest plan that finishes after the deadline "
        "(only the deadline rules it out)",
    )
    median_plan: MedianPlanOut | None = Field(
        default=None,
        description="the plan a median (P50) prediction would pick when it differs from `plan` "
        "(planned at constraints.confidence), with why `plan` rejects it",
    )
    sizing_run: SettleOut | None = Field(
        default=None,
        description="the sizing run that would settle the choice when another GPU type's cheaper "
        "plan could hold once measured (issue 45): the contender of largest expected saving",
    )
    solver: SolverOut
    pareto: list[PlanOut] | None = Field(default=None, description="--pareto: cost vs time")
    rejected: list[RejectedOut] = Field(default_factory=list)
    job: PlanJobOut | None = None
    catalog: CatalogOut | None = None
    notes: list[str] = Field(default_factory=list, description="what a buyer should double-check")
    loader_bound: list[LoaderBoundOut] = Field(
        default_factory=list,
        description="offerings slowed to their data-loader rate, and by how much (why cheaper GPUs may lose)",
    )
    rent_or_buy: RentOrBuyOut | None = Field(
        default=None, description="boxes to buy in the job: rent or own, the verdict compare gives"
    )
    mix: MixOut | None = Field(
        default=None,
        description="a mixed cluster (pricing models on one instance type, or two GPU types on "
        "one fabric) when one was planned; absent when the job has nothing to mix",
    )


class LoaderBoundOut(RejectedOut):
    """An offering slowed to its data loader's rate: `reason` says by how much and the fix."""

    usd_per_gpu_hour: float = Field(description="the offering's price per GPU-hour (USD)")


class MedianPlanOut(PlanOut):
    """The P50 plan beside a confident one."""

    rejected_because: str | None = Field(default=None, description="why the confident plan does not take it")


class CompareOutput(Contract):
    """`ccopt compare --json`."""

    schema_version: int = SCHEMA_VERSION
    status: Literal["optimal", "infeasible"]
    job: str = Field(description="the job's name (plan: an object; see job_detail)")
    per_gpu: dict[str, PlanOut | None]
    per_provider: dict[str, PlanOut | None]
    cloud: PlanOut | None
    owned_or_bought: PlanOut | None
    break_even: BreakEvenOut | None = Field(description="against the cheapest cloud plan")
    break_even_per_gpu: dict[str, BreakEvenOut] = Field(
        default_factory=dict, description="buying vs the best cloud plan of each GPU type"
    )
    rent_or_buy: RentOrBuyOut | None = Field(
        default=None, description="the verdict: rent the best cloud plan or own, at equal work"
    )
    rejected: list[RejectedOut] = Field(default_factory=list)
    catalog: CatalogOut | None = None
    explanation: ExplanationOut | None = None
    job_detail: PlanJobOut | None = Field(
        default=None,
        description="the job as planned: "
        "plan's `job` object (`job` here is the name; schema "
        "version 3 will make `job` this object)",
    )
    solver: SolverOut | None = Field(
        default=None,
        description="every solve of the comparison together: rows, wall_s, proven_optimal, solves",
    )
    per_gpu_explanation: dict[str, str] = Field(
        default_factory=dict,
        description="GPU types with options but no plan: why (deadline "
        "or budget, with the fastest/cheapest option's numbers)",
    )
    per_provider_explanation: dict[str, str] = Field(
        default_factory=dict, description="providers with options but no plan: why"
    )
    mix: MixOut | None = Field(
        default=None,
        description="the mixed cluster against the best single-type plan (as `ccopt plan --json`'s "
        "`mix`); absent when the job has nothing to mix",
    )
