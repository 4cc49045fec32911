"""Inference performance of one replica: prefill (compute-bound) and decode (bandwidth-bound).

Roofline view (Williams et al. 2009) as applied to LLM inference in Pope et al. 2022
("Efficiently Scaling Transformer Inference", §2): prefill costs 2·N FLOPs per prompt token;
each decode step reads all weights plus the KV cache of every sequence in the batch once.
A forward pass is a sequence of kernels, each with its own roofline, so it costs the sum of
per-operator max(bytes / bandwidth, FLOPs / rate) (Yuan et al. 2024, "LLM Inference Unveiled:
Survey and Roofline Model Insights", arXiv:2402.16363 §3), not one max over the whole pass.
Continuous batching (Yu et al. 2022, Orca; vLLM) interleaves prefills with decode steps;
static batching (TensorRT-LLM gptSessionBenchmark before v0.10) runs a batch start to end.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from optimizer.model.bands import serve_centre
from optimizer.model.comms import ring_allreduce_s
from optimizer.model.efficiency import default_efficiency, hidden_half, serve_multipliers
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import kv_cache_bytes_per_token, serving_memory, serving_weight_bytes
from optimizer.model.pcie import intra_node_bw_gb_s
from optimizer.model.setup import WEIGHT_PRECISIONS, PerfAssumptions, ServeSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.units import GB

__all__ = ["ServePerf", "serving_perf", "compute_precision_for_weights", "serving_max_batch"]


@dataclass(frozen=True)
class ServePerf:
    """Latency and throughput of one replica at a fixed concurrency."""

    ttft_s: float  # time to first token of a request (its prefill + one step)
    tpot_s: float  # time per output token seen by a request, prefills interleaved
    decode_step_s: float  # one decode step of the whole batch
    prefill_s: float  # prefill of one request
    output_tokens_per_s: float
    requests_per_s: float
    bound: str  # "memory" or "compute" for the decode step
    parts_s: dict[str, float] = field(default_factory=dict)  # per-iteration terms (seconds)
    concurrency: float = 0.0  # sequences generating at once in the steady state


def compute_precision_for_weights(gpu: GpuSpec, weight_precision: str) -> str:
    """Matmul precision: fp8/int8 weights use the 8-bit path where the GPU has one; weight-only
    4-bit formats dequantise to fp16 (AWQ/GPTQ kernels)."""
    if weight_precision in ("fp8", "int8") and gpu.fp8_tflops:
        return "fp8"
    if gpu.bf16_tflops and weight_precision == "bf16":
        return "bf16"
    return "fp16" if gpu.fp16_tflops else "bf16"


@dataclass(frozen=True)
class _Replica:
    """Achieved rates of a tp-way replica and the byte split of its weights."""

    model: ModelSpec
    tp: int
    gemm_rate: float  # FLOP/s of the dense GEMMs (all tp GPUs)
    attn_rate: float  # FLOP/s of the attention kernels (16-bit, all tp GPUs)
    bw: float  # achieved HBM bytes/s (all tp GPUs)
    link_bw: float  # GB/s per GPU for the all-reduce
    lat: float  # s per all-reduce step
    dense_bytes: float  # weights outside the routed experts
    expert_bytes: float  # one routed expert (all layers)
    kv_token_bytes: float  # KV bytes per token (all layers)
    moe_eff: float  # fitted expert-GEMM multiplier
    half_tokens: float  # tokens per expert at half expert-GEMM efficiency


def _replica(model: ModelSpec, serve: ServeSetup, gpu: GpuSpec, tp: int, a: PerfAssumptions) -> _Replica:
    precision = compute_precision_for_weights(gpu, serve.weight_precision)
    fit = serve_multipliers(gpu, serve.stack, a)  # fitted per generation × stack, GPU class
    eff = min(
        1.0,
        (
            a.efficiency
            if a.efficiency is not None
            else a.calibrated.get((gpu.gpu_id, precision), default_efficiency(gpu, precision, a))
        )
        * fit.flops,
    )
    # GEMMs of a tp-way split replica are tp times narrower per GPU: the training size curve
    # (efficiency.size_factor, h/(h + half)) at width hidden/tp, relative to the full width
    width = model.hidden / tp
    eff *= width / (width + hidden_half(a)) * (model.hidden + hidden_half(a)) / model.hidden
    # attention kernels run in 16 bit whatever the GEMM format (an fp8 KV cache is
    # dequantised in the kernel: TensorRT-LLM docs "FP8 KV cache"), at the 16-bit efficiency
    p16 = "bf16" if gpu.bf16_tflops else "fp16"
    eff16 = min(1.0, eff * default_efficiency(gpu, p16, a) / max(default_efficiency(gpu, precision, a), 1e-9))
    peak = (gpu.peak_tflops(precision) or gpu.fp32_tflops or 1.0) * 1e12 * tp
    peak16 = (gpu.peak_tflops(p16) or gpu.fp32_tflops or 1.0) * 1e12 * tp
    expert = model.layers * model.mlp_params() if model.is_moe else 0
    bpp = WEIGHT_PRECISIONS[serve.weight_precision] / 8
    total = serving_weight_bytes(model, serve.weight_precision)
    return _Replica(
        model,
        tp,
        peak * eff,
        peak16 * eff16,
        gpu.mem_bandwidth_gb_s * GB * min(1.0, a.bw_efficiency * fit.bandwidth) * tp,
        intra_node_bw_gb_s(gpu, a) * fit.comm,  # host-staged without P2P
        a.small_message_latency_s,
        total - model.moe_experts * expert * bpp,
        expert * bpp,
        kv_cache_bytes_per_token(model, serve.kv_precision),
        fit.moe,
        a.moe_expert_half_tokens,
    )


def _iteration_s(
    r: _Replica, decode: float, context: float, prefill: float, prompt: float, logits: float
) -> dict[str, float]:
    """Seconds of one forward pass over `decode` generating sequences (mean KV context
    `context`) and `prefill` prompt tokens of prompts of `prompt` tokens; `logits` rows go
    through the LM head. Terms: linear (dense GEMMs), experts, attention, comm (all-reduce)."""
    m, tokens = r.model, decode + prefill
    expert_active = m.layers * m.moe_active * m.mlp_params() if m.is_moe else 0
    head = m.head_params()
    # dense GEMMs: one weight read, 2 FLOPs per parameter per token; the LM head only for the
    # rows that sample (decodes, last prompt token: vLLM/TRT-LLM gather the last-token logits)
    flops = 2.0 * (m.active_params() - expert_active - head) * tokens + 2.0 * head * logits
    lin_mem, lin_comp = r.dense_bytes / r.bw, flops / r.gemm_rate
    expert_s = expert_mem = 0.0
    if m.is_moe and tokens > 0:
        # experts hit when T tokens pick top-k of E: E·(1 − (1 − k/E)^T) (occupancy under
        # uniform routing; Fedus et al. 2022 §2), each hit expert's weights read once; its
        # grouped GEMM gets T·k/hit rows at efficiency rows/(rows + half) (part-empty tiles)
        e, k = m.moe_experts, m.moe_active
        hit = e * (1.0 - (1.0 - k / e) ** tokens)
        rows = tokens * k / hit
        eff = r.moe_eff * rows / (rows + r.half_tokens)
        expert_mem = hit * r.expert_bytes / r.bw
        expert_s = max(expert_mem, 2.0 * tokens * expert_active / (r.gemm_rate * eff))
    # attention: decode reads each sequence's KV once (Pope et al. 2022 §2), 4·L·ctx·(a·d)
    # FLOPs per decode token; a prompt token attends to prompt/2 earlier tokens (causal), and
    # context (prefill) attention is a separate kernel from decode attention
    kv_mem = r.kv_token_bytes * decode * context / r.bw
    attn_s = (
        max(kv_mem, 4.0 * m.layers * context * m.q_dim * decode / r.attn_rate)
        + 2.0 * m.layers * prompt * m.q_dim * prefill / r.attn_rate
    )
    # Megatron TP: 2 all-reduces per layer of the tokens' 16-bit hidden states (Shoeybi 2019)
    comm = 2 * m.layers * ring_allreduce_s(tokens * m.hidden * 2, r.tp, r.link_bw, r.lat)
    return {
        "linear": max(lin_mem, lin_comp),
        "experts": expert_s,
        "attention": attn_s,
        "comm": comm,
        "memory": lin_mem + expert_mem + kv_mem,
        "memory_bound": float(lin_mem >= lin_comp),
        "total": max(lin_mem, lin_comp) + expert_s + attn_s + comm,
    }


def serving_perf(
    model: ModelSpec,
    serve: ServeSetup,
    gpu: GpuSpec,
    tp: int,
    prompt_tokens: int,
    output_tokens: int,
    assumptions: PerfAssumptions | None = None,
) -> ServePerf:
    """Steady-state performance of a replica of `tp` GPUs serving `serve.batch` sequences."""
    a = assumptions or PerfAssumptions()
    r = _replica(model, serve, gpu, tp, a)
    p, o, batch = prompt_tokens, max(output_tokens, 1), serve.batch
    prefill = _iteration_s(r, 0, 0, p, p, 1)
    prefill_s = prefill["total"]
    context = p + o / 2.0  # mean KV context of a generating sequence
    step = _iteration_s(r, batch, context, 0, p, batch)
    step_s = step["total"]
    concurrency = float(batch)
    if serve.batching == "static":
        # a batch prefills its B prompts in one pass, then decodes O steps together
        first = _iteration_s(r, 0, 0, batch * p, p, batch)["total"]
        cycle_s = first + o * step_s
    elif get_stack(serve.stack).fused_prefill:
        # in-flight batching fuses prompt chunks into the decode iterations (TensorRT-LLM IFB,
        # vLLM chunked prefill; Agrawal et al. 2024 "Sarathi-Serve" §3): in the steady state
        # each of the O iterations carries B decodes + B·p/O prompt tokens; the iteration
        # budget max_num_tokens caps B·(1 + p/O)
        if serve.max_num_tokens:
            concurrency = min(concurrency, serve.max_num_tokens / (1.0 + p / o))
        it = _iteration_s(r, concurrency, context, concurrency * p / o, p, concurrency * (1.0 + 1.0 / o))
        cycle_s = o * it["total"]
        step = {**step, "fused_iteration": it["total"]}
    else:
        cycle_s = batch * prefill_s + o * step_s  # prefills as separate passes
    requests_per_s = concurrency / cycle_s
    perf = ServePerf(
        ttft_s=prefill_s + step_s,
        tpot_s=cycle_s / o,
        decode_step_s=step_s,
        prefill_s=prefill_s,
        output_tokens_per_s=requests_per_s * o,
        requests_per_s=requests_per_s,
        bound="memory" if step["memory_bound"] else "compute",
        parts_s={
            "weights_kv_read": step["memory"],
            "decode_linear": step["linear"],
            "decode_experts": step["experts"],
            "decode_attention": step["attention"],
            "decode_comm": step["comm"],
            "prefill": prefill_s,
            "cycle": cycle_s,
            **({"fused_iteration": step["fused_iteration"]} if "fused_iteration" in step else {}),
        },
        concurrency=concurrency,
    )
    # the point is its band's P50 (optimizer/model/bands.py); an explicit efficiency is the user's
    return perf if a.efficiency is not None else _centred(perf, serve_centre(gpu, a))


def _centred(perf: ServePerf, c: float) -> ServePerf:
    """`perf` with every time × c and every rate ÷ c."""
    if c == 1.0:
        return perf
    return replace(
        perf,
        ttft_s=perf.ttft_s * c,
        tpot_s=perf.tpot_s * c,
        decode_step_s=perf.decode_step_s * c,
        prefill_s=perf.prefill_s * c,
        output_tokens_per_s=perf.output_tokens_per_s / c,
        requests_per_s=perf.requests_per_s / c,
        parts_s={k: v * c for k, v in perf.parts_s.items()},
    )


def serving_max_batch(
    model: ModelSpec,
    serve: ServeSetup,
    gpu: GpuSpec,
    tp: int = 1,
    assumptions: PerfAssumptions | None = None,
    cap: int | None = None,
) -> int:
    """Largest concurrent batch a replica holds (`--batch max`): KV memory of the stack's
    budget, at the stack's KV occupancy, capped by its scheduler limit (stacks.toml max_batch).

    The budget is kv_memory_fraction × the card (vLLM gpu_memory_utilization) minus weights,
    activations and the stack's reserve, or (kv_fraction_of = "free", TensorRT-LLM) that
    fraction of what weights, activations and reserve leave free; `serve.batch` is ignored.
    Returns 0 when not even one sequence fits.
    """
    a = assumptions or PerfAssumptions()
    prof = get_stack(serve.stack)
    limit = min(prof.max_batch, cap) if cap else prof.max_batch
    budget = gpu.memory_gib * prof.kv_memory_fraction

    def fits(batch: int) -> bool:
        mem = serving_memory(model, replace(serve, batch=batch), tp, a)
        if prof.kv_fraction_of == "free":  # KV gets a fraction of what the rest leaves free
            rest = mem.total - mem.kv_cache + mem.context
            return mem.kv_cache <= prof.kv_memory_fraction * (gpu.memory_gib - rest)
        return mem.total + mem.context <= budget

    if not fits(1):
        return 0
    lo, hi = 1, limit
    if fits(hi):
        return hi
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
