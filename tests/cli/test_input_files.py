"""Bad input files are exit 2 with one line, never exit 3 or a hang (issue 29 item 4): FIFOs and
devices as inputs (regular files only), TOML/JSON nested deeper than MAX_NESTING, NaN,
Infinity and overflowing numbers in a config.json (strict JSON)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.files import MAX_NESTING

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "examples" / "qlora_70b_single_node.toml"
CONFIG = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}


def _invoke(args: list[str], timeout_s: float = 60) -> tuple[int, str]:
    """Run the CLI in a thread: a blocked read fails the test instead of hanging it."""
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(runner.invoke(app, args)), daemon=True)
    worker.start()
    worker.join(timeout_s)
    assert done, f"ccopt {' '.join(args)} still running after {timeout_s} s (blocked on an input?)"
    result = done[0]
    return result.exit_code, result.stderr  # type: ignore[attr-defined]


def _one_line(code: int, err: str, phrase: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert phrase in err, err


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "{fifo}"],
        ["plan", str(JOB), "--prices", "{fifo}"],
        ["report", "{fifo}", "-o", "{tmp}/r.html"],
    ],
    ids=["job", "prices", "report-source"],
)
def test_a_fifo_as_an_input_is_refused_without_blocking(tmp_path: Path, args: list[str]) -> None:
    fifo = tmp_path / "input.toml"
    os.mkfifo(fifo)
    code, err = _invoke([a.format(fifo=fifo, tmp=tmp_path) for a in args])
    _one_line(code, err, f"{fifo}: is a FIFO (named pipe); allowed: a regular file")


def test_a_device_as_the_job_file_is_refused() -> None:
    code, err = _invoke(["plan", "/dev/zero"])
    _one_line(code, err, "job file /dev/zero: is a character device; allowed: a regular file")


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 100_000])  # past the limit; past Python's stack
def test_deeply_nested_toml_is_refused(tmp_path: Path, depth: int) -> None:
    job = tmp_path / "deep.toml"
    job.write_text(JOB.read_text() + "\n[deep]\nx = " + "[" * depth + "]" * depth + "\n")
    code, err = _invoke(["plan", str(job)])
    _one_line(code, err, f"arrays/tables nested deeper than {MAX_NESTING} levels")


@pytest.mark.parametrize(
    "value, phrase",
    [
        ("NaN", "NaN is not allowed; allowed: finite numbers"),
        ("Infinity", "Infinity is not allowed"),
        ("-Infinity", "-Infinity is not allowed"),
        ("1e999", "1e999 is too large"),
        ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_NESTING} levels"),
    ],
    ids=["nan", "inf", "-inf", "overflow", "deep"],
)
def test_config_json_is_strict_json(tmp_path: Path, value: str, phrase: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG)[:-1] + f', "rope_theta": {value}}}')
    code, err = _invoke(["estimate", "--model", str(config), "--gpu", "a100"])
    _one_line(code, err, phrase)
    assert str(config) in err


def test_a_deeply_nested_saved_result_is_refused(tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    saved.write_text('{"plan": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, err = _invoke(["report", str(saved), "-o", str(tmp_path / "r.html")])
    _one_line(code, err, f"nested deeper than {MAX_NESTING} levels")
    assert not (tmp_path / "r.html").exists()


def test_a_symlink_loop_as_the_job_file_is_one_line(tmp_path: Path) -> None:
    loop = tmp_path / "job.toml"
    loop.symlink_to(loop)
    code, err = _invoke(["plan", str(loop)])
    _one_line(code, err, f"job file {loop}: cannot read (Too many levels of symbolic links)")


@pytest.mark.parametrize(
    "field, value, phrase",
    [
        ("hidden_size", "1e308", "hidden: Input should be less than or equal to 4194304"),
        ("num_hidden_layers", "1" + "0" * 30, "layers: Input should be less than or equal to 100000"),
        ("vocab_size", str(2**26 + 1), "vocab: Input should be less than or equal to 67108864"),
    ],
)
def test_a_shape_past_the_stated_range_is_bad_input(
    tmp_path: Path, field: str, value: str, phrase: str
) -> None:
    """hidden_size 1e308 was an internal error (an integer division too large for a float)."""
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({k: v for k, v in CONFIG.items() if k != field})[:-1] + f', "{field}": {value}}}'
    )
    code, err = _invoke(["estimate", "--model", str(config), "--gpu", "a100"])
    _one_line(code, err, phrase)
