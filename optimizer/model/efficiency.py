"""Achievable compute efficiency (fraction of dense peak) per GPU and precision.

efficiency = E_max(GPU, precision) × hidden/(hidden + 1000) × 1/(1 + 256/(tokens per micro-batch))

E_max values are GUESSES anchored on published measurements, one per GPU type (never tuned per
benchmark case); override with PerfAssumptions.efficiency or `ccopt calibrate`.
- A100: MosaicML llm-foundry reports hardware FLOPs utilisation rising from ≈0.63 (MPT-7B) to
  ≈0.70 (MPT-30B/70B) on A100-80GB; max achievable bf16 matmul ≈ 86% of peak
  (stas00/ml-engineering MAMF table) -> E_max 0.78 with the hidden-size curve below.
- H100 SXM: MAMF ≈ 80% of 989 (ml-engineering) but end-to-end MFU 40-50% (llm-foundry MPT-7B
  ≈ 0.46; Llama 3 paper §3.3.2: 38-43% BF16 MFU at scale) -> E_max 0.57.
- Other GPUs: by analogy (PCIe parts and consumer cards somewhat lower clocks under sustained
  load; AMD MI300X MAMF ≈ 50% of peak per ml-engineering) — GUESSES.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from optimizer.model.fitted import (
    family_multiplier,
    gpu_generation,
    load_fitted,
    serve_comm_features,
    serve_features,
    serve_multiplier,
    train_multiplier,
)
from optimizer.model.hardware import GpuSpec

__all__ = [
    "default_efficiency",
    "attention_efficiency",
    "ATTENTION_KERNEL_FRACTION",
    "size_factor",
    "DEFAULT_EFFICIENCY",
    "base_efficiency",
    "serve_efficiency_multiplier",
    "fitted_constants",
    "hidden_half",
    "ServeMultipliers",
    "serve_multipliers",
]

DEFAULT_EFFICIENCY: dict[str, float] = {
    "A100-80GB": 0.78,
    "A100-40GB": 0.78,
    "A100-80GB-PCIE": 0.72,
    "A100-40GB-PCIE": 0.72,
    "H100-80GB": 0.57,
    "H100-80GB-PCIE": 0.55,
    "H100-NVL-94GB": 0.55,
    "H200-141GB": 0.60,
    "GH200-96GB": 0.60,
    "B200": 0.50,
    "B300": 0.50,
    "L40S": 0.60,
    "L4": 0.55,
    "A10G": 0.60,
    "A10": 0.60,
    "A6000": 0.60,
    "RTX6000-Ada": 0.60,
    "RTX4090": 0.70,
    "RTX3090": 0.65,
    # GeForce cards of pricing_data/gpus_consumer.csv: by analogy with the 3090 / 4090 / T4 /
    # B200 of the same generation (GUESSES)
    "RTX3090Ti": 0.65,
    "RTX3080": 0.65,
    "RTX3060": 0.65,
    "RTX4080": 0.70,
    "RTX4070Ti": 0.70,
    "RTX5090": 0.50,
    "RTX2080Ti": 0.45,
    "RTX2070": 0.45,
    "T4": 0.45,
    "V100-16GB": 0.60,
    "V100-32GB": 0.60,
    "MI300X": 0.45,
    "MI355X": 0.45,
    "MI250X": 0.45,
}
HIDDEN_HALF_EFFICIENCY = 1000  # GUESS: hidden size at which matmul efficiency halves (fit to
#                                the MPT-7B -> MPT-70B utilisation trend above)
FP8_FACTOR = 0.8  # GUESS: fp8 GEMM efficiency = 0.8 × bf16 efficiency (≈1.6× bf16 GEMM speed);
#                   the attention core stays in bf16 (step_time splits the FLOPs)
FP32_FACTOR = 0.8  # GUESS: TF32 matmuls reach a lower fraction of their peak than bf16
#: fraction of the dense 16-bit peak a fused attention kernel reaches in training (forward +
#: backward), per GPU generation × kernel generation; absent: the GEMM efficiency applies.
ATTENTION_KERNEL_FRACTION: dict[tuple[str, str], float] = {
    # FlashAttention-2 (Dao 2023, arXiv:2307.08691 abstract/§4: 50-73% of A100 peak forward,
    # lower backward) -> 0.60 forward+backward, GUESS within that range
    ("ampere-dc", "fa2"): 0.60,
    ("ampere-dc", "fa3"): 0.60,
    # FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608 abstract): "FlashAttention-2
    # achiev[es] only 35% utilization on the H100"; FA3 reaches 75% forward (740 TFLOPS), its
    # backward less -> 0.60 forward+backward, GUESS
    ("hopper", "fa2"): 0.35,
    ("hopper", "fa3"): 0.60,
    # GUESS: FA2 on the small Ampere / Ada parts (sm86/sm89, supported by flash-attn 2)
    ("ampere", "fa2"): 0.55,
    ("ampere", "fa3"): 0.55,
    ("ada", "fa2"): 0.55,
    ("ada", "fa3"): 0.55,
}


def default_efficiency(gpu: GpuSpec, precision: str) -> float:
    """Default achievable fraction of the dense peak of `precision` on `gpu` (a guess, see above)."""
    base = DEFAULT_EFFICIENCY.get(gpu.gpu_id, 0.45)
    if precision == "fp8":
        return base * FP8_FACTOR
    if precision in ("fp32", "tf32"):
        return base * FP32_FACTOR
    return base


def attention_efficiency(gpu: GpuSpec, kernel: str, gemm_efficiency: float) -> float:
    """Efficiency of the fused attention core: the kernel's published fraction of the 16-bit
    peak (ATTENTION_KERNEL_FRACTION), never above the run's 16-bit GEMM efficiency."""
    frac = ATTENTION_KERNEL_FRACTION.get((gpu_generation(gpu), kernel))
    return gemm_efficiency if frac is None else min(gemm_efficiency, frac)


def size_factor(tokens_per_microbatch: float, hidden: float, half: float = HIDDEN_HALF_EFFICIENCY) -> float:
    """Efficiency loss of smaller matmuls: h/(h + half) × 1/(1 + 256/(b·s)). GUESS.

    Larger hidden sizes and more tokens per micro-batch keep tensor cores busier (MAMF sweeps
    in stas00/ml-engineering; the MPT trend in the module docstring); `half` defaults to the
    guess 1000 and is scaled by the fitted `shape` term (hidden_half).
    """
    return hidden / (hidden + half) / (1.0 + 256.0 / max(tokens_per_microbatch, 1.0))


def hidden_half(assumptions: Any) -> float:
    """The size curve's half-efficiency hidden size: the guess × the fitted shape term."""
    fit = fitted_constants(assumptions)  # also under an explicit efficiency: the curve's shape
    if fit is None:  # is part of the model, the efficiency its level (ccopt calibrate)
        return HIDDEN_HALF_EFFICIENCY
    return HIDDEN_HALF_EFFICIENCY * family_multiplier(fit, "shape", ["all"])


def fitted_constants(assumptions: Any) -> Any:
    """The FittedConstants in force: the assumptions' own, the packaged fit, or None (un-fitted)."""
    if not assumptions.use_fitted:
        return None
    return assumptions.fitted if assumptions.fitted is not None else load_fitted()


def base_efficiency(
    gpu: GpuSpec, precision: str, assumptions: Any, stack: str = "generic"
) -> tuple[float, bool]:
    """(efficiency before the size curve, calibrated?) of `precision` on `gpu` under `stack`.

    Explicit override > user calibration (`ccopt calibrate`) > default table × the fitted
    multiplier of GPU generation × precision × stack (data/fitted.toml). fp8 GEMMs use
    `assumptions.fp8_gemm_factor` × the bf16 value.
    """
    if assumptions.efficiency is not None:
        return assumptions.efficiency, False
    key = (gpu.gpu_id, precision)
    if key in assumptions.calibrated:
        return assumptions.calibrated[key], True
    base = DEFAULT_EFFICIENCY.get(gpu.gpu_id, 0.45)
    if precision == "fp8":
        base *= assumptions.fp8_gemm_factor
    elif precision in ("fp32", "tf32"):
        base *= FP32_FACTOR
    fit = fitted_constants(assumptions)
    if fit is not None:
        base *= train_multiplier(fit, gpu, precision, stack)
    return min(base, 1.0), False


def serve_efficiency_multiplier(gpu: GpuSpec, stack: str, assumptions: Any) -> float:
    """Fitted multiplier of serving bandwidth and compute efficiency (1 when un-fitted)."""
    if assumptions.efficiency is not None:
        return 1.0
    fit = fitted_constants(assumptions)
    return serve_multiplier(fit, gpu, stack) if fit is not None else 1.0


@dataclass(frozen=True)
class ServeMultipliers:
    """Fitted serving multipliers (1 when un-fitted): decode HBM bandwidth, compute efficiency,
    all-reduce bandwidth and MoE expert-GEMM efficiency (data/fitted.toml)."""

    bandwidth: float = 1.0
    flops: float = 1.0
    comm: float = 1.0
    moe: float = 1.0


def serve_multipliers(gpu: GpuSpec, stack: str, assumptions: Any) -> ServeMultipliers:
    """The fitted serving multipliers of `stack` on `gpu` (all 1 with an explicit efficiency)."""
    fit = fitted_constants(assumptions)
    if fit is None or assumptions.efficiency is not None:
        return ServeMultipliers()
    feats = serve_features(gpu, stack)
    return ServeMultipliers(
        bandwidth=family_multiplier(fit, "serve", feats),
        flops=family_multiplier(fit, "serve_flops", feats),
        comm=family_multiplier(fit, "serve_comm", serve_comm_features(gpu)),
        moe=family_multiplier(fit, "serve_moe", ["all"]),
    )
