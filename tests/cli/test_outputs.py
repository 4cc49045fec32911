"""Every file a command writes (`report -o`, `plan --plot`, `batch --plot`, `measure -o`) goes
through optimizer.files: the same refusals, the same one line and exit 2, before any solving."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
runner = CliRunner()

JOB = (EXAMPLES / "qlora_70b_single_node.toml").read_text(encoding="utf-8")
BATCH = (EXAMPLES / "batch_12_finetunes.toml").read_text(encoding="utf-8")
CONFIG = {"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
#: command -> (its input file's name and text, the arguments before the output flag, the flag)
COMMANDS = {
    "report": ("job.toml", JOB, ["report", "{input}"], "-o"),
    "plan": ("job.toml", JOB, ["plan", "{input}"], "--plot"),
    "batch": ("jobs.toml", BATCH, ["batch", "{input}"], "--plot"),
    "measure": ("config.json", json.dumps(CONFIG), ["measure", "--hf-config", "{input}"], "-o"),
}


@pytest.fixture
def no_solving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal comes before any solving or measuring."""

    def fail(*_: object, **__: object) -> None:
        raise AssertionError("worked before checking the output path")

    for name in ("plan", "compare", "serve", "batch"):
        monkeypatch.setattr(api, name, fail)
    monkeypatch.setattr("optimizer.api.measure.measure", fail)


def _run(tmp_path: Path, command: str, output: Path, *extra: str) -> tuple[int, str, Path]:
    name, text, args, flag = COMMANDS[command]
    source = tmp_path / name
    if not source.exists():
        source.write_text(text, encoding="utf-8")
    argv = [a.format(input=source) for a in args] + [flag, str(output), *extra]
    done = runner.invoke(app, argv)
    return done.exit_code, done.stderr, source


def _one_line(code: int, err: str, *phrases: str) -> None:
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for phrase in phrases:
        assert phrase in err, err


@pytest.mark.usefixtures("no_solving")
@pytest.mark.parametrize("command", COMMANDS)
def test_the_input_under_another_name_is_never_replaced(tmp_path: Path, command: str) -> None:
    name, text, _, flag = COMMANDS[command]
    (tmp_path / name).write_text(text, encoding="utf-8")
    link = tmp_path / "out.png"
    link.symlink_to(tmp_path / name)
    code, err, source = _run(tmp_path, command, link, "--force")
    what = {"report": "the file it reports", "measure": "the --hf-config file"}.get(command, "the job file")
    shown = "--output" if command == "measure" else flag
    _one_line(
        code, err, f"{shown}: {link} is a symlink to {source}, which is {what}", "never writes over an input"
    )
    assert source.read_text(encoding="utf-8") == text


@pytest.mark.usefixtures("no_solving")
@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_folder_is_the_same_one_line_everywhere(tmp_path: Path, command: str) -> None:
    code, err, _ = _run(tmp_path, command, tmp_path / "nowhere" / "out.png")
    _one_line(
        code, err, f"directory {tmp_path / 'nowhere'} does not exist (ccopt creates none; make it first)"
    )
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.usefixtures("no_solving")
@pytest.mark.parametrize("command", COMMANDS)
def test_a_file_not_written_by_ccopt_needs_force(tmp_path: Path, command: str) -> None:
    mine = tmp_path / "mine.png"
    mine.write_bytes(b"\x89PNG\r\n\x1a\n my holiday photo")
    code, err, _ = _run(tmp_path, command, mine)
    _one_line(code, err, f"{mine} exists and is not an earlier ccopt output; add --force to replace it")
    assert mine.read_bytes().endswith(b"holiday photo")


@pytest.mark.usefixtures("no_solving")
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", ["fifo", "dev-null", "directory", "calibration", "cache", "prices"])
def test_stores_devices_fifos_and_directories_are_refused(tmp_path: Path, command: str, kind: str) -> None:
    target = tmp_path / "out.png"
    extra = ["--force"]
    if kind == "fifo":
        os.mkfifo(target)
        phrase = "is a FIFO (named pipe)"
    elif kind == "dev-null":
        target.symlink_to("/dev/null")
        phrase = "is a symlink to /dev/null, which is a character device"
    elif kind == "directory":
        target = tmp_path / "plots.png"
        target.mkdir()
        phrase = "is a directory"
    elif kind == "calibration":  # the isolated fixture's store: absent, still ccopt's
        target = Path(os.environ["CCOPT_CALIBRATION"])
        phrase = "is where ccopt keeps the calibration store"
    elif kind == "cache":
        target = Path(os.environ["CCOPT_CACHE_DIR"]) / "offerings.csv"
        target.parent.mkdir(parents=True)
        target.write_text("provider\n")
        phrase = "is the price cache; ccopt never writes over an input"
    else:
        if command == "measure":
            pytest.skip("measure reads no price table")
        target = tmp_path / "prices.csv"
        target.write_text("provider\n")
        extra += ["--prices", str(target)]
        phrase = "is the --prices table"
    code, err, _ = _run(tmp_path, command, target, *extra)
    _one_line(code, err, phrase)


def test_a_report_replaces_its_earlier_output_but_not_a_file_of_the_user(tmp_path: Path) -> None:
    result = api.plan(EXAMPLES / "qlora_70b_single_node.toml", offline=True)
    saved = tmp_path / "result.json"
    saved.write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "r.html"
    out.write_text("<p>my page</p>", encoding="utf-8")
    refused = runner.invoke(app, ["report", str(saved), "-o", str(out)])
    _one_line(refused.exit_code, refused.stderr, "add --force")
    assert out.read_text(encoding="utf-8") == "<p>my page</p>"
    forced = runner.invoke(app, ["report", str(saved), "-o", str(out), "--force"])
    assert forced.exit_code == 0, forced.stderr
    again = runner.invoke(app, ["report", str(saved), "-o", str(out)])  # an earlier ccopt output
    assert again.exit_code == 0, again.stderr
    assert '<meta name="generator" content="ccopt ' in out.read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["r.html", "result.json"]


def test_a_plot_replaces_its_earlier_output(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "front.png"
    job = str(EXAMPLES / "qlora_70b_single_node.toml")
    for _ in range(2):  # the second run replaces the first plot without --force
        done = runner.invoke(app, ["plan", job, "--plot", str(out)])
        assert done.exit_code == 0, done.stderr
    assert b"made by ccopt" in out.read_bytes()[:200]


POINT = {
    "kind": "ccopt-calibration-point",
    "model": "resnet50",
    "device": "cuda",
    "precision": "fp16",
    "micro_batch": 32,
    "samples_per_s": 900,
    "num_gpus": 1,
    "gpu": "T4",
}


@pytest.mark.parametrize("how", ["tokens-per-s", "from-point"])
def test_an_unwritable_calibration_store_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """/proc takes no new file, even for root: the store's atomic write fails (was exit 3)."""
    monkeypatch.setenv("CCOPT_CALIBRATION", "/proc/ccopt-calibration.json")
    if how == "tokens-per-s":
        args = ["calibrate", "--model", "llama-3-8b", "--gpu", "l4", "--tokens-per-s", "300"]
    else:
        point = tmp_path / "point.json"
        point.write_text(json.dumps(POINT), encoding="utf-8")
        args = ["calibrate", "--from", str(point)]
    done = runner.invoke(app, args)
    _one_line(
        done.exit_code,
        done.stderr,
        "calibration store /proc/ccopt-calibration.json: cannot write (",
    )
    assert "the store is unchanged" in done.stderr and not Path("/proc/ccopt-calibration.json").exists()
