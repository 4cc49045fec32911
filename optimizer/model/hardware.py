"""GPU hardware description used by the performance model (pure data, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GpuSpec", "PRECISIONS"]

#: training / compute precisions the model knows
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model. Throughputs are dense peaks (no 2:4 sparsity)."""

    gpu_id: str
    vendor: str
    memory_gib: float
    mem_bandwidth_gb_s: float  # GB/s (decimal), HBM/GDDR peak
    fp32_tflops: float | None
    tf32_tflops: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    intra_node_link: str  # nvlink | pcie | xgmi | nvlink-c2c
    intra_node_bw_gb_s: float  # per GPU, one direction, GB/s
    #: architecture family grouping the fitted constants (data/fitted.toml): "ampere-dc" (A100)
    #: apart from the small Amperes, "hopper", "ada", ...
    generation: str
    #: achievable fraction of the dense 16-bit peak before the size curve (model/efficiency.py);
    #: a GUESS per GPU, its basis in the table's efficiency_source
    default_efficiency: float
    #: Gbit/s per node between nodes assumed when no instance or flag gives one
    default_inter_node_gbps: float
    #: the network that figure assumes ("8 × 200 Gbit/s HDR InfiniBand (DGX A100 class)")
    fabric: str
    tdp_w: float | None = None
    street_price_usd: float | None = None
    spec_confidence: str = "published"  # published | derived | estimated | unverified
    aliases: tuple[str, ...] = ()
    pcie_gen: int | None = None  # PCIe generation of the board's host link
    pcie_lanes: int | None = None  # lanes of that link
    #: PCIe peer-to-peer between two such GPUs: False for GeForce (traffic goes through host
    #: memory), None unknown (modelled as peer-to-peer); NVLink/xGMI boards are peers
    peer_to_peer: bool | None = None

    def peak_tflops(self, precision: str, tf32: bool = True) -> float | None:
        """Dense tensor peak for a compute precision, or None if unsupported.

        fp32 training uses TF32 tensor cores where present, else plain FP32. PyTorch ≥ 1.12
        leaves TF32 matmuls off unless `allow_tf32` or TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (set
        by NGC containers) turns them on; the exported scripts of an fp32 plan set the latter
        (report/export/training.py fp32_env). `tf32=False`: a run with them off, IEEE fp32 on
        the CUDA cores (~7× slower on Hopper: 67 vs 495 dense TFLOPS).
        """
        if precision == "fp32":
            return (self.tf32_tflops if tf32 else None) or self.fp32_tflops
        value = {
            "tf32": self.tf32_tflops,
            "bf16": self.bf16_tflops,
            "fp16": self.fp16_tflops,
            "fp8": self.fp8_tflops,
        }.get(precision)
        return value or None

    def supports(self, precision: str) -> bool:
        """True if the GPU has a tensor path for `precision`."""
        return self.peak_tflops(precision) is not None
