"""Each framework's reader on a real public log excerpt (fixtures/README.md cites each source).
Every expected number is read by hand from the excerpt: the median of the steps after the
warm-up (steps numbered ≤ 3 by default), sorted by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.training_logs import read_training_log

FIXTURES = Path(__file__).parent / "fixtures"


def _read(name: str, warmup_steps: int = 3):
    return read_training_log(FIXTURES / name, warmup_steps)


def test_torchtitan_tps_per_gpu_tflops_mfu_and_reserved_peak():
    f = _read("torchtitan.log")
    assert f.fmt == "torchtitan"
    assert (f.steps_logged, f.steps_used, f.first_line, f.last_line) == (6, 6, 2, 10)
    # tps 5593 5856 5862 | 5864 5868 5869 -> (5862 + 5864) / 2
    assert f.tokens_per_s_per_gpu == pytest.approx(5863)
    # tflops 323.92 339.16 339.48 | 339.59 339.82 339.88 -> (339.48 + 339.59) / 2
    assert f.tflops_per_gpu == pytest.approx(339.535)
    # mfu 32.75 34.29 34.33 | 34.34 34.36 34.37 -> (34.33 + 34.34) / 2
    assert f.mfu_pct == pytest.approx(34.335)
    # memory: torchtitan prints max_reserved_gib (its % of the card: 49.66 / 0.5228 = 94.99 GiB)
    assert (f.peak_memory_gib, f.memory_kind, f.memory_line) == (49.66, "reserved", 2)
    assert f.card_gib == pytest.approx(94.99, abs=0.01)


def test_torchtitan_every_rank_printing_the_same_step():
    f = _read("torchtitan_ranks.log")
    # steps 4 4 4 5 (all > 3): tps 10007 10049 | 10050 10050 -> (10049 + 10050) / 2
    assert f.steps_used == 4
    assert f.tokens_per_s_per_gpu == pytest.approx(10049.5)
    assert f.peak_memory_gib == 66.91


def test_megatron_step_time_tflops_and_max_allocated_in_mib():
    f = _read("megatron.log")
    assert f.fmt == "megatron"
    # iterations 2, 3, 4: only iteration 4 is past the warm-up of 3 steps
    assert (f.steps_logged, f.steps_used, f.first_line) == (3, 1, 4)
    assert f.step_time_s == pytest.approx(5.3641)
    assert f.tflops_per_gpu == pytest.approx(243.5)
    # "max allocated: 54250.98583984375" MB (bytes / 2^20) = 52.979 GiB, torch's allocated kind
    assert f.peak_memory_gib == pytest.approx(54250.98583984375 / 1024)
    assert (f.memory_kind, f.memory_line) == ("allocated", 1)
    # with one warm-up step: 5364.1 | 5410.6 | 5630.1 ms -> 5.4106 s
    assert _read("megatron.log", 1).step_time_s == pytest.approx(5.4106)


def test_megatron_llm_older_line_without_tflops():
    f = _read("megatron_llm.log")
    # 86545.2 87871.6 | 89075.2 89474.8 ms -> (87871.6 + 89075.2) / 2 = 88473.4 ms
    assert f.step_time_s == pytest.approx(88.4734)
    assert f.tflops_per_gpu is None and f.peak_memory_gib is None


def test_megatron_deepspeed_reads_megatrons_iteration_line():
    f = _read("megatron_deepspeed.log")
    assert f.fmt == "megatron"  # DeepSpeed's engine lines under Megatron-DeepSpeed: Megatron's read
    assert f.step_time_s == pytest.approx(4.1031)


def test_nemo2_step_timing():
    f = _read("nemo2.log")
    assert f.fmt == "nemo"
    # global steps 120-125: 0.03146 0.03147 0.03157 | 0.03163 0.0317 0.03215 s
    assert f.step_time_s == pytest.approx((0.03157 + 0.03163) / 2)
    assert (f.steps_used, f.first_line, f.last_line) == (6, 1, 6)


def test_nemo2_without_timing_has_no_step_to_read():
    with pytest.raises(ConfigError, match="no nemo step after the warm-up .* no timed step at all"):
        _read("nemo2_untimed.log")


def test_deepspeed_current_samples_per_s_and_max_allocated():
    f = _read("deepspeed.log")
    assert f.fmt == "deepspeed"
    # CurrSamplesPerSec of steps 17-22: 145.089 155.011 155.105 | 155.144 157.806 159.629
    assert f.samples_per_s == pytest.approx((155.10475468488542 + 155.14401867030702) / 2)
    # MaxMemAllocated 2.6, 2.6, 2.6, 2.6, 2.62, 2.62 GB: the largest, first printed on line 5
    assert (f.peak_memory_gib, f.memory_kind, f.memory_line) == (2.62, "allocated", 5)


def test_deepspeed_older_average_line():
    f = _read("deepspeed_old.log")
    assert f.samples_per_s == pytest.approx((83.48609168106144 + 83.73838805358588) / 2)
    assert (f.first_line, f.last_line, f.peak_memory_gib) == (2, 5, 9.02)
    assert any("average" in n for n in f.notes)


def test_hf_trainer_tqdm_steps_and_a_truncated_last_update():
    # steps 2 and 3 at 5.01 and 5.97 s/it; the last update "9.33s/i" is cut short: not read
    f = _read("hf_trainer_bar.log", 1)
    assert f.fmt == "hf-trainer"
    assert f.step_time_s == pytest.approx((5.01 + 5.97) / 2)
    assert (f.steps_used, f.last_line) == (2, 9)


def test_hf_bare_bar_in_iterations_per_second():
    f = _read("hf_bar_only.log")
    # 1.49 1.48 | 1.47 1.45 it/s -> s/it median = (1/1.48 + 1/1.47) / 2
    assert f.step_time_s == pytest.approx((1 / 1.48 + 1 / 1.47) / 2)


def test_lightning_bar_is_per_batch_and_keeps_the_last_update_of_each_step():
    f = _read("lightning.log")
    assert f.fmt == "lightning"
    # batches 1-5 at 8.77 5.82 4.87 4.47 4.14 s/it; past the warm-up: 4 and 5 -> 4.305
    assert f.batch_time_s == pytest.approx((4.47 + 4.14) / 2)
    assert f.step_time_s is None
    assert (f.first_line, f.last_line) == (11, 13)


def test_nemo_lightning_bar_with_global_step_is_per_step():
    f = _read("nemo_lightning.log")
    assert (f.step_time_s, f.batch_time_s) == (41.36, None)


def test_composer_tokens_per_second_of_the_run():
    f = _read("composer.log")
    assert f.fmt == "composer"
    assert f.tokens_per_s == pytest.approx(20082.8418)
    assert f.step_time_s is None  # batches_per_sec (0.0027) is too coarse beside tokens/s
