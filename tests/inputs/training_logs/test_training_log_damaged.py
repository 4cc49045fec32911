"""Damaged and ambiguous logs: each real excerpt cut, stripped of a field, mixed with another
framework's, or turned to garbage is either read (a figure) or refused with exit-2 wording
naming the file and, when one line is at fault, that line."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.errors import ConfigError
from optimizer.inputs.training_logs import LogFigures, read_training_log

FIXTURES = Path(__file__).parent / "fixtures"
NAMES = sorted(p.name for p in FIXTURES.glob("*.log"))


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text(encoding="utf-8").splitlines()


def _write(tmp_path: Path, lines: list[str], name: str = "run.log") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _refused(path: Path, phrase: str, line: int | None = None, warmup: int = 3) -> str:
    with pytest.raises(ConfigError) as err:
        read_training_log(path, warmup)
    text = str(err.value)
    assert text.startswith(f"--from-log: {path}")
    assert phrase in text
    if line is not None:
        assert f"{path} line {line}:" in text
    return text


def test_truncated_torchtitan_line_names_its_line(tmp_path):
    lines = _lines("torchtitan.log")
    lines[4] = lines[4][: lines[4].index("(52.2") + 5]  # "... memory: 49.66GiB(52.2" and no more
    _refused(_write(tmp_path, lines), "without tps", line=5)


def test_number_cut_after_its_thousands_comma_is_refused(tmp_path):
    lines = _lines("torchtitan.log")
    lines[1] = lines[1].replace("tps: 5,856", "tps: 5,")
    _refused(_write(tmp_path, lines), "'5,' is not a number", line=2)


def test_megatron_line_missing_its_elapsed_time(tmp_path):
    lines = _lines("megatron.log")
    lines[3] = re.sub(r"elapsed time per iteration \(ms\): [\d.]+ \| ", "", lines[3])
    _refused(_write(tmp_path, lines), "without 'elapsed time per iteration", line=4)


def test_deepspeed_line_missing_its_rate(tmp_path):
    lines = _lines("deepspeed.log")
    lines[2] = re.sub(r"CurrSamplesPerSec=[^,]+, ", "", lines[2]).replace(
        "RunningAvgSamplesPerSec", "Running"
    )
    # the line no longer reads as a timer line at all: the others are read
    f = read_training_log(_write(tmp_path, lines))
    assert f.steps_used == 5


def test_garbage_is_no_known_format(tmp_path):
    path = _write(tmp_path, ["\x00\x01 not a log", "loss went down", "12345"])
    _refused(path, "no line of a known training log")


def test_not_utf8_is_refused(tmp_path):
    path = tmp_path / "run.log"
    path.write_bytes(b"step: 1 \xff\xfe loss")
    _refused(path, "UTF-8")


def test_missing_file_is_refused(tmp_path):
    _refused(tmp_path / "nope.log", "cannot be read")


def test_two_frameworks_in_one_log_name_the_second_ones_first_line(tmp_path):
    lines = _lines("torchtitan.log") + _lines("megatron.log")
    text = _refused(_write(tmp_path, lines), "two frameworks", line=11)  # its memory line
    assert "torchtitan lines (line 2)" in text


def test_lightning_bar_beside_a_composer_log_is_ambiguous(tmp_path):
    lines = _lines("composer.log") + _lines("lightning.log")[3:5]
    _refused(_write(tmp_path, lines), "two frameworks")


def test_steps_going_back_are_two_runs(tmp_path):
    lines = _lines("torchtitan.log")
    lines.append(lines[1])  # step 200 again after step 250
    _refused(_write(tmp_path, lines), "step 200 after step 250", line=11)


def test_memory_percent_of_another_card_is_inconsistent(tmp_path):
    lines = _lines("torchtitan.log")
    lines[5] = lines[5].replace("49.66GiB(52.28%)", "49.66GiB(62.28%)")
    _refused(_write(tmp_path, lines), "inconsistent numbers: memory GiB / %", line=6)


def test_tflops_and_mfu_of_another_peak_are_inconsistent(tmp_path):
    lines = _lines("torchtitan.log")
    lines[6] = lines[6].replace("mfu: 34.37%", "mfu: 24.37%")
    _refused(_write(tmp_path, lines), "inconsistent numbers: tflops / mfu", line=7)


def test_no_step_after_the_warm_up_names_the_last_step(tmp_path):
    _refused(FIXTURES / "hf_trainer_bar.log", "the last logged step is 3", line=9)
    _refused(FIXTURES / "torchtitan.log", "--warmup-steps 250", warmup=250)


def test_trainer_dicts_without_timing_are_refused():
    _refused(FIXTURES / "hf_axolotl.log", "no timed step at all")


def test_trainer_closing_summary_is_read_when_no_step_is_timed(tmp_path):
    # a variant: the axolotl dicts followed by the Trainer's closing summary line
    lines = _lines("hf_axolotl.log") + [
        "{'train_runtime': 437.8544, 'train_samples_per_second': 25.132, 'train_steps_per_second': 3.145}"
    ]
    f = read_training_log(_write(tmp_path, lines))
    assert f.samples_per_s == 25.132
    assert (f.peak_memory_gib, f.memory_kind) == (34.89, "allocated")
    assert any("warm-up included" in n for n in f.notes)


def test_composer_peak_allocated_is_in_gb(tmp_path):
    # a variant: Composer's MemoryMonitor line added to the excerpt (GB = 10^9 bytes)
    lines = _lines("composer.log") + ["         Train memory/peak_allocated_mem: 3.8260"]
    f = read_training_log(_write(tmp_path, lines))
    assert f.peak_memory_gib == pytest.approx(3.8260e9 / 2**30)
    assert f.memory_kind == "allocated"


def test_ansi_colours_and_carriage_returns_are_read(tmp_path):
    line = _lines("torchtitan.log")[1]
    coloured = "\x1b[31m" + line.replace("tps:", "\x1b[34mtps:") + "\x1b[39m"
    bars = (
        "Epoch 0:  22%|██▏ | 4/18 [00:17<01:02,  4.47s/it]\rEpoch 0:  28%|██▊ | 5/18 [00:20<00:53,  4.14s/it]"
    )
    assert read_training_log(_write(tmp_path, [coloured])).tokens_per_s_per_gpu == 5856
    f = read_training_log(_write(tmp_path, [bars], "bars.log"))
    assert f.batch_time_s == pytest.approx((4.47 + 4.14) / 2)
    assert f.first_line == f.last_line == 1


def _damage(lines: list[str], cuts: list[tuple[int, int]], junk: str) -> list[str]:
    out = list(lines)
    for index, keep in cuts:
        i = index % len(out)
        out[i] = out[i][: keep % (len(out[i]) + 1)]
    return out + ([junk] if junk else [])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(NAMES),
    cuts=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 400)), max_size=3),
    junk=st.text(max_size=60),
    warmup=st.integers(0, 6),
)
def test_damaged_excerpts_give_a_figure_or_a_named_refusal(name, cuts, junk, warmup):
    lines = _damage(_lines(name), cuts, junk)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), lines)
        try:
            f = read_training_log(path, warmup)
        except ConfigError as exc:
            text = str(exc)
            assert text.startswith(f"--from-log: {path}") and "\n" not in text
            named = re.match(rf"--from-log: {re.escape(str(path))} line (\d+):", text)
            if named:
                assert 1 <= int(named.group(1)) <= len(lines) + 1
            return
    assert isinstance(f, LogFigures) and f.steps_used >= 1
    speeds = [f.step_time_s, f.batch_time_s, f.tokens_per_s, f.tokens_per_s_per_gpu, f.samples_per_s]
    assert any(s is not None and s > 0 for s in speeds)


@pytest.mark.parametrize(
    ("fixture", "line_index", "old", "what"),
    [
        ("torchtitan.log", 1, "step: 200", "step"),
        ("megatron.log", 1, "iteration        2/", "iteration"),
    ],
)
def test_a_step_counter_of_5000_digits_is_refused_not_a_crash(tmp_path, fixture, line_index, old, what):
    """Python refuses to convert more than 4,300 digits to an int (ValueError): the counter is
    refused as bad input naming its line, like any other damaged number."""
    lines = _lines(fixture)
    assert old in lines[line_index]
    huge = old.split()[0] + " " + "9" * 5000 + ("/" if old.endswith("/") else "")
    lines[line_index] = lines[line_index].replace(old, huge)
    _refused(_write(tmp_path, lines), f"{what} '9999", line=line_index + 1)
