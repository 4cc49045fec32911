"""The calibration store never loses a run (issue 27 item 4): concurrent `ccopt calibrate`
processes all land (a lock around read-modify-write + atomic replace), and a disk that refuses
the write (read-only, full) is a one-line exit 2 with the store's bytes unchanged."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.inputs import calibration_store
from optimizer.inputs.calibration_store import add_point, load_points, update_store

pytestmark = pytest.mark.usefixtures("isolated")
runner = CliRunner()
RUN = ["-m", "llama-3-8b", "-g", "h100", "--num-gpus", "8", "--seq-len", "1024"]


def _predicted_step_s(global_batch: int) -> float:
    return api.estimate("llama-3-8b", "h100", num_gpus=8, seq_len=1024, global_batch=global_batch)["step"][
        "time_s"
    ]


#: one `calibrate` writer process: says it is ready, waits for the go file (so all 16 race at
#: once), then stores its run with the function `ccopt calibrate` stores through (add_point)
WRITER = """
import pathlib, sys, time
from optimizer.inputs.calibration_store import add_point
go, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
record = {"gpu": "H100-80GB", "precision": "bf16", "stack": "generic", "efficiency": 0.4,
          "size_factor": 0.8, "measured": {"request": {"global_batch": 8 * n}}}
add_point(record)
"""


def _race(tmp_path: Path, script: str, count: int) -> list[tuple[int, str]]:
    """Start `count` writer processes running `script` (argv: the go file, its number 1..count),
    wait until each says "ready", then let them all go at once; (exit code, stderr) of each."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(go), str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
        for n in range(1, count + 1)
    ]
    assert [p.stdout.readline().strip() if p.stdout else "" for p in procs] == ["ready"] * count
    go.touch()
    return [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in procs]


def test_16_parallel_calibrate_processes_keep_all_16_runs(tmp_path) -> None:
    store = tmp_path / "calibration.json"
    results = _race(tmp_path, WRITER, 16)  # all 16 read-modify-write the store at once
    assert [rc for rc, _ in results] == [0] * 16, results
    points = load_points(store)
    assert len(points) == 16 and len({p["id"] for p in points}) == 16
    assert sorted(p["measured"]["request"]["global_batch"] for p in points) == [8 * n for n in range(1, 17)]
    assert [f.name for f in tmp_path.iterdir() if f.name.startswith(".calibration-")] == []


def test_a_writer_waits_for_the_lock_so_no_run_is_lost(tmp_path) -> None:
    """A writer that read the store holds the lock until it has replaced it: a second writer
    started meanwhile waits, then reads the first one's result (without the lock it would
    write the store it read before, and the first run would be lost)."""
    store = tmp_path / "calibration.json"
    inside, release = threading.Event(), threading.Event()
    record = {
        "gpu": "H100-80GB",
        "precision": "bf16",
        "stack": "generic",
        "efficiency": 0.4,
        "size_factor": 0.8,
    }

    def slow_change(data: dict) -> None:
        inside.set()
        release.wait(10)
        data.setdefault("points", []).append({**record, "id": "first", "measured": {"request": {"n": 1}}})

    first = threading.Thread(target=update_store, args=(slow_change, store))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=add_point, args=({**record, "measured": {"request": {"n": 2}}}, store))
    second.start()
    time.sleep(0.3)
    assert second.is_alive()  # blocked on the lock while the first writer holds it
    release.set()
    first.join(10)
    second.join(10)
    assert sorted(p["measured"]["request"]["n"] for p in load_points(store)) == [1, 2]


def _store_one_run(tmp_path):
    store = tmp_path / "calibration.json"
    gb = 16
    ok = runner.invoke(
        app, ["calibrate", *RUN, "--global-batch", str(gb), "--step-time-s", repr(_predicted_step_s(gb))]
    )
    assert ok.exit_code == 0, ok.stderr
    return store, store.read_bytes()


def _refused_once(store, before) -> str:
    result = runner.invoke(app, ["calibrate", *RUN, "--global-batch", "64", "--step-time-s", "1.0"])
    assert result.exit_code == 2, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert "cannot write" in line and "the store is unchanged" in line and str(store) in line, line
    assert store.read_bytes() == before
    assert [f.name for f in store.parent.iterdir() if f.name.startswith(".calibration-")] == []
    return line


def _raise(code: int):
    def fail(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return fail


def test_a_full_disk_is_one_line_exit_2_and_the_store_unchanged(tmp_path, monkeypatch) -> None:
    store, before = _store_one_run(tmp_path)
    monkeypatch.setattr(calibration_store.os, "fsync", _raise(errno.ENOSPC))  # the data never lands
    assert "No space left on device" in _refused_once(store, before)


def test_a_read_only_file_system_is_one_line_exit_2_and_the_store_unchanged(tmp_path, monkeypatch) -> None:
    store, before = _store_one_run(tmp_path)
    real_open = os.open

    def read_only_open(path, flags, *args):  # what a read-only mount answers to a write open
        if flags & (os.O_RDWR | os.O_WRONLY | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *args)

    monkeypatch.setattr(calibration_store.os, "open", read_only_open)
    assert "Read-only file system" in _refused_once(store, before)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line_exit_2_and_the_store_unchanged(tmp_path) -> None:
    store, before = _store_one_run(tmp_path)
    tmp_path.chmod(0o555)
    try:
        assert "Permission denied" in _refused_once(store, before)
    finally:
        tmp_path.chmod(0o755)


def test_a_failed_replace_leaves_no_temp_file(tmp_path, monkeypatch) -> None:
    store = tmp_path / "calibration.json"
    store.write_text(json.dumps({"points": []}))
    monkeypatch.setattr(calibration_store.os, "replace", _raise(errno.EIO))
    with pytest.raises(ConfigError, match="cannot write"):
        update_store(lambda data: None, store)
    assert json.loads(store.read_text()) == {"points": []}
    assert [f.name for f in tmp_path.iterdir() if f.suffix == ".tmp"] == []


#: a writer of a run (even n) or of a measured peak (odd n): both kinds share the store's lock
MIXED_WRITER = """
import pathlib, sys, time
from optimizer.inputs.calibration_store import add_memory_point, add_point
go, n = pathlib.Path(sys.argv[1]), int(sys.argv[2])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.001)
request = {"measured": {"request": {"global_batch": 8 * n}}}
if n % 2:
    add_memory_point({"model": "llama-3-8b", "stack": "generic", "gpu": "H100-80GB", "precision": "bf16",
                      "kind": "allocated", "peak_gib": 40.0, "activation_factor": 1.0 + n / 100, **request})
else:
    add_point({"gpu": "H100-80GB", "precision": "bf16", "stack": "generic", "efficiency": 0.4,
               "size_factor": 0.8, **request})
"""


def test_parallel_run_and_peak_writers_keep_all_of_both(tmp_path) -> None:
    store = tmp_path / "calibration.json"
    results = _race(tmp_path, MIXED_WRITER, 8)
    assert [rc for rc, _ in results] == [0] * 8, results
    assert len(load_points(store)) == 4
    peaks = calibration_store.load_memory_points(store)
    assert sorted(round(p["activation_factor"], 2) for p in peaks) == [1.01, 1.03, 1.05, 1.07]
