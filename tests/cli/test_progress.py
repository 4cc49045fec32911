"""Progress on stderr: shown on a terminal once the work runs over its delay, never on a pipe;
batch reports each job before enumerating it."""

from __future__ import annotations

import io
import json
import time
import tomllib
from pathlib import Path

import pytest
from rich.console import Console

from optimizer import api
from optimizer.api import report
from optimizer.cli.progress import Progress

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "batch_12_finetunes.toml"


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=100), out


def test_slow_work_on_a_terminal_shows_the_latest_line() -> None:
    console, out = _console(terminal=True)
    with Progress("starting", after_s=0.05, console=console) as progress:
        progress.say("enumerating job 3 of 12")
        time.sleep(0.4)
    assert "enumerating job 3 of 12" in out.getvalue()


def test_fast_work_and_pipes_show_nothing() -> None:
    console, out = _console(terminal=True)
    with Progress("starting", after_s=5.0, console=console) as progress:
        progress.say("done quickly")
    piped, piped_out = _console(terminal=False)
    with Progress("starting", after_s=0.0, console=piped) as progress:
        time.sleep(0.1)
    assert out.getvalue() == "" and piped_out.getvalue() == ""


@pytest.mark.usefixtures("isolated")
def test_batch_reports_every_job_before_enumerating_it() -> None:
    names = [job["name"] for job in tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))["job"]]
    seen: list[tuple[int, int, str]] = []
    api.batch(EXAMPLE, offline=True, on_job=lambda i, n, name: seen.append((i, n, name)))
    assert seen == [(i, len(names), name) for i, name in enumerate(names, start=1)]


@pytest.mark.usefixtures("isolated")
def test_report_says_it_plans_then_draws(tmp_path: Path) -> None:
    job = Path(__file__).resolve().parents[2] / "examples" / "bert_base_finetune_8gb.toml"
    stages: list[str] = []
    report.report_html(job, made_by="test", offline=True, on_stage=stages.append)
    assert stages == [f"planning {job.name} (and its comparisons)…", "drawing the charts and the page…"]
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(api.plan(job, offline=True)), encoding="utf-8")
    stages.clear()
    report.report_html(saved, made_by="test", on_stage=stages.append)
    assert stages == ["drawing the charts and the page…"]
