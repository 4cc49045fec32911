"""Fuzzing bad input files (issue 29 item 4) through `ccopt` as users run it: config.json values
(NaN, ±Infinity, numbers past a float, giant integers, deep nesting), TOML job files nested to
any depth, and FIFOs, devices, directories and symlink loops given as the job file, the
--prices table or the config.json, in EXAMPLES (≥ 500) derandomized examples.

Properties: exit 0, 1 or 2, never an internal error or a traceback, bad input in one line, and
no wait on a FIFO (each run is in-process: a blocked read would hang the test).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optimizer.files import MAX_NESTING
from tests.reliability.test_fuzz import FUZZ, check, run

CONFIG = {
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
}
JOB = (
    "[model]\nlayers = 2\nhidden = 256\nheads = 4\nffn = 1024\nvocab = 1000\n"
    "[workload]\ntokens = 1e7\nseq_len = 256\nglobal_batch = 8\n"
)
NUMBER = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e308", "0", "-0.0", "1" * 5000]),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
SPECIAL = ["fifo", "dev-null", "dev-zero", "directory", "loop", "dangling"]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _special(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-null":
        path.symlink_to("/dev/null")
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "loop":
        path.symlink_to(path)
    else:
        path.symlink_to(path.parent / "gone")


@FUZZ
@given(
    family=st.sampled_from(["config-number", "config-depth", "toml-depth", "special"]),
    key=st.sampled_from(sorted(CONFIG) + ["rope_theta", "rms_norm_eps"]),
    number=NUMBER,
    depth=st.one_of(st.integers(1, 2 * MAX_NESTING), st.sampled_from([MAX_NESTING, MAX_NESTING + 1, 50_000])),
    special=st.sampled_from(SPECIAL),
    role=st.sampled_from(["job", "prices", "config"]),
)
def test_fuzz_input_files(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    family: str,
    key: str,
    number: str,
    depth: int,
    special: str,
    role: str,
) -> None:
    case = Path(tempfile.mkdtemp(dir=work))
    try:
        config = case / "config.json"
        job = case / "job.toml"
        job.write_text(JOB)
        estimate = ["estimate", "--model", str(config), "--gpu", "l4", "--json"]
        if family == "config-number":
            config.write_text(json.dumps(CONFIG)[:-1] + f', "{key}": {number}}}')
            args = estimate
        elif family == "config-depth":
            config.write_text(json.dumps(CONFIG)[:-1] + f', "extra": {"[" * depth}{"]" * depth}}}')
            args = estimate
        elif family == "toml-depth":
            job.write_text(JOB + "[extra]\nx = " + "[" * depth + "]" * depth + "\n")
            args = ["plan", str(job), "--json", "--alternatives", "0"]
        else:
            target = {"job": job, "prices": case / "prices.csv", "config": config}[role]
            target.unlink(missing_ok=True)
            _special(target, special)
            if role == "config":
                args = estimate
            else:
                args = ["plan", str(job), "--json", "--alternatives", "0"]
                if role == "prices":
                    args += ["--prices", str(target)]
        code, out, err = run(capsys, *args)
        check(code, out, err)
        if family == "special" and special in ("fifo", "dev-null", "dev-zero", "directory", "loop"):
            assert code == 2, (special, role, err)
        if family in ("config-depth", "toml-depth") and depth > MAX_NESTING:
            assert code == 2 and f"nested deeper than {MAX_NESTING}" in err, err
        if family == "config-number" and number in ("NaN", "Infinity", "-Infinity", "1e999", "-1e999"):
            assert code == 2 and str(config) in err, err
    finally:
        shutil.rmtree(case, ignore_errors=True)
