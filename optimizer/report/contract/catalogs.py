"""The JSON contract of the list commands: `ccopt prices`, `ccopt gpus`, `ccopt models`,
`ccopt stacks` (each prints a JSON array of rows; every row carries `schema_version`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, RootModel

from optimizer.report.contract.common import SCHEMA_VERSION, Contract, PriceOut
from optimizer.report.contract.train import PriceFlagOut

__all__ = [
    "Row",
    "PriceRowOut",
    "PricesOutput",
    "GpuRowOut",
    "GpusOutput",
    "ModelRowOut",
    "ModelsOutput",
    "StackRowOut",
    "StacksOutput",
]


class Row(Contract):
    """A row of a list command: the array stays the documented shape (prices: "a list of
    offering rows"), so the version rides on every row."""

    schema_version: int = SCHEMA_VERSION


class PriceRowOut(Row):
    """One catalog offering (the columns of pricing_data/offerings.csv, plus aligned names)."""

    provider: str
    instance_type: str
    region: str
    gpu_id: str
    gpus_per_instance: int
    vcpus: float | None
    ram_gib: float | None
    intra_node_link: str
    intra_node_bw_gb_s: float
    inter_node_gbps: float
    inter_node_kind: str
    inter_node_is_default: bool
    max_instances: int | None
    pricing_model: str
    usd_per_hour: float
    usd_per_gpu_hour: float
    commitment_hours: float
    derived: bool
    as_of: str
    source: str
    gpu: str = Field(description="same as gpu_id (the name plans use)")
    instance: str = Field(description="same as instance_type (the name plans use)")
    pricing: str = Field(description="same as pricing_model (the name plans use)")
    flags: list[PriceFlagOut] = Field(description="price-sanity rules this row trips")
    price_source: str | None = Field(
        default=None, description="bundled | refreshed | file | overlay (your prices changed it)"
    )
    price: PriceOut | None = Field(default=None, description="source, date, age and staleness of the price")


class PricesOutput(RootModel[list[PriceRowOut]]):
    """`ccopt prices --json`: the offerings, cheapest GPU-hour first."""


class GpuRowOut(Row):
    gpu_id: str
    gpu: str = Field(description="same as gpu_id (the name plans use)")
    vendor: str
    memory_gib: float = Field(description="the card's memory, GiB (old name of gpu_memory_gib)")
    gpu_memory_gib: float = Field(description="the card's memory, GiB (as in plans and estimate)")
    mem_bandwidth_gb_s: float
    fp32_tflops: float | None
    tf32_tflops: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    intra_node_link: str
    intra_node_bw_gb_s: float
    tdp_w: float | None
    street_price_usd: float | None
    spec_confidence: str = Field(description="published | derived | estimated | unverified")
    aliases: list[str]
    pcie_gen: int | None = Field(default=None, description="PCIe generation of the host link")
    pcie_lanes: int | None = Field(default=None, description="lanes of the host link")
    peer_to_peer: bool | None = Field(
        default=None,
        description="PCIe peer-to-peer between two such GPUs (false: through host memory; null: unknown)",
    )
    generation: str = Field(
        description="architecture family grouping the fitted constants (ampere-dc, hopper, ...)"
    )
    default_efficiency: float = Field(
        description="achievable share of the dense 16-bit peak assumed (a GUESS)"
    )
    default_inter_node_gbps: float = Field(
        description="Gbit/s per node between nodes assumed when no instance says"
    )
    fabric: str = Field(description="the network that figure assumes")


class GpusOutput(RootModel[list[GpuRowOut]]):
    """`ccopt gpus --json`: the GPU catalog (dense peaks, no sparsity)."""


class ModelRowOut(Row):
    """A preset: a transformer shape, or a per-sample profile (shape fields null)."""

    name: str
    kind: str = Field(default="transformer", description="transformer | profile")
    params: int
    active_params: int
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    ffn: int | None
    ffn_kind: str | None
    vocab: int | None
    moe_experts: int | None
    max_seq_len: int | None
    sample_tokens: int | None = Field(default=None, description="tokens per sample (ViT: 197)")
    sample_unit: str | None = Field(default=None, description="profile: what a sample is")
    forward_gflops_per_sample: float | None = Field(
        default=None, description="profile: trained forward GFLOPs per sample; null: unknown"
    )
    measured_points: int = Field(default=0, description="profile: bundled measured runs")
    notes: str | None = None


class ModelsOutput(RootModel[list[ModelRowOut]]):
    """`ccopt models --json`: the model presets."""


class StackRowOut(Row):
    name: str
    kind: str = Field(description="train | serve")
    description: str
    values: dict[str, Any] = Field(description="each default with {value, guess, source}")


class StacksOutput(RootModel[list[StackRowOut]]):
    """`ccopt stacks --json`: the software-stack profiles (optimizer/model/data/stacks.toml)."""
