"""DeepSpeed's BF16_Optimizer: a bf16 run without ZeRO (stage 0) on a DeepSpeed engine keeps the
fp32 master and Adam moments of 1/dp of the parameters and all-gathers the updated bf16
parameters (deepspeed/runtime/engine.py _do_optimizer_sanity_check -> BFLOAT16;
runtime/bf16_optimizer.py _setup_for_real_optimizer). Checked against bytes worked out by hand
for OpenLLM-France's Lucie-7B parallelism runs (Llama-2-7B shape, TP 1 × PP 2, ZeRO 0, bf16)."""

from __future__ import annotations

import pytest

from optimizer.model.memory import training_memory
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.stacks import get_stack, optimizer_sharding_stage
from optimizer.units import GIB

RAW = PerfAssumptions(use_fitted=False)
LLAMA2_7B = PRESETS["llama-2-7b"]
# the busiest of 2 pipeline stages: 16 layers × (4 × 4096² + 3 × 4096 × 11,008 + 2 × 4096)
# + the 32,000 × 4096 embedding (the last stage's head + final norm is 4096 more)
STAGE_PARAMS = 16 * (4 * 4096**2 + 3 * 4096 * 11_008 + 2 * 4096) + 32_000 * 4096 + 4096


def _memory(stack: str, precision: str, dp: int, zero: int = 0) -> tuple[float, float]:
    setup = TrainingSetup(seq_len=4096, precision=precision, stack=stack, attention="flash")
    layout = Layout(tp=1, pp=2, dp=dp, zero_stage=zero, micro_batch=1, grad_accum=64)
    m = training_memory(LLAMA2_7B, setup, layout, RAW)
    return m.gradients, m.optimizer


def test_bf16_at_zero0_shards_master_and_moments_over_dp() -> None:
    # fp32 master + two fp32 moments = 12 B per parameter, over dp 4; fp32 gradients whole
    grads, opt = _memory("megatron-deepspeed", "bf16", dp=4)
    assert opt == pytest.approx(STAGE_PARAMS * 12 / 4 / GIB, rel=1e-3)  # 9.41 GiB
    assert grads == pytest.approx(STAGE_PARAMS * 4 / GIB, rel=1e-3)  # 12.55 GiB
    # the same as ZeRO-1 for the optimizer states
    assert _memory("megatron-deepspeed", "bf16", dp=4, zero=1)[1] == pytest.approx(opt)


def test_other_precisions_and_stacks_keep_whole_states_at_zero0() -> None:
    # fp16 runs use FP16_Optimizer (no partition); Megatron-Core without its distributed optimizer
    _, fp16 = _memory("megatron-deepspeed", "fp16", dp=4)
    assert fp16 == pytest.approx(STAGE_PARAMS * 12 / GIB, rel=1e-3)
    _, core = _memory("megatron-core", "bf16", dp=4)
    assert core == pytest.approx(STAGE_PARAMS * 12 / GIB, rel=1e-3)


def test_sharding_stage_rule() -> None:
    md = get_stack("megatron-deepspeed")
    bf16 = TrainingSetup(seq_len=4096, precision="bf16", stack="megatron-deepspeed")
    assert optimizer_sharding_stage(0, md, bf16) == 1
    assert optimizer_sharding_stage(1, md, bf16) == 1
    # bf16 gradient accumulation without ZeRO is refused by DeepSpeed: no wrapper assumed
    bf16_accumulation = TrainingSetup(seq_len=4096, precision="bf16", fp32_grads=False)
    assert optimizer_sharding_stage(0, md, bf16_accumulation) == 0
    lora = TrainingSetup(seq_len=4096, precision="bf16", stack="megatron-deepspeed", method="lora")
    assert optimizer_sharding_stage(0, md, lora) == 0
    assert optimizer_sharding_stage(0, get_stack("megatron-core"), bf16) == 0
