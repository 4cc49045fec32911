"""Mechanisms added with the second fit: paged optimizer memory, litgpt bf16-true state,
serving multipliers (compute, all-reduce, MoE expert GEMMs) and the serving GEMM width.

Expected numbers come from the stated formulas by hand, never from the code's output."""

from __future__ import annotations

import math

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.comms import ring_allreduce_s
from optimizer.model.fitted import FittedConstants
from optimizer.model.memory import training_memory
from optimizer.model.presets import PRESETS
from optimizer.model.serving import serving_perf
from optimizer.model.setup import Layout, PerfAssumptions, ServeSetup, TrainingSetup
from optimizer.units import GIB

RAW = PerfAssumptions(use_fitted=False)


def test_paged_optimizer_state_is_outside_the_allocator_and_pageable() -> None:
    # bitsandbytes PagedAdamW8bit: fp32 master 4 B + two 8-bit moments 2 B = 6 B/param
    # (Dettmers et al. 2022), allocated with cudaMallocManaged: not in max_memory_allocated
    spec = PRESETS["llama-2-7b"]
    layout = Layout()
    plain = training_memory(spec, TrainingSetup(seq_len=512, optimizer="adam-8bit"), layout, RAW)
    paged = training_memory(
        spec, TrainingSetup(seq_len=512, optimizer="adam-8bit", paged_optimizer=True), layout, RAW
    )
    assert plain.optimizer * GIB / spec.params() == pytest.approx(6)
    assert paged.optimizer == 0.0
    assert paged.managed * GIB / spec.params() == pytest.approx(6)
    assert paged.total == pytest.approx(plain.total - 6 * spec.params() / GIB)
    # managed pages move to CPU RAM when the card is full (bitsandbytes "Paged optimizers"):
    # the device figure a plan must fit holds no optimizer state
    assert paged.device == pytest.approx(paged.reserved + paged.context)


def test_litgpt_bf16_true_keeps_8_bytes_per_param() -> None:
    # litgpt configs run precision bf16-true: bf16 weights 2 + grads 2 + AdamW m, v in bf16 2 + 2
    spec = PRESETS["llama-2-7b"]
    mem = training_memory(spec, TrainingSetup(seq_len=128, stack="litgpt"), Layout(), RAW)
    assert (mem.weights + mem.gradients + mem.optimizer) * GIB / spec.params() == pytest.approx(8)


def _prefill(
    spec_name: str, fit: FittedConstants, tp: int = 1, gpu: str = "h100", efficiency: float | None = None
) -> float:
    calibrated = {(get_gpu(gpu).gpu_id, "bf16"): efficiency} if efficiency else {}
    a = PerfAssumptions(fitted=fit, calibrated=calibrated)  # a calibration keeps the fit
    serve = ServeSetup(
        weight_precision="bf16", kv_precision="bf16", batch=1, context=2048, stack="generic", output_tokens=1
    )
    return serving_perf(PRESETS[spec_name], serve, get_gpu(gpu), tp, 2047, 1, a).prefill_s


def test_moe_expert_gemm_multiplier_scales_only_the_expert_flops() -> None:
    # Mixtral 8x7B: 32 layers, top-2 of 8 experts, expert FFN 3·4096·14336 parameters, so the
    # routed experts are E = 32·2·3·4096·14336 = 11,274,289,152 of the ~12.9e9 active
    # parameters (Mistral AI: 12.9B active). A 2047-token prefill hits all 8 experts
    # (8·(1 − (6/8)^2047) = 8) with 2047·2/8 = 511.75 rows each: the expert GEMMs run at
    # 0.5 (calibrated) × 511.75/(511.75 + 32) of 989 TFLOPS (bf16, H100) and are compute bound
    # (all experts' weights, 90 GB, read in 34 ms at 3.35 TB/s × 0.8 < 99 ms of GEMM);
    # halving the expert-GEMM multiplier adds exactly that time once more.
    spec = PRESETS["mixtral-8x7b"]
    n, e, p = spec.active_params(), 32 * 2 * 3 * 4096 * 14336, 2047
    assert n == pytest.approx(12.9e9, rel=0.01)
    rows = p * 2 / 8
    expert_s = 2 * p * e / (989e12 * 0.5 * rows / (rows + 32))
    base = _prefill("mixtral-8x7b", FittedConstants(), efficiency=0.5)
    slow = _prefill("mixtral-8x7b", FittedConstants(serve_moe={"all": math.log(0.5)}), efficiency=0.5)
    assert slow - base == pytest.approx(expert_s)
    # a dense model ignores the MoE term
    assert _prefill("llama-2-7b", FittedConstants(serve_moe={"all": math.log(0.5)})) == pytest.approx(
        _prefill("llama-2-7b", FittedConstants())
    )


def test_serving_comm_multiplier_scales_the_all_reduce_bandwidth() -> None:
    # decode all-reduces: 2 per layer of batch·hidden·2 bytes over the link at
    # link_efficiency × nominal × the fitted class multiplier (ring: 2(n−1)/n · bytes / bw)
    spec, gpu, tp, batch = PRESETS["llama-2-70b"], get_gpu("l40s"), 4, 64
    serve = ServeSetup(weight_precision="fp16", batch=batch, context=1024, output_tokens=512)
    fit = FittedConstants(serve_comm={"all": math.log(0.5), "class:pcie": math.log(0.8)})
    perf = serving_perf(spec, serve, gpu, tp, 512, 512, PerfAssumptions(fitted=fit))
    a = PerfAssumptions()
    bw = gpu.intra_node_bw_gb_s * a.link_efficiency * 0.5 * 0.8
    expected = 2 * spec.layers * ring_allreduce_s(batch * spec.hidden * 2, tp, bw, a.small_message_latency_s)
    assert perf.parts_s["decode_comm"] == pytest.approx(expected)


def test_tensor_parallel_serving_gemms_are_narrower() -> None:
    # the size curve h/(h + 1000) at width h/tp relative to the full width: Llama-2-70B at tp 8
    # computes its prefill at (1024/2024)/(8192/9192) of the tp-1 efficiency (minus comm)
    fit = FittedConstants()
    spec = PRESETS["llama-2-70b"]
    a = PerfAssumptions(fitted=fit)
    serve = ServeSetup(weight_precision="bf16", batch=1, context=2048, output_tokens=1)
    gpu = get_gpu("h100")
    one = serving_perf(spec, serve, gpu, 1, 2047, 1, a)
    eight = serving_perf(spec, serve, gpu, 8, 2047, 1, a)
    comm = (
        2
        * spec.layers
        * ring_allreduce_s(
            2047 * spec.hidden * 2, 8, gpu.intra_node_bw_gb_s * a.link_efficiency, a.small_message_latency_s
        )
    )
    factor = (1024 / 2024) / (8192 / 9192)
    assert (eight.prefill_s - comm) == pytest.approx(one.prefill_s / 8 / factor)


def test_fitted_memory_terms_are_per_stack_only() -> None:
    # the activation multiplier is exp(the stack's term): a stale per-method term, a term for
    # all stacks, a stack-family term and another stack's term are ignored
    fit = FittedConstants(
        memory={
            "eager:all": 0.1,
            "stack:litgpt": -0.2,
            "method:lora": 0.5,
            "all": 0.3,
            "fused:all": 0.7,
            "stack:torchtune": 0.9,
        }
    )
    spec = PRESETS["llama-2-7b"]
    layout = Layout(micro_batch=2)
    raw = {
        m: training_memory(spec, TrainingSetup(seq_len=512, stack="litgpt", method=m), layout, RAW)
        for m in ("lora", "qlora")
    }
    fitted = {
        m: training_memory(
            spec, TrainingSetup(seq_len=512, stack="litgpt", method=m), layout, PerfAssumptions(fitted=fit)
        )
        for m in ("lora", "qlora")
    }
    for m in ("lora", "qlora"):
        assert fitted[m].activations == pytest.approx(raw[m].activations * math.exp(-0.2))
        assert fitted[m].weights == raw[m].weights  # states are exact byte counts, never fitted
