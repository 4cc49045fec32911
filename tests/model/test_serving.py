"""Serving model: decode is bandwidth-bound, prefill compute-bound (hand-derived)."""

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.presets import PRESETS
from optimizer.model.serving import serving_perf
from optimizer.model.setup import PerfAssumptions, ServeSetup

A = PerfAssumptions(efficiency=0.5, bw_efficiency=0.8)


def test_decode_step_reads_weights_and_kv_once() -> None:
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("A100-80GB")
    perf = serving_perf(spec, ServeSetup(batch=1), gpu, tp=1, prompt_tokens=128,
                        output_tokens=128, assumptions=A)
    # weights 6,738,415,616 × 2 B + KV 0.5 MiB × (128 + 64 mean context) tokens,
    # read at 2039 GB/s × 0.8
    bytes_step = 6_738_415_616 * 2 + 524_288 * 192
    assert perf.decode_step_s == pytest.approx(bytes_step / (2039e9 * 0.8))
    assert perf.bound == "memory"


def test_prefill_is_compute_bound() -> None:
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("A100-80GB")
    p = 1024
    perf = serving_perf(spec, ServeSetup(batch=1), gpu, tp=1, prompt_tokens=p,
                        output_tokens=1, assumptions=A)
    # 2·N·p + causal attention 2·L·p²·(a·d), at 312 TFLOPS fp16 × 0.5
    flops = 2 * 6_738_415_616 * p + 2 * 32 * p * p * 4096
    assert perf.prefill_s == pytest.approx(flops / (312e12 * 0.5))
    assert perf.ttft_s == pytest.approx(perf.prefill_s + perf.decode_step_s)


def test_batching_raises_throughput_and_latency() -> None:
    spec, gpu = PRESETS["mistral-7b"], get_gpu("L40S")
    one = serving_perf(spec, ServeSetup(batch=1), gpu, 1, 512, 256)
    many = serving_perf(spec, ServeSetup(batch=32), gpu, 1, 512, 256)
    assert many.output_tokens_per_s > 10 * one.output_tokens_per_s
    assert many.tpot_s > one.tpot_s


def test_int4_weights_read_fewer_bytes() -> None:
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("T4")
    fp16 = serving_perf(spec, ServeSetup(batch=1, weight_precision="fp16"), gpu, 1, 128, 128)
    int4 = serving_perf(spec, ServeSetup(batch=1, weight_precision="int4"), gpu, 1, 128, 128)
    assert int4.decode_step_s < fp16.decode_step_s / 3
