"""A held reservation the job may not use is said, never dropped without a word (issue 47)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from optimizer.cli import app

HELD = (Path(__file__).resolve().parents[2] / "examples" / "mix_held_reserved.toml").read_text()
runner = CliRunner()


def _plan(tmp_path: Path, text: str, *flags: str):
    job = tmp_path / "job.toml"
    job.write_text(text)
    return runner.invoke(app, ["plan", str(job), "--offline", *flags])


def test_a_held_reservation_outside_gpu_types_is_named_in_text_and_json(tmp_path: Path) -> None:
    # the example holds 2 p4de.24xlarge (A100-80GB); the job now allows H100s only
    text = HELD.replace('gpu_types = ["A100-80GB"]', 'gpu_types = ["H100-80GB"]')
    assert text != HELD
    shown = _plan(tmp_path, text)
    assert shown.exit_code == 0, shown.stderr
    line = (
        "note: constraints.reserved_held[0] (2× p4de.24xlarge, A100-80GB) is not used: "
        "constraints.gpu_types allows H100-80GB"
    )
    assert line in shown.stdout
    data = json.loads(_plan(tmp_path, text, "--json").stdout)
    assert data["mix"]["unused_held"] == [line.removeprefix("note: ")]
    assert "A100" not in json.dumps(data["mix"].get("why_not"))  # the A100 group is not searched


def test_a_usable_held_reservation_has_no_such_note(tmp_path: Path) -> None:
    data = json.loads(_plan(tmp_path, HELD, "--json").stdout)
    assert data["mix"]["unused_held"] == []
