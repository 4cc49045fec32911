"""The whole run (optimizer/model/goodput.py): interruptions at the Llama 3 rate, Daly's
checkpoint interval, the goodput breakdown; every expected number derived by hand."""

from __future__ import annotations

import math

import pytest

from optimizer.model.comms import ring_allreduce_s
from optimizer.model.goodput import (
    BLOOM_FAILURES_PER_GPU_DAY,
    PUBLISHED_FAILURES_PER_GPU_DAY,
    FailureRate,
    RunOverheads,
    failure_rate,
    whole_run,
)
from optimizer.model.setup import PerfAssumptions

DAY_S = 86_400.0
#: Llama 3 405B (Dubey et al. 2024 §3.3.4): 16,384 H100 in 2,048 servers of 8
GPUS, INSTANCES = 16_384, 2_048
#: 405e9 parameters × 16 B (bf16 weights 2 + fp32 master 4 + two fp32 moments 8 + 2 spare):
#: 6.48e12 B, written at 1 GB/s by each of the 2,048 instances
CKPT_BYTES = 405e9 * 16


def _run(work_days: float, rate: float | None = None, startup_s: float = 1500.0):
    return whole_run(
        work_days * DAY_S,
        INSTANCES,
        GPUS,
        0.0,
        failure_rate(("hopper",), rate),
        CKPT_BYTES,
        1.0,
        600.0,
        RunOverheads(startup_s),
    )


def test_the_published_rate_is_llama3s_interruptions_per_gpu_day() -> None:
    # 419 unexpected interruptions / (54 days × 16,384 GPUs) = 419 / 884,736 = 4.7359e-4
    assert PUBLISHED_FAILURES_PER_GPU_DAY == pytest.approx(4.7359e-4, rel=1e-4)
    assert failure_rate(("hopper",), None).per_gpu_day == PUBLISHED_FAILURES_PER_GPU_DAY
    assert failure_rate(("hopper",), 1e-3).per_gpu_day == 1e-3  # the job's [assumptions] override


def test_each_generation_takes_its_published_rate() -> None:
    """BLOOM on 384 A100: 1-2 GPU failures a week (Bekman 2022) → 1.5 / (7 × 384) = 5.580e-4
    per GPU-day; a generation without a published figure takes Hopper's, marked GUESS; a mix
    of two generations the higher rate (any GPU stops the job)."""
    assert BLOOM_FAILURES_PER_GPU_DAY == pytest.approx(5.580e-4, rel=1e-3)
    ampere = failure_rate(("ampere-dc",), None)
    assert ampere.per_gpu_day == BLOOM_FAILURES_PER_GPU_DAY and "BLOOM" in ampere.source
    blackwell = failure_rate(("blackwell",), None)
    assert blackwell.per_gpu_day == PUBLISHED_FAILURES_PER_GPU_DAY
    assert blackwell.source.startswith("GUESS")
    assert failure_rate(("hopper", "ampere-dc"), None).per_gpu_day == BLOOM_FAILURES_PER_GPU_DAY


def test_a_16k_gpu_run_is_interrupted_as_often_as_llama3() -> None:
    """Llama 3: 419 / 54 = 7.76 interruptions per day on 16,384 H100 (§3.3.4). The model's rate
    × 16,384 GPUs is the same 7.76 per day (within 2× is the requirement)."""
    goodput, p = _run(30.0)
    running_days = (goodput.wall_h - goodput.startup_h) / 24
    per_day = goodput.expected_interruptions / running_days
    published = 419 / 54
    assert published / 2 <= per_day <= published * 2
    assert per_day == pytest.approx(7.759, rel=1e-3)
    assert goodput.hardware_failures_per_day == pytest.approx(7.759, rel=1e-3)
    # mean time between interruptions: 86,400 / 7.759 = 11,135 s (3.09 h)
    assert p.mtbf_s == pytest.approx(11_135, rel=1e-3)


def test_the_checkpoint_interval_is_dalys() -> None:
    """δ = 6.48e12 B / (2,048 × 1 GB/s) = 3.164 s; M = 11,135 s.
    Young: sqrt(2 × 3.164 × 11,135) = sqrt(70,464) = 265.45 s;
    Daly 2006 eq. 37: x = δ / 2M = 1.4208e-4, 265.45 × (1 + sqrt(x)/3 + x/9) − δ
    = 265.45 × 1.0039891 − 3.164 = 263.35 s."""
    goodput, p = _run(30.0)
    assert p.checkpoint_write_s == pytest.approx(3.164, abs=1e-3)
    assert p.checkpoint_interval_s == pytest.approx(263.35, abs=0.05)
    assert goodput.checkpoint_interval_h == pytest.approx(263.35 / 3600, rel=1e-3)
    # one write of 3.164 s per 263.35 s of compute: 1.20% of the compute hours
    assert goodput.checkpoint_h / goodput.compute_h == pytest.approx(3.164 / 263.35, rel=1e-3)


def test_the_breakdown_adds_up_to_the_hours() -> None:
    goodput, p = _run(30.0)
    assert goodput.compute_h == pytest.approx(30 * 24)
    assert goodput.startup_h == pytest.approx(1500 / 3600)
    assert goodput.wall_h == pytest.approx(
        goodput.compute_h + goodput.checkpoint_h + goodput.failures_h + goodput.startup_h
    )
    assert goodput.wall_h == pytest.approx(p.expected_wall_h + 1500 / 3600)
    # lost work ≈ half an interval + a restart per interruption (first order): 7.76/day ×
    # (263/2 + 600 + 3) s ≈ 5,700 s a day, 6.6% of a day; the exact Daly figure is near it
    assert goodput.failures_h / goodput.compute_h == pytest.approx(
        7.759 * (263.35 / 2 + 603.2) / DAY_S, rel=0.05
    )
    # Llama 3 kept "more than 90% effective training time" (§3.3.4): so does the model
    assert 0.9 < goodput.goodput < 1.0


def test_no_failures_no_checkpoints_nor_losses() -> None:
    goodput, _ = _run(2.0, rate=0.0, startup_s=0.0)
    assert goodput.checkpoint_h == goodput.failures_h == goodput.expected_interruptions == 0.0
    assert math.isinf(goodput.checkpoint_interval_h)
    assert goodput.wall_h == pytest.approx(48.0) and goodput.goodput == 1.0


def test_the_loss_grows_with_the_cluster() -> None:
    """Rates add over GPUs: 8 GPUs lose far less of their hours than 16,384."""
    small, _ = whole_run(
        30 * DAY_S,
        1,
        8,
        0.0,
        FailureRate(PUBLISHED_FAILURES_PER_GPU_DAY, "Llama 3"),
        CKPT_BYTES / 256,
        1.0,
        600.0,
        RunOverheads(),
    )
    large, _ = _run(30.0, startup_s=0.0)
    assert small.goodput > large.goodput
    # 8 GPUs: 8 × 4.736e-4 = 3.79e-3 interruptions a day, 0.114 in 30 days
    assert small.expected_interruptions == pytest.approx(8 * 4.7359e-4 * 30, rel=0.01)


def test_start_up_is_a_stated_overridable_guess() -> None:
    a = PerfAssumptions()
    assert (a.provisioning_s, a.startup_s, a.failures_per_gpu_day) == (600.0, 900.0, None)
    assert a.fewer_gpus_within_share == 0.02


def test_evaluation_and_conversion_add_to_the_run() -> None:
    """Megatron-LM's defaults: 100 forward-only iterations every 1,000, a forward 1/3 of a
    step → 100 / 1000 / 3 = 3.33% of the steps' time; no failures, so 10 days of steps take
    240 h + 8.0 h evaluation, + 0.5 h start-up + 0.25 h conversion = 248.75 h."""
    assert PerfAssumptions().evaluation_share == pytest.approx(0.03333, rel=1e-3)
    goodput, _ = whole_run(
        10 * DAY_S, 4, 32, 0.0, FailureRate(0.0, "none"), 1e9, 1.0, 600.0, RunOverheads(1800.0, 1 / 30, 900.0)
    )
    assert goodput.compute_h == pytest.approx(240.0)
    assert goodput.evaluation_h == pytest.approx(8.0)
    assert goodput.conversion_h == pytest.approx(0.25)
    assert goodput.wall_h == pytest.approx(248.75)
    assert goodput.goodput == pytest.approx(240 / 248.75)


def test_a_1024_way_all_reduce_pays_a_latency_per_hop() -> None:
    """Ring all-reduce: 2(n − 1) latency terms (Thakur et al. 2005, MPICH; Patarasuk & Yuan
    2009): 1,024 GPUs × 10 µs → 2 × 1,023 × 10 µs = 20.46 ms even for a 1-byte message."""
    assert ring_allreduce_s(1.0, 1024, 100.0, 10e-6) == pytest.approx(0.02046, rel=1e-3)
