"""Memory model: each term against a hand derivation from its source."""

import pytest

from optimizer.model.memory import (
    GIB,
    activation_bytes_per_layer,
    kv_cache_bytes_per_token,
    lora_params,
    model_state_bytes_per_param,
    params_per_gpu,
    qlora_bytes_per_param,
    serving_memory,
    training_memory,
)
from optimizer.model.pipeline_stages import last_stage_layer_microbatches
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, ServeSetup, TrainingSetup
from optimizer.model.spec import ModelSpec

MIB = 2**20
# by-hand formulas: the un-fitted model
NO_PREFETCH = PerfAssumptions(zero3_prefetch_layers=0, overhead_gib=0.0, fragmentation=0.0, use_fitted=False)


def _model_state_bytes_per_param(zero: int, n: int) -> float:
    spec = PRESETS["llama-2-7b"]
    mem = training_memory(spec, TrainingSetup(seq_len=1), Layout(dp=n, zero_stage=zero), NO_PREFETCH)
    return (mem.weights + mem.gradients + mem.optimizer) * GIB / spec.params()


def test_mixed_precision_adamw_is_16_bytes_per_param() -> None:
    assert sum(model_state_bytes_per_param("bf16", "adamw")) == 16  # 2 + 2 + (4 + 4 + 4)
    assert _model_state_bytes_per_param(0, 8) == pytest.approx(16)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_zero_stages_rajbhandari_2020(n: int) -> None:
    # ZeRO paper §3 / Fig. 1 with K = 12: stage 1 = 4 + 12/N, stage 2 = 2 + 14/N, stage 3 = 16/N
    assert _model_state_bytes_per_param(1, n) == pytest.approx(4 + 12 / n)
    assert _model_state_bytes_per_param(2, n) == pytest.approx(2 + 14 / n)
    assert _model_state_bytes_per_param(3, n) == pytest.approx(16 / n)


def test_optimizer_variants() -> None:
    assert model_state_bytes_per_param("bf16", "adam-8bit") == (2, 2, 6)  # master 4 + 2 × 1 B
    # Apex DistributedFusedAdam store_param_remainders: master = bf16 weight + 16-bit remainder
    assert model_state_bytes_per_param("bf16", "adamw", master_remainders=True) == (2, 2, 10)
    assert model_state_bytes_per_param("bf16", "sgd") == (2, 2, 8)  # master 4 + momentum 4
    assert model_state_bytes_per_param("fp32", "adamw") == (4, 4, 8)  # no master copy
    w, g, o = model_state_bytes_per_param("bf16", "adafactor", hidden=4096)
    assert o == pytest.approx(4 + 8 / 4096)


def test_kv_cache_per_token() -> None:
    # 2 × 32 layers × 32 heads × 128 × 2 B = 524,288 B = 0.5 MiB (Llama-2-7B, fp16)
    assert kv_cache_bytes_per_token(PRESETS["llama-2-7b"]) / MIB == 0.5
    # GQA: 2 × 80 × 8 × 128 × 2 B = 327,680 B = 0.3125 MiB (Llama-2-70B)
    assert kv_cache_bytes_per_token(PRESETS["llama-2-70b"]) / MIB == 0.3125


# GPT-style layer of Korthikanti et al. 2022: plain GeLU MLP of 4h, MHA, dropout, eager attention
GPT = ModelSpec(
    layers=1, hidden=4096, heads=32, ffn=4 * 4096, ffn_kind="plain", vocab=51200, norm="layernorm"
)
PAPER = TrainingSetup(seq_len=2048, attention="eager", dropout=True)
SBH = 2048 * 1 * 4096  # s·b·h = 8,388,608


def test_activations_no_recompute_korthikanti_eq() -> None:
    # s·b·h·(34 + 5·a·s/h) = 8,388,608 × (34 + 5·32·2048/4096 = 80) = 956,301,312 bytes
    assert activation_bytes_per_layer(GPT, PAPER, Layout()) == 956_301_312


def test_activations_tensor_parallel_table2() -> None:
    # TP without SP: sbh·(10 + 24/t + 5as/(ht)), t = 8 -> 8,388,608 × (10 + 3 + 10) = 192,937,984
    no_sp = TrainingSetup(seq_len=2048, attention="eager", dropout=True, sequence_parallel=False)
    assert activation_bytes_per_layer(GPT, no_sp, Layout(tp=8)) == 192_937_984
    # TP + SP: sbh·(34/t + 5as/(ht)) = 956,301,312 / 8
    assert activation_bytes_per_layer(GPT, PAPER, Layout(tp=8)) == 956_301_312 / 8
    # selective recompute + SP: sbh·34/t
    assert activation_bytes_per_layer(GPT, PAPER, Layout(tp=8, checkpointing="selective")) == SBH * 34 / 8


def test_activations_full_recompute_keeps_layer_input() -> None:
    assert activation_bytes_per_layer(GPT, PAPER, Layout(checkpointing="full")) == 2 * SBH


def test_flash_attention_stores_no_scores_and_no_dropout_masks() -> None:
    modern = TrainingSetup(seq_len=2048)  # flash, no dropout
    # 34 sbh minus the two 1-byte dropout masks = 32 sbh, no s² term
    assert activation_bytes_per_layer(GPT, modern, Layout()) == 32 * SBH


def test_pipeline_stage_holds_layers_and_inflight_microbatches() -> None:
    spec = PRESETS["llama-2-7b"]
    setup = TrainingSetup(seq_len=4096)
    one = activation_bytes_per_layer(spec, setup, Layout(pp=4, grad_accum=16))
    mem = training_memory(spec, setup, Layout(pp=4, grad_accum=16), NO_PREFETCH)
    # eager fp32 loss at the start of backward: 2 (bf16 logits) + 4 (saved log_softmax) + 4 + 4
    # (the two fp32 gradients) = 14 B per logit
    logits = 4096 * 32000 * 14.0
    # 1F1B: the first stage keeps pp = 4 micro-batches of its 32/4 = 8 layers; the last stage
    # one micro-batch of its 8 layers and the logits: 4 × 8 × ~0.5 GiB = 16 GiB against
    # 8 × ~0.5 GiB + 1.7 GiB, so the first stage is the busiest
    assert mem.activations * GIB == pytest.approx(one * 8 * 4)
    assert one * 8 * 4 > one * 8 + logits
    # the busiest stage is the last: 8 layers + LM head (32000·4096) + final RMSNorm (4096)
    assert params_per_gpu(spec, Layout(pp=4)) == 8 * spec.layer_params() + 32000 * 4096 + 4096


def test_logits_sit_on_the_last_pipeline_stage() -> None:
    # full recompute keeps 2·s·h bytes per layer: 2 × 4096 × 4096 = 32 MiB; Llama-2-7B on
    # pp = 2 (16 layers a stage), 1F1B: the first stage holds 2 micro-batches × 16 layers =
    # 1 GiB, the last stage 1 × 16 layers = 0.5 GiB plus the eager loss's 14 B × 4096 tokens ×
    # 32,000 logits = 1,835,008,000 B: the last stage is the busiest, and the logits are not
    # added to the first stage's layers (Narayanan et al. 2021 §2.2); the one layer rebuilt at
    # a time in backward comes after the loss's backward freed the logits (the larger counts)
    spec = PRESETS["llama-2-7b"]
    setup = TrainingSetup(seq_len=4096)
    layout = Layout(pp=2, grad_accum=8, checkpointing="full")
    mem = training_memory(spec, setup, layout, NO_PREFETCH)
    layer = 2 * 4096 * 4096
    recomputed = activation_bytes_per_layer(spec, setup, Layout())  # one layer rebuilt at a time
    assert recomputed < 4096 * 32000 * 14.0
    assert mem.activations * GIB == pytest.approx(16 * layer + 4096 * 32000 * 14.0)


def test_interleaved_last_rank_warms_up_v_minus_1_times_p_chunks() -> None:
    # Megatron-LM interleaved 1F1B: the last of p ranks runs (v − 1)·p chunk forwards before its
    # first backward, +1 in flight: p = 4, v = 2 -> 5 chunks of 16 / 2 = 8 layers = 40
    # layer-micro-batches; one micro-batch in all: at most 1 × v = 2 chunks = 16
    assert last_stage_layer_microbatches(Layout(pp=4, vp=2, grad_accum=8), 16) == 40
    assert last_stage_layer_microbatches(Layout(pp=4, vp=2, grad_accum=1), 16) == 16
    assert last_stage_layer_microbatches(Layout(pp=4, grad_accum=8), 16) == 16  # 1F1B: one


def test_lora_params_by_hand() -> None:
    spec = PRESETS["llama-2-7b"]
    # rank 8 on q and v: 8 × (4096 + 4096) × 2 modules × 32 layers = 4,194,304 (PEFT reports
    # 4,194,304 trainable params for Llama-2-7B with r=8, target q_proj/v_proj)
    assert lora_params(spec, 8, ("q", "v")) == 4_194_304


def test_qlora_nf4_bytes() -> None:
    # Dettmers et al. 2023: 4 bits + 0.127 bit of double-quantised constants per weight
    assert qlora_bytes_per_param() == pytest.approx((4 + 0.127) / 8, abs=1e-4)
    assert qlora_bytes_per_param(double_quant=False) == (4 + 0.5) / 8


def test_qlora_70b_fits_one_80gb_gpu_with_full_checkpointing() -> None:
    # QLoRA paper: 65B fine-tuned on one 48 GB GPU. By hand for Llama-2-70B: linear weights
    # (68.977e9 − 2 × 0.262e9 embedding/head) × 4.127/8 B = 35.31e9 B, embedding + head in
    # 16 bit 1.05e9 B, rank-16 adapters on all 7 linears 80 × 2,588,672 × 2 B = 0.41e9 B
    # -> 36.77e9 B = 34.2 GiB
    spec = PRESETS["llama-2-70b"]
    setup = TrainingSetup(seq_len=2048, method="qlora")
    mem = training_memory(spec, setup, Layout(checkpointing="full"))
    assert mem.weights == pytest.approx(34.2, abs=0.1)
    assert mem.total < 48


def test_serving_weights_and_kv() -> None:
    spec = PRESETS["llama-2-7b"]
    mem = serving_memory(
        spec,
        ServeSetup(weight_precision="fp16", batch=8, context=2048),
        tp=1,
        assumptions=PerfAssumptions(overhead_gib=0, fragmentation=0),
    )
    assert mem.weights == pytest.approx(6_738_415_616 * 2 / GIB)
    assert mem.kv_cache == pytest.approx(8 * 2048 * 0.5 / 1024)  # 8 GiB
    # tp = 2 halves both
    mem2 = serving_memory(
        spec,
        ServeSetup(weight_precision="fp16", batch=8, context=2048),
        tp=2,
        assumptions=PerfAssumptions(overhead_gib=0, fragmentation=0),
    )
    assert mem2.kv_cache == pytest.approx(mem.kv_cache / 2)


def test_overhead_is_stated_and_overridable() -> None:
    spec = PRESETS["gpt2"]
    setup = TrainingSetup(seq_len=1024)
    a = training_memory(spec, setup, Layout(), PerfAssumptions(overhead_gib=1.0, fragmentation=0))
    b = training_memory(spec, setup, Layout(), PerfAssumptions(overhead_gib=3.0, fragmentation=0))
    assert b.device - a.device == pytest.approx(2.0)  # overhead_gib = memory outside the allocator


def test_zero_offload_keeps_optimizer_and_gradients_off_the_gpu() -> None:
    spec = PRESETS["llama-2-70b"]
    setup = TrainingSetup(seq_len=2048, offload_optimizer=True)
    mem = training_memory(spec, setup, Layout(dp=8, zero_stage=3, checkpointing="full"), NO_PREFETCH)
    assert mem.optimizer == 0.0
    # gradients: one layer in flight, 855,654,400 params × 2 B (Ren et al. 2021, ZeRO-Offload)
    assert mem.gradients * GIB == pytest.approx(spec.layer_params() * 2)
    assert spec.layer_params() == 855_654_400  # 2·8192² + 2·8192·1024 + 3·8192·28672 + 2·8192
