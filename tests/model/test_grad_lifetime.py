"""Gradient and optimizer-state lifetimes (optimizer/model/grad_lifetime.py), each checked against
bytes worked out by hand from the setup its source states: KempnerForge's FSDP2 no-sync
accumulation in fp32, an eager loss on bf16 logits, a loop that frees its gradients after every
step (universal-llm-trainer) and one that never steps its optimizer (VectorLM's benchmark)."""

from __future__ import annotations

import pytest

from optimizer.model.activations import kept_kv_bytes
from optimizer.model.grad_lifetime import unsynced_grad_bytes
from optimizer.model.memory import logits_bytes, training_memory
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.units import GIB

RAW = PerfAssumptions(use_fitted=False)
LLAMA3_8B = PRESETS["llama-3-8b"]  # 8,030,261,248 parameters; LM head 128,256 × 4096
LLAMA3_70B = PRESETS["llama-3-70b"]  # 70,553,706,496 parameters (KempnerForge report: "70.55B")


def test_fsdp2_no_sync_holds_the_unsharded_fp32_gradients_of_a_tp_shard() -> None:
    # KempnerForge weak scaling, 70B on TP 4 x FSDP 8, 4 micro-batches: every rank keeps its
    # TP shard's unsharded gradients upcast to fp32 between micro-batches:
    # 70,553,706,496 / 4 × 4 B = 70,553,706,496 B (65.7 GiB), whatever the FSDP degree
    setup = TrainingSetup(seq_len=4096, fp32_master=False, no_sync_grad_dtype="fp32")
    for dp in (8, 32):
        layout = Layout(tp=4, dp=dp, zero_stage=3, micro_batch=2, grad_accum=4, checkpointing="full")
        assert unsynced_grad_bytes(LLAMA3_70B, setup, layout) == pytest.approx(70_553_706_496)
        m = training_memory(LLAMA3_70B, setup, layout, RAW)
        assert m.gradients == pytest.approx(70_553_706_496 / GIB)
    # no accumulation, or one rank (FSDP falls back to NO_SHARD): nothing beyond the shard
    one = Layout(tp=4, dp=8, zero_stage=3, micro_batch=2, grad_accum=1)
    assert unsynced_grad_bytes(LLAMA3_70B, setup, one) == 0.0
    alone = Layout(tp=4, dp=1, zero_stage=3, micro_batch=2, grad_accum=4)
    assert unsynced_grad_bytes(LLAMA3_70B, setup, alone) == 0.0
    # bf16 accumulation (FSDP1 no_sync on bf16 parameters): 8,030,261,248 / 1 × 2 B
    bf16 = TrainingSetup(seq_len=2048, no_sync_grad_dtype="bf16")
    layout = Layout(dp=4, zero_stage=3, micro_batch=8, grad_accum=4)
    assert unsynced_grad_bytes(LLAMA3_8B, bf16, layout) == pytest.approx(16_060_522_496)


def test_eager_loss_on_bf16_logits_holds_eight_bytes_per_logit() -> None:
    # 2 × 8192 tokens × 128,256 logits × (2 B logits + 2 B saved log_softmax + 2 + 2 B grads)
    setup = TrainingSetup(seq_len=8192, loss_kernel="bf16")
    got = logits_bytes(LLAMA3_8B, setup, Layout(micro_batch=2), RAW)
    assert got == pytest.approx(2 * 8192 * 128_256 * 8)


def test_gradients_freed_every_step_are_not_held_beside_the_logits() -> None:
    # universal-llm-trainer: Llama 3.1 8B full fine-tune on one GPU, bf16 weights and AdamW
    # states, batch 2 × 8192, full recompute, zero_grad() after every step. At the start of
    # backward only the LM head's gradient exists: 128,256 × 4096 × 2 B = 1,050,673,152 B
    setup = TrainingSetup(seq_len=8192, fp32_master=False, loss_kernel="bf16", grads_freed=True)
    layout = Layout(micro_batch=2, checkpointing="full")
    m = training_memory(LLAMA3_8B, setup, layout, RAW)
    assert m.weights == pytest.approx(8_030_261_248 * 2 / GIB)
    assert m.optimizer == pytest.approx(8_030_261_248 * 4 / GIB)
    assert m.gradients == pytest.approx(1_050_673_152 / GIB)
    # with two micro-batches per step the gradients persist: all 8,030,261,248 × 2 B
    held = training_memory(LLAMA3_8B, setup, Layout(micro_batch=2, grad_accum=2, checkpointing="full"), RAW)
    assert held.gradients == pytest.approx(16_060_522_496 / GIB)
    # the peak is the larger phase, never below the end of backward (weights, states, gradients)
    assert m.total >= (8_030_261_248 * 8) / GIB


def test_a_loop_that_never_steps_holds_no_optimizer_state() -> None:
    # VectorLM's benchmark: bf16 Llama-3-8B under FSDP on one GPU, backward only (tr_step stays
    # 0): weights and gradients 8,030,261,248 × 2 B each, no AdamW state
    setup = TrainingSetup(seq_len=2048, fp32_master=False, optimizer_steps=False)
    m = training_memory(LLAMA3_8B, setup, Layout(micro_batch=8, grad_accum=4, checkpointing="full"), RAW)
    assert m.optimizer == 0.0
    assert m.gradients == pytest.approx(16_060_522_496 / GIB)


def test_use_cache_keeps_every_layers_keys_and_values() -> None:
    # DLRover/ATorch FSDP Llama-2-7B (transformers 4.31, use_cache left on): 32 layers × K and V
    # × 4 sequences × 4096 tokens × 4096 (32 KV heads × 128) × 2 B = 8,589,934,592 B (8 GiB)
    from optimizer.inputs.models import load_model  # lazy: only this test needs the presets

    model = load_model("llama-2-7b")
    setup = TrainingSetup(seq_len=4096, kv_cache_kept=True)
    layout = Layout(dp=8, zero_stage=3, micro_batch=4, checkpointing="full")
    assert kept_kv_bytes(model, setup, layout) == pytest.approx(8_589_934_592)
    assert kept_kv_bytes(model, TrainingSetup(seq_len=4096), layout) == 0.0
    on = training_memory(model, setup, layout, RAW).activations
    off = training_memory(model, TrainingSetup(seq_len=4096), layout, RAW).activations
    assert on - off == pytest.approx(8_589_934_592 / GIB)
