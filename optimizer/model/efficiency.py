"""Achievable compute efficiency (fraction of dense peak) per GPU and precision.

efficiency = E_max(GPU, precision) × hidden/(hidden + 1000) × 1/(1 + 256/(tokens per micro-batch))

E_max is a column of the GPU tables (pricing_data/gpus.csv `default_efficiency`, a GUESS per
GPU anchored on published measurements, never tuned per benchmark case; its basis in
`efficiency_source`); override with PerfAssumptions.efficiency or `ccopt calibrate`. fp8 GEMMs
reach PerfAssumptions.fp8_gemm_factor × it (the one fp8 factor, overridable per job).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from optimizer.model.calibrated import EfficiencyCurve
from optimizer.model.fitted import (
    family_multiplier,
    load_fitted,
    serve_comm_features,
    serve_features,
    serve_multiplier,
    train_multiplier,
)
from optimizer.model.hardware import GpuSpec

if TYPE_CHECKING:  # setup.py is above this module
    from optimizer.model.setup import PerfAssumptions

__all__ = [
    "default_efficiency",
    "attention_efficiency",
    "ATTENTION_KERNEL_FRACTION",
    "size_factor",
    "base_efficiency",
    "achieved_efficiency",
    "calibrated_curve",
    "uncalibrated_efficiency",
    "serve_efficiency_multiplier",
    "fitted_constants",
    "hidden_half",
    "ServeMultipliers",
    "serve_multipliers",
]

HIDDEN_HALF_EFFICIENCY = 1000  # GUESS: hidden size at which matmul efficiency halves (fit to the
#   MPT-7B -> MPT-70B utilisation trend, 0.63 -> 0.70 on A100: llm-foundry, gpus.csv A100 rows)
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


def default_efficiency(gpu: GpuSpec, precision: str, assumptions: PerfAssumptions) -> float:
    """Default achievable fraction of the dense peak of `precision` on `gpu`: the GPU table's
    default_efficiency (a GUESS, see its efficiency_source) × the fp8 factor of `assumptions`
    (fp8 GEMMs; the attention core stays in bf16, step_time splits the FLOPs) or FP32_FACTOR."""
    base = gpu.default_efficiency
    if precision == "fp8":
        return base * assumptions.fp8_gemm_factor
    if precision in ("fp32", "tf32"):
        return base * FP32_FACTOR
    return base


def attention_efficiency(gpu: GpuSpec, kernel: str, gemm_efficiency: float) -> float:
    """Efficiency of the fused attention core: the kernel's published fraction of the 16-bit
    peak (ATTENTION_KERNEL_FRACTION), never above the run's 16-bit GEMM efficiency."""
    frac = ATTENTION_KERNEL_FRACTION.get((gpu.generation, kernel))
    return gemm_efficiency if frac is None else min(gemm_efficiency, frac)


def size_factor(tokens_per_microbatch: float, hidden: float, half: float = HIDDEN_HALF_EFFICIENCY) -> float:
    """Efficiency loss of smaller matmuls: h/(h + half) × 1/(1 + 256/(b·s)). GUESS.

    Larger hidden sizes and more tokens per micro-batch keep tensor cores busier (MAMF sweeps
    in stas00/ml-engineering; the MPT trend of HIDDEN_HALF_EFFICIENCY); `half` defaults to the
    guess 1000 and is scaled by the fitted `shape` term (hidden_half).
    """
    return hidden / (hidden + half) / (1.0 + 256.0 / max(tokens_per_microbatch, 1.0))


def hidden_half(assumptions: PerfAssumptions) -> float:
    """The size curve's half-efficiency hidden size: the guess × the fitted shape term."""
    fit = fitted_constants(assumptions)  # also under an explicit efficiency: the curve's shape
    if fit is None:  # is part of the model, the efficiency its level (ccopt calibrate)
        return HIDDEN_HALF_EFFICIENCY
    return HIDDEN_HALF_EFFICIENCY * family_multiplier(fit, "shape", ["all"])


def fitted_constants(assumptions: PerfAssumptions) -> Any:
    """The FittedConstants in force: the assumptions' own, the packaged fit, or None (un-fitted)."""
    if not assumptions.use_fitted:
        return None
    return assumptions.fitted if assumptions.fitted is not None else load_fitted()


def base_efficiency(
    gpu: GpuSpec, precision: str, assumptions: PerfAssumptions, stack: str = "generic"
) -> tuple[float, bool]:
    """(efficiency before the size curve, calibrated?) of `precision` on `gpu` under `stack`.

    Explicit override > the calibration of the stored runs of this GPU × precision × stack
    (its ceiling: an upper bound of every layout's achieved efficiency) > a job's
    [calibration] or an old store entry of the GPU × precision > default table × the fitted
    multiplier of GPU generation × precision × stack (data/fitted.toml).
    fp8 GEMMs use `assumptions.fp8_gemm_factor` × the bf16 value.
    """
    if assumptions.efficiency is not None:
        return assumptions.efficiency, False
    curve = calibrated_curve(gpu, precision, assumptions, stack)
    if curve is not None:
        return curve.ceiling(uncalibrated_efficiency(gpu, precision, assumptions, stack)), True
    key = (gpu.gpu_id, precision)
    if key in assumptions.calibrated:
        return assumptions.calibrated[key], True
    return uncalibrated_efficiency(gpu, precision, assumptions, stack), False


def uncalibrated_efficiency(
    gpu: GpuSpec, precision: str, assumptions: PerfAssumptions, stack: str = "generic"
) -> float:
    """The base efficiency before any calibration: default table × the fitted multiplier of GPU
    generation × precision × stack (what a calibration's corrections are relative to)."""
    base = default_efficiency(gpu, precision, assumptions)
    fit = fitted_constants(assumptions)
    if fit is not None:
        base *= train_multiplier(fit, gpu, precision, stack)
    return min(base, 1.0)


def calibrated_curve(
    gpu: GpuSpec, precision: str, assumptions: PerfAssumptions, stack: str
) -> EfficiencyCurve | None:
    """The calibration of the stored runs of `gpu` × `precision` × `stack`, or None (no runs,
    or an explicit efficiency)."""
    if assumptions.efficiency is not None:
        return None
    curves = getattr(assumptions, "calibrated_curves", None) or {}
    return curves.get((gpu.gpu_id, precision, stack))


def achieved_efficiency(
    gpu: GpuSpec, precision: str, assumptions: PerfAssumptions, stack: str, size: float
) -> float:
    """Achieved fraction of the dense peak of a layout whose size factor is `size`: the
    calibration of the runs stored for this GPU × precision × stack (optimizer.model.calibrated)
    where there are any, else base_efficiency × size."""
    curve = calibrated_curve(gpu, precision, assumptions, stack)
    if curve is not None:
        return curve.efficiency(size, uncalibrated_efficiency(gpu, precision, assumptions, stack))
    return base_efficiency(gpu, precision, assumptions, stack)[0] * size


def serve_efficiency_multiplier(gpu: GpuSpec, stack: str, assumptions: PerfAssumptions) -> float:
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


def serve_multipliers(gpu: GpuSpec, stack: str, assumptions: PerfAssumptions) -> ServeMultipliers:
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
