"""Fuzzing the output paths (issue 29 item 1) through `ccopt` as users run it: `plan --plot`
aimed at new files, the user's own files, earlier outputs, the job file under other names, the
--prices table, the calibration store, the price cache, FIFOs, devices, directories and broken
links, with and without --force, in EXAMPLES (≥ 500) derandomized examples. Every command
writes through the same optimizer.files check (`report -o`, `batch --plot` and `measure -o` are
tested case by case in tests/cli/test_outputs.py; the report's page takes ~0.2 s to render,
too slow for 500 examples).

Properties: exit 0, 1 or 2 and never a traceback; bad input is one line; a refused output
changes no file at all; an accepted one changes only the named output, which is then an
earlier ccopt output (so the next run replaces it without --force).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optimizer.files import is_ccopt_output
from tests.reliability.test_fuzz import FUZZ, check, run

JOB = (
    "[model]\nlayers = 2\nhidden = 256\nheads = 4\nffn = 1024\nvocab = 1000\n"
    '[workload]\ntokens = 1e7\nseq_len = 256\nglobal_batch = 8\n[constraints]\ngpu_types = ["L4"]\n'
)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Offline, with the store and the cache under tmp_path (each example sets its own)."""
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


#: target -> refused whatever --force says (True), needs --force (None), accepted (False)
TARGETS = {
    "new": False,
    "earlier-output": False,
    "user-file": None,
    "missing-folder": True,
    "under-a-file": True,
    "job": True,
    "job-symlink": True,
    "job-hardlink": True,
    "prices": True,
    "calibration": True,
    "cache": True,
    "fifo": True,
    "dev-null-link": True,
    "directory": True,
    "dir-link": True,
    "dangling-link": True,
    "loop-link": True,
}


def _snapshot(root: Path) -> dict[str, Any]:
    """Every entry under `root` (links not followed): its type and mode, and its bytes' hash
    or link target."""
    seen: dict[str, Any] = {}
    for entry in sorted(root.rglob("*")):
        info = entry.lstat()
        if stat.S_ISREG(info.st_mode):
            detail: Any = hashlib.sha256(entry.read_bytes()).hexdigest()
        elif stat.S_ISLNK(info.st_mode):
            detail = os.readlink(entry)
        else:
            detail = None
        seen[str(entry.relative_to(root))] = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), detail)
    return seen


def _target(case: Path, kind: str, ext: str, job: Path) -> Path:
    out = case / f"out.{ext}"
    if kind == "earlier-output":
        out.write_text('<!doctype html><meta name="generator" content="ccopt 0.1">old')
        if ext in ("png", "svg"):  # an image ccopt wrote carries the mark in its metadata
            head = b"\x89PNG\r\n\x1a\n" if ext == "png" else b"<svg>"
            out.write_bytes(head + b"tEXtSoftware\x00made by ccopt 0.1")
    elif kind == "user-file":
        out.write_bytes(b"\x89PNG\r\n\x1a\n my holiday photo")
    elif kind == "missing-folder":
        out = case / "nowhere" / out.name
    elif kind == "under-a-file":
        out = job / out.name
    elif kind == "job":
        out = job
    elif kind == "job-symlink":
        out.symlink_to(job)
    elif kind == "job-hardlink":
        os.link(job, out)
    elif kind == "prices":
        out = case / "prices.csv"
    elif kind == "calibration":
        out = Path(os.environ["CCOPT_CALIBRATION"])
    elif kind == "cache":
        out = Path(os.environ["CCOPT_CACHE_DIR"]) / "offerings.csv"
    elif kind == "fifo":
        os.mkfifo(out)
    elif kind == "dev-null-link":
        out.symlink_to("/dev/null")
    elif kind == "directory":
        out.mkdir()
    elif kind == "dir-link":
        out.symlink_to(case)
    elif kind == "dangling-link":
        out.symlink_to(case / "gone.png")
    elif kind == "loop-link":
        out.symlink_to(out)
    return out


@FUZZ
@given(
    kind=st.sampled_from(sorted(TARGETS)),
    force=st.booleans(),
    ext=st.sampled_from(["png", "svg", "html", "toml", "xyz"]),
    with_prices=st.booleans(),
)
def test_fuzz_outputs(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    force: bool,
    ext: str,
    with_prices: bool,
) -> None:
    case = Path(tempfile.mkdtemp(dir=work))
    try:
        os.environ["CCOPT_CALIBRATION"] = str(case / "store" / "calibration.json")
        os.environ["CCOPT_CACHE_DIR"] = str(case / "cache")
        (case / "store").mkdir()
        (case / "cache").mkdir()
        (case / "cache" / "offerings.csv").write_text("a user's cache\n")
        job = case / "job.toml"
        job.write_text(JOB)
        prices = case / "prices.csv"
        shutil.copyfile(Path(__file__).parents[2] / "pricing_data" / "offerings.csv", prices)
        out = _target(case, kind, ext, job)
        args = ["plan", str(job), "--plot", str(out), "--alternatives", "0"]
        if with_prices or kind == "prices":
            args += ["--prices", str(prices)]
        if force:
            args.append("--force")
        before = _snapshot(case)
        code, output, err = run(capsys, *args)
        check(code, "", err)
        after = _snapshot(case)
        name = str(out.relative_to(case)) if out.is_relative_to(case) else None
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        refused = TARGETS[kind] or (TARGETS[kind] is None and not force)
        plot_ext = ext not in ("png", "svg")
        if refused or plot_ext:
            assert code == 2, (kind, force, err)
            assert not changed, (kind, changed)
            return
        assert code in (0, 1), (kind, err)
        assert changed <= {name}, (kind, changed)  # only the named output
        if code == 0:
            assert is_ccopt_output(out), kind
    finally:
        shutil.rmtree(case, ignore_errors=True)
