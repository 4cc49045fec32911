"""FSDP mixed precision keeps the sharded parameters in fp32 as the master the optimizer steps,
reduces gradients into fp32 shards, and (zero_grad(set_to_none=True)) frees them after every
step: checked against bytes worked out by hand for Llama-2-7B on 2 GPUs (ZeRO-3), against
DeepSpeed's ZeRO-3 (16-bit shards beside an fp32 master inside the optimizer)."""

from __future__ import annotations

import pytest

from optimizer.model.memory import training_memory
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.units import GIB

RAW = PerfAssumptions(use_fitted=False)
LLAMA2_7B = PRESETS["llama-2-7b"]
# 32 layers × (4 × 4096² + 3 × 4096 × 11,008 + 2 × 4096) + embedding and untied head
# (2 × 32,000 × 4096) + the final norm (4096): 6,738,415,616 parameters
PARAMS = 32 * (4 * 4096**2 + 3 * 4096 * 11_008 + 2 * 4096) + 2 * 32_000 * 4096 + 4096
# two layers gathered in 16 bit (PerfAssumptions.zero3_prefetch_layers = 2)
GATHERED = 2 * (4 * 4096**2 + 3 * 4096 * 11_008 + 2 * 4096) * 2


def _memory(stack: str, grad_accum: int = 1):
    setup = TrainingSetup(seq_len=2048, precision="bf16", stack=stack, attention="flash")
    layout = Layout(dp=2, zero_stage=3, micro_batch=8, grad_accum=grad_accum, checkpointing="selective")
    return training_memory(LLAMA2_7B, setup, layout, RAW)


def test_the_fp32_shard_is_the_master_and_the_optimizer_holds_the_moments() -> None:
    m = _memory("torchtitan", grad_accum=2)  # two micro-batches: every gradient held
    assert PARAMS == 6_738_415_616
    assert m.weights == pytest.approx((PARAMS / 2 * 4 + GATHERED) / GIB, rel=1e-6)  # 13.33 GiB
    assert m.optimizer == pytest.approx(PARAMS / 2 * 8 / GIB, rel=1e-6)  # 25.10 GiB: m and v
    assert m.gradients == pytest.approx(PARAMS / 2 * 4 / GIB, rel=1e-6)  # 12.55 GiB fp32 shards


def test_deepspeed_zero3_keeps_16_bit_shards_beside_its_fp32_master() -> None:
    m = _memory("deepspeed", grad_accum=2)
    assert m.weights == pytest.approx((PARAMS / 2 * 2 + GATHERED) / GIB, rel=1e-6)
    assert m.optimizer == pytest.approx(PARAMS / 2 * 12 / GIB, rel=1e-6)  # master + m + v
    assert m.gradients == pytest.approx(PARAMS / 2 * 2 / GIB, rel=1e-6)
    # both hold 16 B per sharded parameter with every gradient alive; FSDP's 16-bit copy exists
    # only for the gathered layers
    titan = _memory("torchtitan", grad_accum=2)
    total = m.weights + m.optimizer + m.gradients
    assert titan.weights + titan.optimizer + titan.gradients == pytest.approx(total, rel=1e-9)


def test_one_micro_batch_per_step_holds_no_gradient_at_the_start_of_backward() -> None:
    # torchtitan zeroes the gradients (set_to_none) every step: at the start of backward, with
    # every activation alive, only the LM head's gradient exists (32,000 × 4096 × 2 B = 0.24 GiB)
    freed = _memory("torchtitan", grad_accum=1)
    assert freed.gradients == pytest.approx(32_000 * 4096 * 2 / GIB, rel=1e-6)
    # DeepSpeed's engine keeps its contiguous gradient partition between steps
    kept = _memory("deepspeed", grad_accum=1)
    assert kept.gradients == pytest.approx(PARAMS / 2 * 2 / GIB, rel=1e-6)
