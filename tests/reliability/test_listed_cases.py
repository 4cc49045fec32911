"""Every case issue 18 lists, through `ccopt` as users run it: exit 2 and one line naming the
file, the field and the allowed values (or the correct answer)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TRAIN = """name = "small"
[model]
preset = "llama-3-8b"
[workload]
kind = "lora"
tokens = {tokens}
seq_len = 2048
{batch}
[constraints]
deadline_days = {deadline}
{extra}
"""
BATCH = """name = "b"
[capacity]
horizon_days = {horizon}
[[job]]
name = "a"
model = {{ preset = "llama-3-8b" }}
workload = {{ kind = "lora", tokens = 1e8, seq_len = 2048, global_batch = 16 }}
constraints = {{ deadline_days = {deadline} }}
{extra}
"""
SERVE = """[model]
preset = "mistral-7b"
[workload]
kind = "serve"
{load}
prompt_tokens = 512
output_tokens = 256
[constraints]
ttft_s = 1.0
tpot_ms = 100
"""
DROPPABLE = """[[job]]
name = "d"
model = { preset = "llama-3-8b" }
workload = { kind = "lora", tokens = 1e8, seq_len = 2048, global_batch = 16 }
constraints = { deadline_days = 3 }
droppable = true
value_usd = 1e300
"""


def train(tokens: str = "1e8", deadline: str = "3", batch: str = "global_batch = 16", extra: str = "") -> str:
    return TRAIN.format(tokens=tokens, deadline=deadline, batch=batch, extra=extra)


def write(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


# (id, command, file text, extra args, phrase of the one-line error)
CASES = [
    (
        "tokens inf",
        "plan",
        train(tokens="inf"),
        [],
        "workload.tokens: inf is not allowed; allowed: a number > 0 and ≤ 1e+15",
    ),
    ("tokens 'inf'", "plan", train(tokens='"inf"'), [], "workload.tokens: 'inf' is not allowed"),
    (
        "deadline inf",
        "plan",
        train(deadline="inf"),
        [],
        "constraints.deadline_days: inf is not allowed; allowed: a number > 0 and ≤ 3650",
    ),
    (
        "deadline 1e308",
        "plan",
        train(deadline="1e308"),
        [],
        "constraints.deadline_days: 1e+308 is not allowed",
    ),
    ("budget inf", "plan", train(extra="budget_usd = inf"), [], "constraints.budget_usd: inf is not allowed"),
    (
        "pricing []",
        "plan",
        train(extra="pricing = []"),
        [],
        "constraints.pricing: must list at least one value",
    ),
    (
        "global_batch true",
        "plan",
        train(batch="global_batch = true"),
        [],
        "workload.global_batch: true is not allowed; allowed: an integer > 0",
    ),
    (
        "global_batch_tokens 1",
        "plan",
        train(batch="global_batch_tokens = 1\nbatch_tolerance = 0"),
        [],
        "global_batch_tokens = 1 is not a multiple of seq_len = 2048",
    ),
    (
        "batch horizon inf",
        "batch",
        BATCH.format(horizon="inf", deadline="3", extra=""),
        [],
        "capacity.horizon_days: inf is not allowed",
    ),
    (
        "batch deadline inf",
        "batch",
        BATCH.format(horizon="14", deadline="inf", extra=""),
        [],
        "job[0] (a).constraints.deadline_days: inf is not allowed",
    ),
    (
        "batch value 1e300",
        "batch",
        BATCH.format(horizon="14", deadline="3", extra=DROPPABLE),
        [],
        "job[1] (d).value_usd: 1e+300 is not allowed; allowed: a number > 0 and ≤ 1e+10",
    ),
    (
        "serve rps inf",
        "serve",
        SERVE.format(load="requests_per_s = inf"),
        [],
        "workload.requests_per_s: inf is not allowed",
    ),
    (
        "serve think 1e-300",
        "serve",
        SERVE.format(load="concurrent_users = 100\nthink_time_s = 1e-300"),
        [],
        "workload.think_time_s: 1e-300 is not allowed; allowed: a number ≥ 0.001",
    ),
    (
        "latin-1 name",
        "plan",
        train().replace('"small"', '"caf\xe9"').encode("latin-1"),
        [],
        "not UTF-8 text (byte 11: invalid continuation byte)",
    ),  # len(b'name = "caf')
    ("random bytes", "plan", b"\xff\xfe\x00garbage\x81", [], "not UTF-8 text (byte 0:"),
    (
        "--plot unknown extension",
        "plan",
        train(),
        ["--plot", "{tmp}/x.xyz"],
        "--plot: {tmp}/x.xyz: unknown extension '.xyz'; allowed: .png",
    ),
    ("--plot directory", "plan", train(), ["--plot", "{tmp}"], "--plot: {tmp} is a directory"),
    (
        "--prices directory",
        "plan",
        train(),
        ["--prices", "{tmp}"],
        "{tmp}: is a directory; allowed: an offerings CSV file",
    ),
    (
        "batch --plot directory",
        "batch",
        BATCH.format(horizon="14", deadline="3", extra=""),
        ["--plot", "{tmp}"],
        "--plot: {tmp} is a directory",
    ),
]


@pytest.mark.parametrize(
    ("command", "text", "extra", "phrase"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_job_file_is_one_line_exit_2(ccopt, tmp_path, command, text, extra, phrase) -> None:
    job = write(tmp_path, "job.toml", text)
    run = ccopt(command, job, *(a.format(tmp=tmp_path) for a in extra))
    assert run.code == 2, run.err + run.out
    assert run.err.count("\n") == 1 and "Traceback" not in run.err, run.err
    assert phrase.format(tmp=tmp_path) in run.err
    assert run.out == ""


def test_job_path_that_is_a_directory(ccopt, tmp_path) -> None:
    run = ccopt("plan", str(tmp_path))
    assert (run.code, run.err) == (2, f"error: job file is a directory: {tmp_path}\n")


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["prices", "refresh", "--timeout-s", "0"], "--timeout-s: 0.0 is not allowed; allowed: a number > 0"),
        (["prices", "refresh", "--timeout-s", "-1"], "--timeout-s: -1.0 is not allowed"),
        (["prices", "refresh", "--timeout-s", "nan"], "--timeout-s: nan is not allowed"),
        (["prices", "refresh", "--deadline-s", "inf"], "--deadline-s: inf is not allowed"),
        (["prices", "refresh", "--retries", "-1"], "--retries: -1 is not allowed; allowed: an integer ≥ 0"),
        (
            [
                "estimate",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100",
                "--num-gpus",
                "16",
                "--inter-node-gbps",
                "nan",
                "--json",
            ],
            "--inter-node-gbps: nan is not allowed",
        ),
        (
            ["estimate", "--model", "llama-3-8b", "--gpu", "h100", "--seq-len", "0"],
            "--seq-len: 0 is not allowed; allowed: an integer > 0",
        ),
        (
            ["calibrate", "--model", "llama-3-8b", "--gpu", "h100", "--tokens-per-s", "nan"],
            "--tokens-per-s: nan is not allowed",
        ),
        (
            ["calibrate", "--model", "llama-3-8b", "--gpu", "h100", "--step-time-s", "inf"],
            "--step-time-s: inf is not allowed",
        ),
    ],
)
def test_bad_option_is_one_line_exit_2(ccopt, isolated, args, phrase) -> None:
    url = ["--url", "http://127.0.0.1:9/p.csv"] if args[:2] == ["prices", "refresh"] else []
    run = ccopt(*args, *url)
    assert run.code == 2, run.err
    assert run.err.count("\n") == 1 and phrase in run.err, run.err
    assert not (isolated / "calibration.json").exists()  # nothing stored from a bad flag


@pytest.mark.parametrize(
    ("store", "phrase"),
    [
        ('{"entries": {"H100-80GB/bf16": {"efficiency": NaN}}}', ".efficiency: nan is not allowed"),
        ('{"entries": {"H100-80GB/bf16": {"efficiency": 5}}}', ".efficiency: 5 is not allowed"),
        ('{"entries": {"H100-80GB/bf16": {"efficiency": -1}}}', "allowed: a number ≥ 0.001 and ≤ 1"),
        (None, "is a directory; allowed: a JSON file path"),
    ],
)
def test_bad_calibration_store_is_exit_2(ccopt, tmp_path, monkeypatch, store, phrase) -> None:
    path = tmp_path / "store"
    if store is None:
        path.mkdir()
    else:
        path.write_text(store)
    monkeypatch.setenv("CCOPT_CALIBRATION", str(path))
    job = write(tmp_path, "job.toml", train())
    for args in (
        ["plan", job],
        ["estimate", "--model", "llama-3-8b", "--gpu", "h100"],
        ["calibrate", "--model", "llama-3-8b", "--gpu", "h100", "--step-time-s", "5"],
    ):
        run = ccopt(*args)
        assert run.code == 2, (args, run.err)
        assert f"calibration store {path}" in run.err and phrase in run.err, run.err


def test_plot_of_an_infeasible_plan_says_nothing_was_written(ccopt, tmp_path) -> None:
    job = write(tmp_path, "job.toml", train(tokens="1e13", deadline="0.01"))
    run = ccopt("plan", job, "--plot", str(tmp_path / "front.png"))
    assert run.code == 1
    assert "written to" not in run.out and "no plot written to" in run.err
    assert not (tmp_path / "front.png").exists()


def test_subprocess_bad_input_has_no_traceback(tmp_path) -> None:
    job = write(tmp_path, "job.toml", train(deadline="inf"))
    out = subprocess.run(
        [sys.executable, "-m", "optimizer", "plan", job],
        capture_output=True,
        text=True,
        timeout=60,
        env={"CCOPT_OFFLINE": "1", "PATH": ""},
    )
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, out.stderr
