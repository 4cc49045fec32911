"""Megatron-Core's MoE memory knobs, each against numbers worked out by hand on a tiny MoE:
expert tensor parallelism (--expert-tensor-parallel-size: experts split over etp GPUs instead
of tp, the dispatcher gathering the tokens of the etp group) and selective recompute of named
submodules (--recompute-modules: layernorm, moe, moe_act, mlp), with the FLOPs they repeat."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from optimizer.model.activations import activation_bytes_per_layer
from optimizer.model.flops import training_flops_per_token
from optimizer.model.memory import params_per_gpu, sharded_params
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.spec import ModelSpec

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from cases import build_cases, load_rows  # noqa: E402

# h 64, 4 heads of 16 (q_dim 64), 2 KV heads (kv_dim 32), 4 gated experts of ffn 32, top-2:
# one expert's gate, up, down = 3 × 64 × 32 = 6,144 weights; a layer's experts 24,576
TINY_MOE = ModelSpec(layers=2, hidden=64, heads=4, kv_heads=2, ffn=32, vocab=100, moe_experts=4, moe_active=2)
DENSE = ModelSpec(layers=2, hidden=64, heads=4, kv_heads=2, ffn=32, vocab=100)
MCORE = TrainingSetup(seq_len=128, stack="megatron-core", attention="flash")


def test_expert_tensor_parallel_one_holds_whole_experts() -> None:
    # tp 4, ep 2: with etp = tp (Megatron's default) a GPU holds 2 layers × 24,576 / (2 × 4)
    # = 6,144 expert weights; with etp 1, 2 × 24,576 / 2 = 24,576: 18,432 more
    default = params_per_gpu(TINY_MOE, Layout(tp=4, ep=2))
    whole = params_per_gpu(TINY_MOE, Layout(tp=4, ep=2, etp=1))
    assert whole - default == pytest.approx(18_432)
    assert Layout(tp=4, ep=2, etp=4).expert_tp == Layout(tp=4, ep=2).expert_tp == 4


def test_expert_optimizer_shards_cover_the_stage_whatever_etp() -> None:
    # the distributed optimizer shards the experts over their own data-parallel group of
    # dp·tp/(ep·etp) GPUs: a stage's 49,152 expert weights end up spread over all dp × tp
    # GPUs either way (sharded_params counts them as 49,152 / tp = 12,288 before / dp)
    for etp in (None, 1, 2):
        layout = Layout(dp=4, tp=4, ep=2, etp=etp)
        dense = params_per_gpu(TINY_MOE, layout) - 2 * 24_576 / (2 * layout.expert_tp)
        assert sharded_params(TINY_MOE, layout) == pytest.approx(dense + 12_288)


def test_routing_buffers_are_gathered_over_the_expert_tensor_group() -> None:
    # sequence parallel, tp 4: the routing buffers (544 B per token: 2·2·64·2 + 8·4) of the
    # TP group's 128 tokens (etp = tp) or of one GPU's 128/4 (etp 1): 128 × 544 × 3/4 = 52,224
    setup = TrainingSetup(seq_len=128, stack="megatron-core", attention="flash", sequence_parallel=True)
    gathered = activation_bytes_per_layer(TINY_MOE, setup, Layout(tp=4, ep=2))
    local = activation_bytes_per_layer(TINY_MOE, setup, Layout(tp=4, ep=2, etp=1))
    assert gathered - local == pytest.approx(52_224)


@pytest.mark.parametrize(
    ("modules", "saved"),
    [
        # the MoE layer checkpointed: its expert tensors (3 × 2 B × 32 × top-2 = 384 B per
        # token) and routing buffers (544 B) go; with layernorm the QKV input (2 B × 64) too:
        # 128 tokens × (384 + 544 + 128) = 135,168
        (("layernorm", "moe"), 135_168),
        # both norm outputs (QKV and FFN inputs, 2 B × 64 each): 128 × 256 = 32,768
        (("layernorm",), 32_768),
        # the experts' act(gate)·up outputs (2 B × 32 × top-2): 128 × 128 = 16,384
        (("moe_act",), 16_384),
        # the default module: nothing more with FlashAttention
        (("core_attn",), 0),
    ],
)
def test_selective_recompute_modules_drop_what_they_recompute(modules: tuple[str, ...], saved: int) -> None:
    layout = Layout(checkpointing="selective")
    base = activation_bytes_per_layer(TINY_MOE, MCORE, layout)
    named = TrainingSetup(seq_len=128, stack="megatron-core", attention="flash", recompute_modules=modules)
    assert base - activation_bytes_per_layer(TINY_MOE, named, layout) == pytest.approx(saved)


def test_dense_mlp_recompute_drops_the_ffn_tensors() -> None:
    # gate, up, act(gate)·up: 3 × 2 B × 32 = 192 B per token, 128 tokens: 24,576
    layout = Layout(checkpointing="selective")
    named = TrainingSetup(seq_len=128, stack="megatron-core", attention="flash", recompute_modules=("mlp",))
    base = activation_bytes_per_layer(DENSE, MCORE, layout)
    assert base - activation_bytes_per_layer(DENSE, named, layout) == pytest.approx(24_576)


def test_recomputed_moe_repeats_the_experts_forward() -> None:
    # 2 FLOPs per weight of the 2 routed experts (6,144 each) in 2 layers: 49,152 per token
    named = TrainingSetup(seq_len=128, stack="megatron-core", attention="flash", recompute_modules=("moe",))
    extra = training_flops_per_token(TINY_MOE, named, "selective") - training_flops_per_token(
        TINY_MOE, MCORE, "selective"
    )
    assert extra == pytest.approx(49_152)


def test_unknown_recompute_module_is_refused() -> None:
    with pytest.raises(ValueError, match="recompute_modules: unknown"):
        TrainingSetup(seq_len=128, recompute_modules=("attn",))


def test_validation_rows_read_modules_and_etp_as_stated() -> None:
    # aside9's Megatron-MoE Qwen3-235B long-context rows: "--recompute-modules layernorm moe",
    # and the model yaml's --expert-tensor-parallel-size: 1
    rows = [
        r
        for r in load_rows(BENCH / "validation" / "aside9")
        if r.case_id == "moezoo-qwen3-235b-h100-256gpu-seq32k-cp2-forced-tflops"
    ]
    (case,), _ = build_cases(rows)
    setup, layout, _ = case.train
    assert setup.recompute_modules == ("layernorm", "moe")
    assert (layout.tp, layout.expert_tp, layout.ep, layout.cp) == (4, 1, 8, 2)


def test_autocast_over_torch_fsdp_caches_no_gathered_weight() -> None:
    # Llama-2-7B (6,738,415,616 parameters, the Hugging Face checkpoint) under torch FSDP
    # FULL_SHARD on 8 GPUs with torch.autocast over fp32 parameters: FSDP's forward computes on
    # Tensor views of the flat parameter, and autocast caches only leaf, non-view weights (ATen
    # autocast_mode.cpp cached_cast), so no 16-bit copy is held: 0 B more than without autocast.
    # DLRover's measured max_memory_allocated agrees: full minus LoRA is 6.1 GiB on 8 GPUs and
    # 0.6 on 64 (38.67 - 32.57, 30.43 - 29.81), not the 12.55 GiB of a cache of every weight
    from optimizer.inputs.models import load_model  # lazy: only this test needs the presets
    from optimizer.model.memory import TrainingMemoryModel
    from optimizer.model.setup import PerfAssumptions

    model, a = load_model("llama-2-7b"), PerfAssumptions(use_fitted=False)
    layout = Layout(dp=8, zero_stage=3, checkpointing="full", micro_batch=1)
    plain = TrainingSetup(seq_len=4096, stack="fsdp")
    amp = TrainingSetup(seq_len=4096, stack="fsdp", autocast_weights=True)
    extra = (
        TrainingMemoryModel(model, amp, a).states(layout)[0]
        - TrainingMemoryModel(model, plain, a).states(layout)[0]
    )
    assert extra == 0.0
    # without FSDP the parameters are leaves: the cache is the whole model, 2 B × 6.74e9
    single = Layout(checkpointing="full", micro_batch=1)
    extra = (
        TrainingMemoryModel(model, amp, a).states(single)[0]
        - TrainingMemoryModel(model, plain, a).states(single)[0]
    )
    assert extra == pytest.approx(2 * 6_738_415_616, rel=1e-3)


def test_autocast_keeps_a_fp32_residual_stream_and_frozen_base() -> None:
    # DLRover/ATorch bf16_amp: torch.autocast over an fp32 Llama-2-7B. The checkpointed layer
    # input (embedding output + residual adds, fp32 + bf16 -> fp32) is 4 B per value:
    # 4096 tokens × 4 sequences × 4096 hidden × 4 B = 268,435,456 B per layer; the frozen LoRA
    # base stays fp32 and FSDP-sharded: 6,738,415,616 × 4 B / 8, plus 2 gathered layers of
    # 202,383,360 parameters at 4 B (layer: 4 × 4096² attention + 3 × 4096 × 11008 MLP + 2 norms)
    from optimizer.inputs.models import load_model  # lazy: only this test needs the presets
    from optimizer.model.memory import TrainingMemoryModel, activation_bytes_per_layer
    from optimizer.model.setup import PerfAssumptions

    model, a = load_model("llama-2-7b"), PerfAssumptions(use_fitted=False)
    amp = TrainingSetup(seq_len=4096, stack="fsdp", autocast_weights=True)
    full = Layout(dp=8, zero_stage=3, checkpointing="full", micro_batch=4)
    assert activation_bytes_per_layer(model, amp, full) == pytest.approx(268_435_456)
    lora = TrainingSetup(
        seq_len=4096, stack="fsdp", autocast_weights=True, method="lora", lora_targets=("q", "k", "v", "o")
    )
    base = TrainingMemoryModel(model, lora, a).states(full)[0]
    adapters = 32 * 4 * 16 * (4096 + 4096) * 2  # r 16 on q, k, v, o: 16,777,216 params × 2 B
    expected = 6_738_415_616 * 4 / 8 + 2 * 202_383_360 * 4 + adapters
    assert base == pytest.approx(expected, rel=1e-6)


def test_host_offload_keeps_the_runs_gradient_dtype() -> None:
    # ZeRO-Offload keeps the gradients in host RAM: a run with bf16 gradient accumulation
    # (DeepSpeed data_types.grad_accum_dtype: bf16) holds 2 B per parameter fewer there than one
    # with fp32 gradients: 2 B × 6,738,415,616 / 8 ranks = 1.57 GiB per GPU process
    from optimizer.inputs.models import load_model  # lazy: only this test needs the presets
    from optimizer.model.host import offloaded_gib_per_gpu

    model, layout = load_model("llama-2-7b"), Layout(dp=8, zero_stage=2)
    fp32 = TrainingSetup(seq_len=4096, stack="deepspeed", offload_optimizer=True, fp32_grads=True)
    bf16 = TrainingSetup(seq_len=4096, stack="deepspeed", offload_optimizer=True, fp32_grads=False)
    saved_gib = offloaded_gib_per_gpu(model, fp32, layout) - offloaded_gib_per_gpu(model, bf16, layout)
    assert saved_gib == pytest.approx(2 * 6_738_415_616 / 8 / 2**30, rel=1e-3)


def test_gathered_logits_are_not_split_over_tensor_parallel_ranks() -> None:
    # 128 tokens × micro-batch 2 × vocab 100 × 4 B = 102,400 B: a vocab-parallel loss holds a
    # quarter of them on each of 4 TP ranks (25,600), a loss on logits gathered to every rank
    # (ColwiseParallel with output_layouts=Replicate()) all of them
    from optimizer.model.memory import logits_bytes
    from optimizer.model.setup import PerfAssumptions

    a = PerfAssumptions(use_fitted=False, logits_bytes_per_value=4.0)
    layout = Layout(tp=4, micro_batch=2)
    split = logits_bytes(TINY_MOE, TrainingSetup(seq_len=128), layout, a)
    whole = logits_bytes(TINY_MOE, TrainingSetup(seq_len=128, logits_gathered=True), layout, a)
    assert (split, whole) == (pytest.approx(25_600.0), pytest.approx(102_400.0))
