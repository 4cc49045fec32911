"""The RL trainer's stated configurations and the conformal RL band, against hand arithmetic:
ZeRO-Offload CPU Adam (OpenRLHF --adam_offload), NeMo-RL's state offload at refit, Megatron-core
layouts, and split conformal across sources with its few-source widening."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from benchmarks.rl_band import conformal_band, held_out_scores
from optimizer.inputs.gpus import load_gpus
from optimizer.model.cluster import Cluster
from optimizer.model.presets import get_preset
from optimizer.model.rl.phases import update_phase
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.rl.step import colocated_step, companions_gib, state_offload_s, train_side
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.solve.rl.options import usable_gib

RLA = RlAssumptions()
GRPO = RlSetup("grpo", 16, 8, 200.0, 512, 600.0, 2048)


def _spec(name: str) -> ModelSpec:
    spec = get_preset(name)
    assert isinstance(spec, ModelSpec)
    return spec


def test_conformal_band_widens_the_largest_score_with_three_sources() -> None:
    units = [("a", 0.0), ("b", 0.2), ("c", 0.5)]
    # each source against the others' median: a vs (0.2 + 0.5)/2, b vs 0.25, c vs 0.1
    assert sorted(s for _, s in held_out_scores(units)) == pytest.approx([0.05, 0.35, 0.4])
    # k = 3 < 4: q = 0.4 × 0.8 × 4/3; centre the middle source's 0.2
    q = 0.4 * 0.8 * 4 / 3
    band = conformal_band(units)
    assert band == pytest.approx((math.exp(0.2 - q), math.exp(0.2), math.exp(0.2 + q)))
    assert conformal_band([("a", 0.1), ("a", 0.3)]) is None  # one source: no band


def test_conformal_band_interpolates_with_five_sources() -> None:
    units = [("a", 0.0), ("b", 0.0), ("c", 0.0), ("d", 0.0), ("e", 1.0)]
    # scores 0, 0, 0, 0, 1 at plotting positions 1/6 .. 5/6: the 80% point is 0.8 of the way
    # from 4/6 (score 0) to 5/6 (score 1)
    band = conformal_band(units)
    assert band == pytest.approx((math.exp(-0.8), 1.0, math.exp(0.8)))


def test_cpu_adam_keeps_the_critic_state_off_the_card() -> None:
    model = _spec("llama-3-8b")
    ppo = RlSetup("ppo", 64, 1, 256.0, 512, 256.0, 512, critic=True)
    n = 8.03e9  # Llama 3 8B parameters
    # bf16 reference (2 B/param) + the critic's bf16 weights and gradients (4 B/param), over 8 GPUs
    assert companions_gib(model, replace(ppo, optimizer_offload=True), 8) == pytest.approx(
        6 * n / 8 / 2**30, rel=1e-3
    )


def test_70b_ppo_fits_24_a100s_only_with_cpu_adam() -> None:
    # per GPU of 24: policy and critic Adam states 16 B/param each = 2 × 16 × 70e9 / 24 = 93 GB
    # > 80 GB; with CPU Adam 4 B/param each + reference and reward 2 B/param each = 35 GB
    model, gpu = _spec("llama-2-70b"), load_gpus()["A100-80GB"]
    ppo = RlSetup("ppo", 1024, 1, 256.0, 1024, 512.0, 1024, critic=True, reward_model_params=model.params())
    cluster = Cluster(gpu, 8, 3, 800.0)
    a, budget = PerfAssumptions(), usable_gib(gpu.memory_gib)
    assert train_side(model, ppo, cluster, a, budget, RLA) is None
    assert train_side(model, replace(ppo, optimizer_offload=True), cluster, a, budget, RLA) is not None


def test_state_offload_is_bytes_over_the_pcie_link() -> None:
    h100 = load_gpus()["H100-80GB"]
    # PCIe gen 5 x16: 32 GT/s × 16 lanes × 128/130 / 8 = 63.0 GB/s, × 0.41 = 25.8 GB/s
    assert state_offload_s(h100, 40.0, RLA) == pytest.approx(40 * 2**30 / (63.015e9 * 0.41), rel=1e-3)
    model, a = _spec("llama-3-8b"), PerfAssumptions()
    cluster = Cluster(h100, 8, 1, 3200.0)
    plain = colocated_step(model, GRPO, cluster, a, usable_gib(80.0), RLA)
    moved = colocated_step(
        model, replace(GRPO, offload_state_at_refit=True), cluster, a, usable_gib(80.0), RLA
    )
    assert plain is not None and moved is not None
    copy = state_offload_s(h100, moved.train.update.resident_gib, RLA)
    # once to the host within the refit, once back before training
    assert moved.sync_s - plain.sync_s == pytest.approx(copy)
    assert moved.time_s - plain.time_s == pytest.approx(2 * copy)


def test_megatron_trainer_uses_the_stated_layout() -> None:
    model, gpu, a = _spec("llama-3-70b"), load_gpus()["H100-80GB"], PerfAssumptions()
    cluster = Cluster(gpu, 8, 8, 3200.0)
    rl = replace(GRPO, prompts_per_step=64, samples_per_prompt=32)
    fsdp = update_phase(model, rl, cluster, a, usable_gib(80.0), RLA)
    mega = update_phase(
        model,
        replace(rl, train_stack="megatron-core", train_tp=4, train_pp=4),
        cluster,
        a,
        usable_gib(80.0),
        RLA,
    )
    assert fsdp is not None and mega is not None
    assert (fsdp.layout.tp, fsdp.layout.pp, fsdp.layout.zero_stage) == (1, 1, 3)
    assert (mega.layout.tp, mega.layout.pp, mega.layout.dp, mega.layout.zero_stage) == (4, 4, 4, 1)
