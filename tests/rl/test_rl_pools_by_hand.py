"""Separate pools (cheaper generation GPUs) against one colocated pool, costs derived by hand.

Phase times are given (not modelled) so that every dollar below is arithmetic on the page:
cost = (sum of the pools' USD per hour) × steps × step seconds / 3600; bands are 1 (P50).
"""

from __future__ import annotations

import pytest

from optimizer.inputs.gpus import load_gpus
from optimizer.model.presets import get_preset
from optimizer.model.rl.phases import Generation, Update
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.rl.step import RlStep, TrainSide
from optimizer.model.setup import Layout
from optimizer.pricing.offering import Offering
from optimizer.solve.rl.candidates import colocated_candidates, separate_candidates
from optimizer.solve.rl.model import int_problem, solve_problem
from optimizer.solve.rl.options import Bands, PoolOption
from optimizer.solve.rl.validate import brute_force

STEPS = 100
MODEL = get_preset("qwen2.5-7b")  # ~7.6e9 parameters: a 15.2 GB bf16 sync
#: the sync at 3,200 Gbit/s = 400 GB/s, efficiency 1: 15.2 GB / 400 GB/s ≈ 0.038 s
RLA = RlAssumptions(sync_link_efficiency=1.0)
ONE = Bands(1.0, 1.0)


def _offering(key: str, gpu: str, gpus: int, usd_per_hour: float) -> Offering:
    spec = load_gpus()[gpu]
    return Offering(key, "cloud", "test", key, "r", "on_demand", spec, gpus, 3200.0, usd_per_hour)


def _side(logprob_s: float, update_s: float) -> TrainSide:
    return TrainSide(Update(Layout(dp=8, zero_stage=3), update_s, logprob_s, 10.0, 40.0), logprob_s, update_s)


def _gen(time_s: float) -> Generation:
    return Generation(time_s, 1, 8, 128, time_s, 0.0)


def _options(gen_l40s_s: float) -> tuple[PoolOption, PoolOption, PoolOption]:
    """8× H100 at $24/h colocated (gen 60 s + log-probs 10 s + update 20 s + reshard 2 s = 92 s);
    8× L40S at $8/h generating in `gen_l40s_s`; 2× H100 at $6/h training in 20 + 40 s."""
    h100x8 = _offering("h100x8", "H100-80GB", 8, 24.0)
    side8 = _side(10.0, 20.0)
    colo = RlStep(92.0, 60.0, 10.0, 20.0, 2.0, False, _gen(60.0), side8)
    big = PoolOption(h100x8, 1, _gen(60.0), side8, colo, ONE)
    l40s = PoolOption(_offering("l40sx8", "L40S", 8, 8.0), 1, _gen(gen_l40s_s), None, None, ONE)
    small = PoolOption(_offering("h100x2", "H100-80GB", 2, 6.0), 1, None, _side(20.0, 40.0), None, ONE)
    return big, l40s, small


def _plan(gen_l40s_s: float, async_steps: int) -> tuple[float, float, str]:
    big, l40s, small = _options(gen_l40s_s)
    rl = RlSetup("grpo", 64, 8, 256, 512, 512, 1024, async_steps=async_steps)
    cands = colocated_candidates([big], STEPS)
    cands += separate_candidates(MODEL, rl, [l40s], [small], RLA, STEPS)
    assert len(cands) == 2
    problem = int_problem(cands, None, None)
    sol = solve_problem(problem)
    assert sol.index is not None
    assert problem.candidates[sol.index].cost_cents == brute_force(problem)
    colo = next(c for c in cands if c.mode == "colocated")
    sep = next(c for c in cands if c.mode == "separate")
    return colo.cost_usd, sep.cost_usd, cands[sol.index].mode


def test_separate_pools_win_with_cheap_generation_gpus() -> None:
    # one-step off-policy: step = max(90 s generation, 20 + 40 s training) + 0.038 s sync
    colo, sep, chosen = _plan(90.0, async_steps=1)
    assert colo == pytest.approx(24.0 * STEPS * 92.0 / 3600, rel=1e-6)  # $61.33
    assert sep == pytest.approx((8.0 + 6.0) * STEPS * 90.038 / 3600, rel=1e-3)  # $35.01
    assert chosen == "separate"


def test_colocation_wins_when_generation_gpus_are_slow() -> None:
    # on-policy, the pools take turns: 150 s + 0.038 s + 60 s = 210.04 s at $14/h
    colo, sep, chosen = _plan(150.0, async_steps=0)
    assert colo == pytest.approx(61.33, abs=0.01)
    assert sep == pytest.approx(14.0 * STEPS * 210.038 / 3600, rel=1e-3)  # $81.68
    assert chosen == "colocated"
