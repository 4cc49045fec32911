"""trtllm-bench engine settings (tensorrt_llm/bench/build/tuning.py), numbers by hand."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from trtllm_bench import engine_settings  # noqa: E402

from optimizer.inputs.gpus import get_gpu  # noqa: E402
from optimizer.model.presets import PRESETS  # noqa: E402


def test_llama3_8b_fp8_h100_long_output() -> None:
    # KV 2·32·8·128·1 B = 6.1035e-5 GiB/token; engine 8.030e9/1e9 × 1 = 8.03; requests
    # 0.95·(80 − 8.03)/(6.1035e-5 · 2176) = 514.8 -> max_bs 128·ceil(514.8/128) = 640;
    # tokens 514.8 · (1 + 128/2048) = 547 -> the 2048 minimum
    assert engine_settings(PRESETS["llama-3-8b"], get_gpu("H100-80GB"), 1, 128, 2048, True, True) == (
        640,
        2048,
    )


def test_short_requests_hit_the_batch_cap() -> None:
    # 128/128 on H200 (141 GiB): 0.95·(141 − 8.03)/(6.1035e-5 · 256) = 8085 requests ->
    # min(8085, 4096) = 4096 -> max_bs 4096; tokens 4096 · 2 = 8192 -> 1024·8 = 8192
    assert engine_settings(PRESETS["llama-3-8b"], get_gpu("H200"), 1, 128, 128, True, True) == (4096, 8192)
