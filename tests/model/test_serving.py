"""Serving model: decode is bandwidth-bound, prefill compute-bound (hand-derived)."""

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.presets import PRESETS
from optimizer.model.serving import serving_perf
from optimizer.model.setup import PerfAssumptions, ServeSetup

A = PerfAssumptions(efficiency=0.5, bw_efficiency=0.8)


def test_decode_step_reads_weights_and_kv_once() -> None:
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("A100-80GB")
    perf = serving_perf(
        spec, ServeSetup(batch=1), gpu, tp=1, prompt_tokens=128, output_tokens=128, assumptions=A
    )
    # weights 6,738,415,616 × 2 B + KV 0.5 MiB × (128 + 64 mean context) tokens,
    # read at 2039 GB/s × 0.8
    bytes_step = 6_738_415_616 * 2 + 524_288 * 192
    assert perf.decode_step_s == pytest.approx(bytes_step / (2039e9 * 0.8))
    assert perf.bound == "memory"


def test_prefill_is_compute_bound() -> None:
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("A100-80GB")
    p = 1024
    perf = serving_perf(spec, ServeSetup(batch=1), gpu, tp=1, prompt_tokens=p, output_tokens=1, assumptions=A)
    # 2·N·p, the LM head (32000 × 4096) only for the last prompt token, + causal attention
    # 2·L·p²·(a·d), at 312 TFLOPS fp16 × 0.5; the weight read (13.5 GB / 1.6 TB/s = 8 ms) is
    # below the GEMM time, so the GEMM roofline is compute
    head = 32000 * 4096
    flops = 2 * (6_738_415_616 - head) * p + 2 * head + 2 * 32 * p * p * 4096
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


def test_pass_costs_the_sum_of_per_kernel_rooflines() -> None:
    # Llama-2-7B, A100, batch 64 at mean context 1024 + 64: the GEMMs are weight-read bound
    # (64 tokens: 2·N·64 = 0.86 TFLOP / 156 TFLOP/s = 5.5 ms < 13.5 GB / 1.63 TB/s = 8.3 ms)
    # and attention is KV-read bound; the two kernels add, they do not overlap
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("A100-80GB")
    serve = ServeSetup(batch=64, context=1152, output_tokens=128)
    perf = serving_perf(spec, serve, gpu, 1, 1024, 128, A)
    bw = 2039e9 * 0.8
    weights = 6_738_415_616 * 2 / bw
    kv = 524_288 * 64 * (1024 + 64) / bw
    assert perf.decode_step_s == pytest.approx(weights + kv)


def test_static_batching_prefills_the_whole_batch_then_decodes() -> None:
    # TensorRT-LLM v0.9 gptSessionBenchmark: B prompts in one pass, then O steps together
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("A100-80GB")
    b, p, o = 32, 128, 128
    serve = ServeSetup(batch=b, context=p + o, output_tokens=o, batching="static", stack="tensorrt-llm")
    perf = serving_perf(spec, serve, gpu, 1, p, o, A)
    head = 32000 * 4096
    first = (2 * (6_738_415_616 - head) * b * p + 2 * head * b + 2 * 32 * p * b * p * 4096) / (312e12 * 0.5)
    assert perf.parts_s["cycle"] == pytest.approx(first + o * perf.decode_step_s)
    assert perf.output_tokens_per_s == pytest.approx(b * o / perf.parts_s["cycle"])


def test_iteration_token_budget_caps_fused_concurrency() -> None:
    # max_num_tokens 2048 with 2048/128 requests: each iteration carries B·(1 + 2048/128)
    # = 17·B tokens, so at most 2048/17 ≈ 120.5 sequences generate at once
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("H100-80GB")
    serve = ServeSetup(batch=400, context=2176, output_tokens=128, stack="tensorrt-llm", max_num_tokens=2048)
    perf = serving_perf(spec, serve, gpu, 1, 2048, 128, A)
    assert perf.concurrency == pytest.approx(2048 / 17)


def test_trtllm_kv_fraction_is_of_the_free_memory() -> None:
    # TensorRT-LLM free_gpu_memory_fraction 0.95 is of what the rest leaves free. Llama-3-70B
    # fp8 on one H100 (80 GiB): weights (70,553,706,496 − 2·128,256·8,192 embedding/head
    # kept 16-bit) × 1 B + 2,101,346,304 × 2 B = 67.665 GiB; activations of one 8192-token
    # chunk 8192·(4·8192 + 3·28672)·2 B = 1.8125 GiB (+ 4 B logits per vocab row per
    # sequence); workspace 0.25, context 0.8 GiB. KV per sequence 2·80·8·128·1 B ×
    # (2176 + 32 half block) = 0.33691 GiB -> 0.95 × (80 − 67.665 − 1.8125 − 0.25 − 0.8 −
    # 0.0005·26) / 0.33691 = 26.7 -> 26 sequences (the "total" rule would admit 16)
    from optimizer.model.serving import serving_max_batch

    spec, gpu = PRESETS["llama-3-70b"], get_gpu("H100-80GB")
    trt = ServeSetup(
        weight_precision="fp8", kv_precision="fp8", context=2176, output_tokens=2048, stack="tensorrt-llm"
    )
    assert serving_max_batch(spec, trt, gpu, 1) == 26


def test_fp8_gemm_factor_override_changes_serving_speed() -> None:
    # one fp8 factor (PerfAssumptions.fp8_gemm_factor) for training and serving: Llama-2-7B fp8
    # weights on one H100 (fp8 peak 1979 TFLOPS, table efficiency 0.57), un-fitted. The dense
    # GEMMs of a 4,096-token prefill run at 1979e12 × 0.57 × factor; the attention core stays at
    # the 16-bit efficiency, so halving the factor adds exactly the GEMM time at 0.8 once more.
    spec, gpu, p = PRESETS["llama-2-7b"], get_gpu("H100-80GB"), 4096
    setup = ServeSetup(weight_precision="fp8")

    def prefill(factor: float) -> float:
        a = PerfAssumptions(use_fitted=False, fp8_gemm_factor=factor)
        return serving_perf(spec, setup, gpu, 1, p, 1, a).prefill_s

    head = 32000 * 4096
    gemm_flops = 2 * (6_738_415_616 - head) * p + 2 * head
    gemm_s_at_08 = gemm_flops / (1979e12 * 0.57 * 0.8)
    assert prefill(0.4) - prefill(0.8) == pytest.approx(gemm_s_at_08, rel=1e-6)
