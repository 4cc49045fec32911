"""Fuzzing through `ccopt` as users run it (in-process `main`, offline): generated job files,
option values, calibration stores and price tables, valid and invalid.

Properties: the exit code is 0, 1 or 2 (`prices refresh` too: 2 when the download fails); never a
traceback or an internal error; bad input is one line on stderr; `--json` is strict JSON (no
NaN/Infinity); for valid inputs every answer satisfies every constraint of the file.
EXAMPLES examples per family (≥ 500), derandomized so CI sees the same inputs every run.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optimizer.cli import main
from optimizer.pricing.catalog import bundled_path
from tests.reliability.gen import batch_file, flag_value, serve_job, toml, train_job

EXAMPLES = 500
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
TOL = 1e-6


def _strict(name: str) -> Any:
    raise ValueError(f"not strict JSON: {name}")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    out = capsys.readouterr()
    return code, out.out, out.err


def check(code: int, out: str, err: str, allowed: tuple[int, ...] = (0, 1, 2)) -> Any:
    """The common properties; returns the decoded JSON answer (None on bad input)."""
    assert code in allowed, (code, err)
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        assert err.startswith("error: ") and err.count("\n") == 1, err
        return None
    return json.loads(out, parse_constant=_strict) if out.strip() else None


def _run_file(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    doc: dict[str, Any],
    valid: bool,
    command: str,
    *options: str,
) -> tuple[int, Any]:
    """Write `doc` as a job file, run `ccopt COMMAND FILE --json OPTIONS`, check the common
    properties, and that a valid file gets an answer or an infeasibility (exit 0 or 1)."""
    path = work / f"{command}.toml"
    path.write_text(toml(doc))
    code, out, err = run(capsys, command, str(path), "--json", *options)
    data = check(code, out, err)
    if valid:
        assert code in (0, 1), err
    return code, data


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _plan_meets(plan: dict[str, Any], c: dict[str, Any]) -> None:
    assert plan["hours"] <= c["deadline_hours"] * (1 + TOL) + 0.01
    if "budget_usd" in c:
        assert plan["cost_usd"] <= c["budget_usd"] * (1 + TOL) + 0.01
    assert plan["gpu"] in c["gpu_types"] and plan["pricing"] in c["pricing"]
    if "max_gpus" in c:
        assert plan["gpus"] <= c["max_gpus"]
    assert plan["memory_gib"]["device"] <= plan["gpu_memory_gib"] + TOL


@FUZZ
@given(case=train_job())
def test_fuzz_plan(work: Path, capsys: pytest.CaptureFixture[str], case: Any) -> None:
    doc, valid = case
    code, data = _run_file(work, capsys, doc, valid, "plan", "--alternatives", "0")
    if code == 0:
        for plan in [data["plan"], *data["alternatives"]]:
            _plan_meets(plan, doc["constraints"])


@FUZZ
@given(case=serve_job())
def test_fuzz_serve(work: Path, capsys: pytest.CaptureFixture[str], case: Any) -> None:
    doc, valid = case
    code, data = _run_file(work, capsys, doc, valid, "serve", "--time-limit-s", "2")
    if code == 0:
        c, plan = doc["constraints"], data["plan"]
        assert plan["ttft_s"] <= c["ttft_s"] * (1 + TOL) and plan["tpot_ms"] <= c["tpot_ms"] * (1 + TOL)
        assert plan["capacity_requests_per_s"] >= plan["load_requests_per_s"] * (1 - TOL)
        spare = {"n": 0, "n+1": 1, "n+2": 2}.get(c["redundancy"], c["redundancy"])
        assert plan["instance_failures_survived"] >= spare
        assert all(d["gpu"] in c["gpu_types"] for d in plan["deployments"])


@FUZZ
@given(case=batch_file())
def test_fuzz_batch(work: Path, capsys: pytest.CaptureFixture[str], case: Any) -> None:
    doc, valid = case
    code, data = _run_file(work, capsys, doc, valid, "batch", "--time-limit-s", "2")
    if code == 0:
        horizon_h = doc["capacity"]["horizon_days"] * 24
        by_name = {j["name"]: j for j in doc["job"]}
        for j in data["jobs"]:
            if j["status"] != "scheduled":
                assert by_name[j["name"]].get("droppable"), j
                continue
            spec = by_name[j["name"]]["constraints"]
            assert j["end_hour"] <= min(horizon_h, spec["deadline_days"] * 24) + 1e-6
            assert j["gpu"] in spec["gpu_types"]
        s = data["solver"]  # an honest bound: never above the objective it bounds
        assert s["best_bound_usd"] <= s["objective_usd"] + 1e-9
        assert s["gap"] >= 0


ESTIMATE_FLAGS = [
    "--num-gpus",
    "--tp",
    "--pp",
    "--micro-batch",
    "--seq-len",
    "--global-batch",
    "--inter-node-gbps",
    "--efficiency",
    "--lora-rank",
    "--virtual-stages",
]


@FUZZ
@given(
    command=st.sampled_from(["estimate", "calibrate", "refresh", "plan"]),
    flag=st.sampled_from(ESTIMATE_FLAGS),
    value=flag_value,
)
def test_fuzz_options(
    work: Path, capsys: pytest.CaptureFixture[str], command: str, flag: str, value: str
) -> None:
    if command == "estimate":
        args = ["estimate", "--model", "llama-3-8b", "--gpu", "l4", flag, value, "--json"]
    elif command == "calibrate":
        which = "--tokens-per-s" if flag < "--m" else "--step-time-s"
        args = ["calibrate", "--model", "llama-3-8b", "--gpu", "l4", which, value, "--json"]
    elif command == "refresh":  # a closed port: valid arguments fail fast with exit 2 (unusable price source)
        which = {"--tp": "--retries", "--pp": "--deadline-s"}.get(flag, "--timeout-s")
        args = [
            "prices",
            "refresh",
            "--url",
            "http://127.0.0.1:9/p.csv",
            "--retries",
            "0",
            "--deadline-s",
            "0.3",
            which,
            value,
        ]  # retries back off past the deadline: fast
    else:
        job = work / "job.toml"
        job.write_text(
            "[model]\nlayers = 2\nhidden = 256\nheads = 4\nffn = 1024\nvocab = 1000\n"
            "[workload]\ntokens = 1e7\nseq_len = 256\nglobal_batch = 8\n"
            '[constraints]\ngpu_types = ["L4"]\n'
        )
        which = "--alternatives" if flag < "--m" else "--time-limit-s"
        args = ["plan", str(job), which, value, "--json"]
    (work / "calibration.json").unlink(missing_ok=True)  # the fixture outlives one example
    code, out, err = run(capsys, *args)
    check(code, out, err, (0, 1, 2))
    if command == "calibrate" and code == 2:
        assert not (work / "calibration.json").exists()  # nothing stored from bad input


_ROWS = bundled_path().read_text(encoding="utf-8").splitlines()[:4]
_HEADER = next(csv.reader([_ROWS[0]]))
CELL = st.sampled_from(
    ["nan", "inf", "-1", "0", "", "abc", "1e308", "true", "2", "0.5", "2026-01-01", "1e-300"]
)


@FUZZ
@given(
    kind=st.sampled_from(["prices", "calibration"]),
    column=st.sampled_from(_HEADER),
    row=st.integers(1, 3),
    cell=CELL,
    efficiency=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([None, True, "x", [], 0.4, 1, 5, -1])
    ),
    garbage=st.one_of(st.none(), st.binary(max_size=40)),
)
def test_fuzz_files(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    column: str,
    row: int,
    cell: str,
    efficiency: Any,
    garbage: bytes | None,
) -> None:
    if kind == "prices":
        rows = [next(csv.reader([r])) for r in _ROWS]
        rows[row][_HEADER.index(column)] = cell
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        prices = work / "prices.csv"
        prices.write_bytes(garbage if garbage is not None else text.getvalue().encode())
        job = work / "job.toml"
        job.write_text(
            "[model]\nlayers = 2\nhidden = 256\nheads = 4\nffn = 1024\nvocab = 1000\n"
            "[workload]\ntokens = 1e7\nseq_len = 256\nglobal_batch = 8\n"
        )
        code, out, err = (
            run(capsys, "plan", str(job), "--prices", str(prices), "--json", "--alternatives", "0")
            if row == 1
            else run(
                capsys,
                "estimate",
                "--model",
                "llama-3-8b",
                "--instance",
                f"{rows[1][0]}:{rows[1][1]}",
                "--prices",
                str(prices),
                "--json",
            )
        )
        check(code, out, err)
        return
    store = work / "calibration.json"
    entry = {"entries": {"L4/bf16": {"efficiency": efficiency}}}
    store.write_bytes(garbage if garbage is not None else json.dumps(entry, allow_nan=True).encode())
    code, out, err = run(capsys, "estimate", "--model", "llama-3-8b", "--gpu", "l4", "--json")
    data = check(code, out, err)
    good = (
        isinstance(efficiency, (int, float))
        and not isinstance(efficiency, bool)
        and math.isfinite(efficiency)
        and 0.001 <= efficiency <= 1
    )
    if garbage is None:
        assert (code == 0) == good, (efficiency, err)
    if data is not None:
        assert 0 < data["efficiency"] <= 1
