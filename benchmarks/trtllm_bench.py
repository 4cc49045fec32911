"""The engine settings `trtllm-bench build --dataset` picks (TensorRT-LLM v0.12-v1.x).

Mirrors tensorrt_llm/bench/build/tuning.py (calc_engine_setting / finetune_setting; the
v0.15-v0.17 file, unchanged in substance through v1.0, where get_benchmark_engine_settings calls
it for FP8 and unquantised checkpoints), read in NVIDIA/TensorRT-LLM:
- KV bytes per token = 2 · layers · max(tp, kv_heads) · head_size · (1 if FP8 KV else 2);
- engine size = param_count / 1e9 × (1 if FP8 else 2), against get_device_memory() × GPUs
  (pynvml total, GiB: tensorrt_llm/bench/build/utils.py);
- requests in KV = 0.95 × (memory − engine) / (KV per token × (ISL + OSL));
- raw_bs = min(requests, 4096) / pp; raw_tokens = min(raw_bs · (1 + ISL/OSL), 32768);
- max_batch_size rounded up to 32 (min 64) below 256, to 128 below 1024, else to 256;
- max_num_tokens rounded up to 256 (min 2048) below 4096, to 512 below 8192, else to 1024.
The perf-overview page (v0.17, 258c754) builds every engine this way ("trtllm-bench build
... --dataset $dataset_file"), so these are the benchmark's max_batch_size / max_num_tokens.
"""

from __future__ import annotations

import math

from optimizer.model.hardware import GpuSpec
from optimizer.model.spec import ModelSpec

__all__ = ["engine_settings"]


def engine_settings(
    spec: ModelSpec, gpu: GpuSpec, tp: int, isl: int, osl: int, fp8_weights: bool, fp8_kv: bool, pp: int = 1
) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) trtllm-bench builds for this model and dataset."""
    kv_gib = 2 * spec.layers * max(tp, spec.n_kv_heads) * spec.d_head * (1 if fp8_kv else 2) / 1024**3
    engine = spec.params() / 1000**3 * (1 if fp8_weights else 2)
    requests = 0.95 * (gpu.memory_gib * tp * pp - engine) / (kv_gib * (isl + osl))
    raw_bs = min(requests, 4096) / pp
    raw_tokens = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        max_bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        max_bs = 128 * math.ceil(raw_bs / 128)
    else:
        max_bs = 256 * math.ceil(raw_bs / 256)
    if raw_tokens < 4096:
        max_tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        max_tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        max_tokens = 1024 * math.ceil(raw_tokens / 1024)
    return max_bs, max_tokens
