"""Memory mechanisms of issue 26, each checked against numbers worked out by hand from its
source: torchtitan's per-op selective checkpointing and eager / compiled loss, serving KV pools
outside the allocator cache, FSDP block-level selective checkpointing (fms-fsdp) and
Megatron-Core CPU activation offloading, the weight a 4-bit linear dequantizes per matmul."""

from __future__ import annotations

import pytest

from optimizer.model.flops import model_flops_per_token, training_flops_per_token
from optimizer.model.memory import (
    activation_bytes_per_layer,
    kv_cache_bytes_per_token,
    logits_bytes,
    serving_memory,
    serving_weight_bytes,
    training_memory,
)
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, ServeSetup, TrainingSetup
from optimizer.units import GIB

RAW = PerfAssumptions(use_fitted=False)
LLAMA3_8B = PRESETS["llama-3-8b"]  # h 4096, kv 1024 (8 of 32 heads), ffn 14336, 32 layers


def test_torchtitan_op_sac_keeps_every_other_mm_output() -> None:
    # torchtitan _apply_ac_to_transformer_block: saved = block input + outputs of mm 1, 3, 5,
    # 7 of q, k, v, o, gate, up, down (q 4096, v 1024, gate 14336, down 4096) + SDPA output
    # 4096, 2 B each: 2 × (4096 + 4096 + 1024 + 14336 + 4096 + 4096) = 63,488 B per token
    s = 8192
    setup = TrainingSetup(seq_len=s, stack="torchtitan")
    op = activation_bytes_per_layer(LLAMA3_8B, setup, Layout(checkpointing="selective"))
    assert op == pytest.approx(s * 63_488)
    # Korthikanti selective (the attention core only) keeps the full count: 16 sbh + 6 ffn
    # ... for GQA: 8 h (norm, QKV, FFN inputs) + 2 q + 4 kv + 2 q + 6 ffn
    full_count = 8 * 4096 + 2 * 4096 + 4 * 1024 + 2 * 4096 + 6 * 14336
    mc = TrainingSetup(seq_len=s, stack="megatron-core")
    assert activation_bytes_per_layer(LLAMA3_8B, mc, Layout(checkpointing="selective")) == pytest.approx(
        s * full_count
    )


def test_torchtitan_op_sac_recomputes_k_o_up() -> None:
    # the 2nd, 4th, 6th mms (k 4096x1024, o 4096x4096, up 4096x14336) run again in backward:
    # 2 FLOPs per weight per token, 32 layers
    setup = TrainingSetup(seq_len=8192, stack="torchtitan")
    extra = training_flops_per_token(LLAMA3_8B, setup, "selective") - model_flops_per_token(LLAMA3_8B, setup)
    assert extra == pytest.approx(2 * (4096 * 1024 + 4096 * 4096 + 4096 * 14336) * 32)


def test_torchtitan_loss_eager_then_compiled() -> None:
    # eager loss: 12 B per logit at the start of backward (fp32 log_softmax output + two fp32
    # gradients); compiled with the model (2025): 4 B; 2024 versions: eager even when compiled
    tokens, vocab = 2 * 8192, LLAMA3_8B.vocab
    layout = Layout(micro_batch=2)
    eager = logits_bytes(LLAMA3_8B, TrainingSetup(seq_len=8192, stack="torchtitan"), layout, RAW)
    compiled = logits_bytes(
        LLAMA3_8B, TrainingSetup(seq_len=8192, stack="torchtitan", compile=True), layout, RAW
    )
    old = logits_bytes(
        LLAMA3_8B,
        TrainingSetup(seq_len=8192, stack="torchtitan", compile=True, compile_loss=False),
        layout,
        RAW,
    )
    assert eager == pytest.approx(tokens * vocab * 12)
    assert compiled == pytest.approx(tokens * vocab * 4)
    assert old == pytest.approx(eager)


def test_serving_kv_pool_is_outside_the_allocator_cache() -> None:
    # vLLM: the KV pool is allocated once; the 8% allocator cache (generic guess) grows only
    # around weights, activations and workspace. TensorRT-LLM has no caching allocator.
    spec = PRESETS["llama-2-7b"]
    serve = ServeSetup(batch=32, context=2048, stack="vllm")
    mem = serving_memory(spec, serve, 1, RAW)
    kv = kv_cache_bytes_per_token(spec) * 32 * (2048 - 0 / 2 + 8) / GIB  # + half a 16-token block
    assert mem.kv_cache == pytest.approx(kv)
    assert mem.cache == pytest.approx(0.08 * (mem.total - mem.kv_cache))
    trt = serving_memory(spec, ServeSetup(batch=32, context=2048, stack="tensorrt-llm"), 1, RAW)
    assert trt.cache == 0.0
    assert trt.weights == pytest.approx(serving_weight_bytes(spec, "fp16") / GIB)


def test_fsdp_selective_checkpoints_whole_blocks() -> None:
    # fms-fsdp ac_handler.py: "selective" checkpoints a fraction p of the blocks, p = 1 by
    # default (config/training.py) = every block: each layer keeps its 2-byte input, 2·s·b·h,
    # and recomputes its whole forward (as full recomputation)
    s, b = 4096, 2
    setup = TrainingSetup(seq_len=s, stack="fsdp")
    sel = activation_bytes_per_layer(LLAMA3_8B, setup, Layout(micro_batch=b, checkpointing="selective"))
    assert sel == pytest.approx(2 * s * b * 4096)
    assert training_flops_per_token(LLAMA3_8B, setup, "selective") == pytest.approx(
        training_flops_per_token(LLAMA3_8B, setup, "full")
    )
    # Megatron-Core's selective stays Korthikanti's (attention core only): far more memory
    mc = TrainingSetup(seq_len=s, stack="megatron-core")
    korthikanti = activation_bytes_per_layer(LLAMA3_8B, mc, Layout(micro_batch=b, checkpointing="selective"))
    assert korthikanti > 10 * sel


def test_megatron_cpu_offloading_moves_whole_layers_to_the_host() -> None:
    # --cpu-offloading-num-layers 20 on a 80-layer Llama 3 70B (h 8192, kv 1024, ffn 28672),
    # bf16, tp 1, no recompute: each layer keeps (Korthikanti count, GQA, gated FFN, no
    # dropout) 8h + 2q + 4kv + 2q + 6ffn = 274,432 B per token; 20 layers of s·b = 16,384
    # tokens leave the GPU
    spec = PRESETS["llama-3-70b"]
    layout = Layout(dp=64, micro_batch=2, zero_stage=3)
    kept = training_memory(spec, TrainingSetup(seq_len=8192, stack="megatron-core"), layout, RAW)
    moved = training_memory(
        spec, TrainingSetup(seq_len=8192, stack="megatron-core", offload_layers=20), layout, RAW
    )
    assert (kept.activations - moved.activations) * GIB == pytest.approx(20 * 16_384 * 274_432)
    assert moved.weights == kept.weights and moved.optimizer == kept.optimizer


def test_qlora_dequantizes_its_largest_weight_per_matmul() -> None:
    # bitsandbytes MatMul4Bit: F.dequantize_4bit(B, quant_state).to(A.dtype) - a 16-bit copy
    # of the whole weight. Llama-2-7B (h 4096, ffn 11008, vocab 32000): the largest layer
    # linear is gate/up, 4096 × 11008, at 2 B (generic, quantised in the compute dtype);
    # litgpt (Lightning) also quantises the LM head, 32000 × 4096, from fp16: fp16 copy + bf16
    # cast = 4 B per weight
    spec = PRESETS["llama-2-7b"]
    layout = Layout()
    for stack, transient in (("generic", 2 * 4096 * 11008), ("litgpt", 4 * 32_000 * 4096)):
        setup = TrainingSetup(seq_len=512, method="qlora", lora_rank=8, stack=stack)
        lora = TrainingSetup(seq_len=512, method="lora", lora_rank=8, stack=stack)
        q = training_memory(spec, setup, layout, RAW).overhead
        plain = training_memory(spec, lora, layout, RAW).overhead
        assert (q - plain) * GIB == pytest.approx(transient)


def test_cut_cross_entropy_leaves_no_full_logits() -> None:
    # Llama-3-8B's vocab 128,256 at 5 × 4096 tokens: the transformers loss holds 14 B per logit
    # at the start of backward (bf16 logits 2 + saved fp32 log_softmax 4 + two fp32 gradients
    # 4 + 4) = 5·4096·128256·14 B = 34.2 GiB; Cut Cross-Entropy (issue 44, the Scicom RTX 5090
    # run) holds the stack's 0.2 B per logit = 0.49 GiB
    spec = PRESETS["llama-3-8b"]
    hf = TrainingSetup(seq_len=4096, stack="hf-trainer")
    cce = TrainingSetup(seq_len=4096, stack="hf-trainer", loss_kernel="cce")
    layout = Layout(micro_batch=5)
    plain = logits_bytes(spec, hf, layout, RAW)
    assert plain == pytest.approx(5 * 4096 * 128_256 * 14)
    assert logits_bytes(spec, cce, layout, RAW) == pytest.approx(5 * 4096 * spec.vocab * 0.2)


def test_deepspeed_bf16_grad_accumulation_halves_the_gradients() -> None:
    # Megatron-DeepSpeed with BF16_Optimizer accumulates fp32 gradients (4 B/param); the
    # FlagPerf Llama 2 7B config sets data_types.grad_accum_dtype bf16: 2 B/param
    spec = PRESETS["llama-2-7b"]
    layout = Layout(dp=8, zero_stage=1)
    fp32 = training_memory(spec, TrainingSetup(seq_len=4096, stack="megatron-deepspeed"), layout, RAW)
    bf16 = training_memory(
        spec, TrainingSetup(seq_len=4096, stack="megatron-deepspeed", fp32_grads=False), layout, RAW
    )
    assert fp32.gradients == pytest.approx(spec.params() * 4 / GIB)
    assert bf16.gradients == pytest.approx(spec.params() * 2 / GIB)


def test_a_fused_cross_entropy_holds_no_fp32_copies() -> None:
    # flash-attn / apex xentropy with inplace_backward (the gradient written into the logits):
    # 16-bit logits + a 16-bit gradient = 4 B per logit (stacks.toml fused_logits_bytes_per_value),
    # not the eager fp32 loss's 14 B: Llama-3-8B, 2 × 4096 tokens × 128,256 × 4 B = 3.91 GiB
    spec = PRESETS["llama-3-8b"]
    fused = TrainingSetup(seq_len=4096, stack="hf-trainer", loss_kernel="fused")
    eager = TrainingSetup(seq_len=4096, stack="hf-trainer")
    layout = Layout(micro_batch=2)
    assert logits_bytes(spec, fused, layout, RAW) == pytest.approx(2 * 4096 * 128_256 * 4)
    assert logits_bytes(spec, eager, layout, RAW) == pytest.approx(2 * 4096 * 128_256 * 14)
