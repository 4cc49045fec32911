"""The calibration store is a regular file read with bounds, written through links with the
lock on the target (issue 47, files): a FIFO store is refused at once (never waited on), a
store nested 5,000 deep is one line and exit 2, a symlinked store keeps being the link, its
target receives the run, and two links to one store share one lock beside the target."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.inputs.calibration_file import store_target
from optimizer.inputs.calibration_store import load_points, store_lock

pytestmark = pytest.mark.usefixtures("isolated")
runner = CliRunner()
ESTIMATE = ["estimate", "-m", "llama-3-8b", "-g", "h100", "--num-gpus", "8"]
CALIBRATE = ["calibrate", "-m", "llama-3-8b", "-g", "h100", "--num-gpus", "8", "--tokens-per-s", "60000"]


def test_a_fifo_store_is_refused_without_waiting(tmp_path: Path) -> None:
    store = tmp_path / "fifo.json"
    os.mkfifo(store)
    env = {**os.environ, "CCOPT_CALIBRATION": str(store), "CCOPT_OFFLINE": "1"}
    for args in (ESTIMATE, CALIBRATE):  # a real process: a hang would hit the timeout
        done = subprocess.run(
            [sys.executable, "-m", "optimizer", *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"error: calibration store {store}: is a FIFO (named pipe); allowed: a regular file"
        ]


def test_a_store_nested_5000_deep_is_one_line_and_exit_2(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "deep.json"
    store.write_text('{"entries": {}, "points": ' + "[" * 5000 + "]" * 5000 + "}")
    monkeypatch.setenv("CCOPT_CALIBRATION", str(store))
    for args in (ESTIMATE, CALIBRATE):
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        assert "nested deeper than 64 levels" in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_symlinked_store_stays_a_link_and_its_target_receives_the_run(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "shared" / "calibration.json"
    target.parent.mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(target)
    monkeypatch.setenv("CCOPT_CALIBRATION", str(link))
    for gpus in ("8", "16"):  # two runs of other configurations (one run replaces its own)
        args = [a if a != "8" else gpus for a in CALIBRATE]
        assert runner.invoke(app, args).exit_code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert len(json.loads(target.read_text())["points"]) == 2
    assert len(load_points(link)) == 2
    assert (target.parent / "calibration.json.lock").exists() and not (tmp_path / "link.json.lock").exists()


def test_two_links_to_one_store_lock_each_other_out(tmp_path: Path) -> None:
    target = tmp_path / "calibration.json"
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.symlink_to(target)
    two.symlink_to(target)
    assert store_target(one) == store_target(two) == target
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
        "except BlockingIOError:\n    print('held')\n"
    )
    with store_lock(store_target(one)):  # what update_store holds for link one
        done = subprocess.run(
            [sys.executable, "-c", probe, str(store_target(two)) + ".lock"], capture_output=True, text=True
        )
    assert done.stdout.strip() == "held"


def _stored_run(**changes: object) -> dict:
    run = {
        "id": "a1b2c3d4",
        "gpu": "H100-80GB",
        "precision": "bf16",
        "stack": "generic",
        "efficiency": 0.4,
        "size_factor": 0.8,
        "measured": {"layout": {"dp": 8, "tp": 1, "pp": 1}, "step_time_s": 0.5, "tokens_per_s": 30000.0},
    }
    for path, value in changes.items():
        node = run
        *parents, last = path.split("__")
        for key in parents:
            node = node[key]
        node[last] = value
    return run


@pytest.mark.parametrize(
    ("change", "field", "allowed"),
    [
        ({"gpu": "H999"}, "points[0].gpu", "unknown GPU 'H999'"),
        ({"gpu": "h100"}, "points[0].gpu", "is an alias; allowed: the GPU id 'H100-80GB'"),
        ({"measured__layout__dp": 0}, "points[0].measured.layout.dp", "a whole number ≥ 1"),
        ({"measured__step_time_s": -0.5}, "points[0].measured.step_time_s", "a number > 0"),
    ],
)
def test_a_stored_run_that_would_be_ignored_or_misused_is_named(
    tmp_path, monkeypatch, change, field, allowed
):
    """Issue 47: an unknown GPU, an alias, dp = 0 or a negative step time in a stored run was
    used or ignored without a word; now one line naming the field, exit 2."""
    store = tmp_path / "calibration.json"
    store.write_text(json.dumps({"entries": {}, "points": [_stored_run(**change)]}))
    monkeypatch.setenv("CCOPT_CALIBRATION", str(store))
    result = runner.invoke(app, ESTIMATE)
    assert result.exit_code == 2, result.stdout
    assert f"calibration store {store}: {field}" in result.stderr and allowed in result.stderr
    assert "ccopt calibrate --remove" in result.stderr


def test_a_valid_stored_run_is_used(tmp_path, monkeypatch) -> None:
    store = tmp_path / "calibration.json"
    store.write_text(json.dumps({"entries": {}, "points": [_stored_run()]}))
    monkeypatch.setenv("CCOPT_CALIBRATION", str(store))
    result = runner.invoke(app, [*ESTIMATE, "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["calibrated"] is True
