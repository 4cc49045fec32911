"""Achievable compute efficiency (fraction of dense peak) per GPU and precision.

These are GUESSES anchored on published measurements, one default per GPU family and precision
(never tuned per benchmark case); override with PerfAssumptions.efficiency or `ccopt calibrate`.
- A100: Megatron-LM reached 52% of peak end to end on GPT-3 175B (Narayanan et al. 2021, §5.1,
  163 of 312 TFLOPS incl. communication); max achievable bf16 matmul ≈ 86% of peak
  (stas00/ml-engineering MAMF table) -> 0.60 for the compute part.
- H100 SXM: MAMF ≈ 80% of 989 (ml-engineering); end-to-end MFU 38-50% reported for Llama
  training (torchtitan, Llama 3 paper §3.3.2: 38-43% BF16 MFU) -> 0.50.
- fp8: Llama-3-scale fp8 training reaches ~1.3-1.5× bf16 throughput -> 0.32 of fp8 peak.
- PCIe / consumer / older parts: lower clocks under sustained load and smaller caches -> 0.50
  (V100 0.45, T4 0.35: GUESSES).
"""

from __future__ import annotations

from optimizer.model.hardware import GpuSpec

__all__ = ["default_efficiency", "size_factor", "DEFAULT_EFFICIENCY"]

DEFAULT_EFFICIENCY: dict[str, float] = {
    "A100-80GB": 0.60, "A100-40GB": 0.60, "A100-80GB-PCIE": 0.55, "A100-40GB-PCIE": 0.55,
    "H100-80GB": 0.50, "H100-80GB-PCIE": 0.48, "H100-NVL-94GB": 0.48, "H200-141GB": 0.52,
    "GH200-96GB": 0.52, "B200": 0.45, "B300": 0.45,
    "L40S": 0.50, "L4": 0.45, "A10G": 0.50, "A10": 0.50, "A6000": 0.50, "RTX6000-Ada": 0.50,
    "RTX4090": 0.55, "RTX3090": 0.55,
    "T4": 0.35, "V100-16GB": 0.45, "V100-32GB": 0.45,
    "MI300X": 0.35, "MI355X": 0.35, "MI250X": 0.35,
}
FP8_FACTOR = 0.64  # GUESS: fp8 efficiency = 0.64 × bf16 efficiency (≈1.3× speed at 2× peak)
FP32_FACTOR = 0.8  # GUESS: TF32 matmuls reach a lower fraction of their peak than bf16


def default_efficiency(gpu: GpuSpec, precision: str) -> float:
    """Default achievable fraction of the dense peak of `precision` on `gpu` (a guess, see above)."""
    base = DEFAULT_EFFICIENCY.get(gpu.gpu_id, 0.45)
    if precision == "fp8":
        return base * FP8_FACTOR
    if precision in ("fp32", "tf32"):
        return base * FP32_FACTOR
    return base


def size_factor(tokens_per_microbatch: float, hidden_per_gpu: float) -> float:
    """Efficiency loss of small matmuls: 1/(1 + 128/(h/tp)) × 1/(1 + 256/(b·s)). GUESS.

    Shape of the curve follows the MAMF sweeps in stas00/ml-engineering (throughput falls off
    below a few thousand rows/columns); the constants are guesses.
    """
    return 1.0 / (1.0 + 128.0 / max(hidden_per_gpu, 1.0)) / (1.0 + 256.0 / max(tokens_per_microbatch, 1.0))
