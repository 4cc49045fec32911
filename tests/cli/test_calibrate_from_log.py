"""`ccopt calibrate --from-log`: the headline job's B200 plan (the P50 choice the wide Blackwell
band keeps out of the P80 plan) exported, a torchtitan-format log of that run calibrated with
--from-plan reading the export's header, and the re-plan: a run faster than predicted brings
the B200 plan in at P80 with a narrower band; a slow run leaves the H200 plan as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.api.calibrate_log import log_measurement
from optimizer.cli import app
from optimizer.inputs.training_logs import read_training_log

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "llama7b_10days.toml")
FIXTURES = Path(__file__).resolve().parents[1] / "inputs" / "training_logs" / "fixtures"
runner = CliRunner()
#: the job: llama-2-7b, global batch 1024 × seq_len 4096 tokens per step (examples/llama7b_10days.toml)
TOKENS_PER_STEP = 1024 * 4096


def _torchtitan_log(path: Path, tps_per_gpu: int) -> Path:
    """A torchtitan log of 10 steps on 8× B200 (178 GiB cards as torch reports them): three
    slower warm-up steps, then `tps_per_gpu` ± 60 tokens/s."""
    tps = [9_120, 22_870, 24_190] + [tps_per_gpu + d for d in (60, -30, 30, 0, -60, 50, -10)]
    lines = [
        f"[rank0]:[titan] 2026-12-05 04:{10 + s:02d}:00,000 - root - INFO - step: {s:2d}  loss: 9.1  "
        f"memory: 152.40GiB({152.40 / 178 * 100:.2f}%)  tps: {t:,}"
        for s, t in enumerate(tps, start=1)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _json(args: list[str]) -> dict:
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def b200_export(tmp_path) -> tuple[Path, dict]:
    """The headline job planned at P50 (8× B200 on lambda) exported for torchrun."""
    out = runner.invoke(
        app, ["plan", EXAMPLE, "--confidence", "0.5", "--export", "torchrun", "-o", str(tmp_path)]
    )
    assert out.exit_code == 0, out.stderr
    (export,) = tmp_path.glob("*.torchrun.sh")
    before = _json(["plan", EXAMPLE, "--json"])
    return export, before


def test_a_fast_b200_log_brings_the_b200_plan_in_at_p80(b200_export, tmp_path):
    export, before = b200_export
    assert before["plan"]["gpu"] == "H200-141GB"  # the headline: B200's wide band is past the deadline
    log = _torchtitan_log(tmp_path / "b200.log", 25_800)
    out = _json(["calibrate", "--from-log", str(log), "--from-plan", str(export), "--json"])
    block = out["from_log"]
    assert (block["format"], block["steps_used"], block["lines"]) == ("torchtitan", 7, [4, 10])
    # median of 25,740 .. 25,860 = 25,800 per GPU × 8 GPUs = 206,400 tokens/s
    assert block["used"]["tokens_per_s"] == 206_400
    assert out["measured_step_s"] == pytest.approx(TOKENS_PER_STEP / 206_400, rel=1e-6)  # 20.32 s
    assert (block["used"]["peak_memory_gib"], block["memory_kind"]) == (152.40, "reserved")
    assert "instance" in block["from_plan"] and "global_batch" in block["from_plan"]

    after = _json(["plan", EXAMPLE, "--json"])
    p = after["plan"]
    assert (p["gpu"], p["instance"], p["gpus"]) == ("B200", "gpu_8x_b200_sxm6", 8)
    assert out["calibrated_prediction_step_s"] == pytest.approx(20.32, abs=0.01)  # the run reproduced
    # the P80 plan may take another ZeRO stage than the measured run's: its median step comes from
    # the calibrated efficiency, within 2% of the measured 20.32 s (the prior said 21.48 s)
    assert p["step_time_s_p50"] == pytest.approx(20.32, rel=0.02)
    assert p["cost_usd"] == pytest.approx(p["hours"] * 53.52, abs=1)  # $53.52/h, lambda's 8× B200 box
    assert p["cost_usd"] < before["plan"]["cost_usd"]
    # the band narrowed: P90 / P50 step of the B200 plan was 34.363 / 21.477 = 1.60 (the prior)
    assert p["step_time_s_p90"] / p["step_time_s_p50"] < 1.4
    assert p["days"] <= 10.0  # its P80 now meets the 10-day deadline


def test_a_slow_b200_log_leaves_the_h200_plan(b200_export, tmp_path):
    export, before = b200_export
    log = _torchtitan_log(tmp_path / "slow.log", 18_000)
    out = _json(["calibrate", "--from-log", str(log), "--from-plan", str(export), "--json"])
    # 18,000 × 8 = 144,000 tokens/s: 29.13 s a step, 33,379 steps = 270 h = 11.3 days > 10
    assert out["measured_step_s"] == pytest.approx(TOKENS_PER_STEP / 144_000, rel=1e-6)
    after = _json(["plan", EXAMPLE, "--json"])
    assert after["plan"]["gpu"] == "H200-141GB"
    assert after["plan"]["cost_usd"] == before["plan"]["cost_usd"]


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--from-log", "{garbage}", "--model", "llama-2-7b", "--gpu", "B200"], "no line of a known"),
        (["--from-log", "{titan}", "--model", "llama-2-7b", "--gpu", "B200"], "line 2: inconsistent numbers"),
        (["--from-log", "{titan}", "--tokens-per-s", "5000"], "--tokens-per-s: --from-log reads"),
        (["--from-plan", "{titan}"], "--from-plan goes with --from-log"),
        (["--warmup-steps", "2"], "--warmup-steps goes with --from-log"),
        (["--from-log", "{titan}"], "give --model and --gpu or --instance"),
        (["--from-log", "{titan}", "--model", "llama-2-7b", "--gpu", "B200", "--warmup-steps", "300"],
         "no torchtitan step after the warm-up"),
    ],
)  # fmt: skip
def test_bad_logs_and_flags_exit_2_naming_the_file(tmp_path, args, phrase):
    garbage = tmp_path / "garbage.log"
    garbage.write_text("hello\nworld\n", encoding="utf-8")
    files = {"{garbage}": str(garbage), "{titan}": str(FIXTURES / "torchtitan.log")}
    out = runner.invoke(app, ["calibrate", *[files.get(a, a) for a in args]])
    assert out.exit_code == 2, out.stdout
    assert phrase in out.stderr and "Traceback" not in out.stderr


def test_a_lightning_batch_time_counts_the_accumulated_batches():
    built = api.build_configuration(
        api.request_from_options(
            {"model": "llama-2-7b", "gpu": "H100", "num_gpus": 8, "micro_batch": 2, "global_batch": 128}
        ),
        None,
        True,
    )
    assert built.layout is not None and built.layout.grad_accum == 8  # 128 / (2 × dp 8)
    fig = read_training_log(FIXTURES / "lightning.log")
    m = log_measurement(fig, built)
    # 4.305 s per batch × 8 batches per optimizer step
    assert (m.tokens_per_s, m.step_time_s) == (None, pytest.approx(4.305 * 8))


def test_importing_the_log_module_keeps_api_calibrate_run_a_function():
    # a module imported by its own name would shadow the package's lazy export of the same name
    code = (
        "from optimizer.api.calibrate_log import log_measurement\n"
        "from optimizer import api\n"
        "assert callable(api.calibrate_run), api.calibrate_run\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


B200_FLAGS = ["--model", "llama-2-7b", "--instance", "lambda:gpu_8x_b200_sxm6", "--micro-batch", "8"]
B200_FLAGS += ["--global-batch", "1024", "--seq-len", "4096", "--zero-stage", "3"]
README_LOG = str(Path(__file__).resolve().parents[2] / "examples" / "logs" / "llama7b_b200_torchtitan.log")


def test_the_text_report_says_what_the_log_gave():
    out = runner.invoke(app, ["calibrate", "--from-log", README_LOG, *B200_FLAGS])
    assert out.exit_code == 0, out.stderr
    words = " ".join(out.stdout.split())
    # steps 4-10 (file lines 5-11: the file opens with a comment line); 25,800 × 8 = 206,400
    assert "(torchtitan): 7 of 10 logged steps after the warm-up (steps ≤ 3), lines 5-11" in words
    assert "25,800 tokens/s per GPU (median of 7 steps) × 8 GPUs = 206,400 tokens/s" in words
    assert "peak 152.40 GiB reserved (line 2)" in words


def test_a_memory_kind_other_than_the_logs_is_refused():
    out = runner.invoke(
        app, ["calibrate", "--from-log", README_LOG, *B200_FLAGS, "--memory-kind", "allocated"]
    )
    assert out.exit_code == 2
    assert "prints the reserved peak; leave --memory-kind out" in out.stderr


def _titan_lines(path: Path, tps: str, memory: str) -> Path:
    """Five torchtitan step lines (steps 1-5, file lines 1-5) printing `tps` and `memory`."""
    line = "[rank0]:[titan] - root - INFO - step: {s}  loss: 9.1  memory: {m}  tps: {t}"
    path.write_text(
        "\n".join(line.format(s=s, m=memory, t=tps) for s in range(1, 6)) + "\n", encoding="utf-8"
    )
    return path


@pytest.mark.parametrize(
    ("tps", "memory", "phrase"),
    [
        # 0.1 tokens/s per GPU × 8 GPUs = 0.8 tokens/s: 1024 × 4096 tokens a step / 0.8 = 5.24e6 s > 1e6 s
        ("0.1", "152.40GiB",
         "lines 4-5: 0.1 tokens/s per GPU (median of 2 steps) × 8 GPUs = 0.8 tokens/s means 5.24e+06 s"),
        # 2e11 × 8 = 1.6e12 tokens/s > 1e12
        ("2e11", "152.40GiB", "lines 4-5: 200,000,000,000 tokens/s per GPU"),
        # 9,000 GiB per GPU on a 180 GiB B200 (× 1.05 slack = 189 GiB)
        ("25,800", "9000.40GiB", "line 1: peak memory 9000.4 GiB per GPU (reserved) is more than a B200 has"),
    ],
)  # fmt: skip
def test_log_figures_out_of_range_name_the_log_line_not_a_flag(tmp_path, tps, memory, phrase):
    log = _titan_lines(tmp_path / "run.log", tps, memory)
    out = runner.invoke(app, ["calibrate", "--from-log", str(log), *B200_FLAGS])
    assert out.exit_code == 2, out.stdout
    assert f"--from-log: {log} {phrase}" in " ".join(out.stderr.split())
    assert "--tokens-per-s" not in out.stderr and "--peak-memory-gib" not in out.stderr
