"""`ccopt report`: kinds detected from job files and saved results, the output path checked
before solving, atomic writes, one-line errors, and plotly kept out of the other commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app, report_cmd
from optimizer.inputs.toml_file import read_toml
from optimizer.report.html import detect_command, inputs_from_saved, render_html
from tests.report.report_support import EXAMPLES, ROOT

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("isolated")


@pytest.mark.parametrize(
    "name, kind",
    [
        ("llama7b_10days.toml", "train"),
        ("finetune_8b_4090_vs_cloud.toml", "train"),
        ("batch_12_finetunes.toml", "batch"),
        ("batch_50_generated.toml", "batch"),
        ("serve_mistral7b_chatbot.toml", "serve"),
        ("serve_llama70b_5rps.toml", "serve"),
    ],
)
def test_job_kind_from_the_file(name: str, kind: str) -> None:
    assert report_cmd.job_kind(read_toml(EXAMPLES / name)) == kind


def test_serve_fields_without_kind_mean_a_serving_job() -> None:
    assert report_cmd.job_kind({"workload": {"requests_per_s": 2.0}}) == "serve"
    assert report_cmd.job_kind({"constraints": {"ttft_s": 1.0}, "workload": {}}) == "serve"


def _no_solving(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object, **__: object) -> None:
        raise AssertionError("solved before checking the output path")

    for name in ("plan", "compare", "serve", "batch"):
        monkeypatch.setattr(api, name, fail)


def test_output_directory_is_refused_before_solving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_solving(monkeypatch)
    done = runner.invoke(app, ["report", str(EXAMPLES / "llama7b_10days.toml"), "-o", str(tmp_path)])
    assert done.exit_code == 2
    assert "is a directory" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_output_in_a_missing_directory_is_refused_before_solving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_solving(monkeypatch)
    done = runner.invoke(
        app, ["report", str(EXAMPLES / "llama7b_10days.toml"), "-o", str(tmp_path / "nowhere" / "r.html")]
    )
    assert done.exit_code == 2
    assert "does not exist" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_report_from_a_saved_plan_result_written_atomically(tmp_path: Path) -> None:
    result = api.plan(EXAMPLES / "llama7b_10days.toml", offline=True, pareto=True)
    saved = tmp_path / "result.json"
    saved.write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "r.html"
    out.write_text("old", encoding="utf-8")  # not a ccopt output: replaced only with --force
    done = runner.invoke(app, ["report", str(saved), "-o", str(out), "--force"])
    assert done.exit_code == 0, done.output
    text = out.read_text(encoding="utf-8")
    assert f'data-value="{result["plan"]["cost_usd"]}"' in text
    assert 'id="chart-pareto"' in text and 'id="chart-deadline"' in text
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == [
        "r.html",
        "result.json",
    ]  # no temp left (cache: the isolated user cache)


@pytest.mark.parametrize("command", ["compare", "serve-compare", "batch"])
def test_saved_results_of_other_commands_are_detected(command: str) -> None:
    if command == "compare":
        data = api.compare(EXAMPLES / "finetune_8b_4090_vs_cloud.toml", offline=True)
    elif command == "serve-compare":
        data = api.serve_compare(EXAMPLES / "serve_mistral7b_chatbot.toml", offline=True)
    else:
        data = api.batch_json(api.batch(EXAMPLES / "batch_12_finetunes.toml", offline=True))
    assert detect_command(data) == command
    html = render_html(inputs_from_saved(data))
    assert "<h1" in html and "chart-" in html


@pytest.mark.parametrize(
    "content, phrase",
    [
        ("not json", "not a JSON result"),
        ("[1, 2]", "expected a JSON object"),
        ('{"hello": 1}', "not a ccopt result"),
        ('{"mode": "train", "fits": true}', "has no plan to report"),
        ('{"plan": null, "alternatives": [], "status": "maybe"}', "not a valid plan --json result"),
    ],
)
def test_bad_saved_results_are_one_line_errors(tmp_path: Path, content: str, phrase: str) -> None:
    saved = tmp_path / "bad.json"
    saved.write_text(content, encoding="utf-8")
    done = runner.invoke(app, ["report", str(saved), "-o", str(tmp_path / "r.html")])
    assert done.exit_code == 2
    assert phrase in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


def test_infeasible_job_still_gets_a_report_and_exit_1(tmp_path: Path) -> None:
    out = tmp_path / "infeasible.html"
    done = runner.invoke(app, ["report", str(EXAMPLES / "infeasible_70b_week.toml"), "-o", str(out)])
    assert done.exit_code == 1, done.output
    result = api.plan(EXAMPLES / "infeasible_70b_week.toml", offline=True)
    assert result["explanation"]["text"].split(";")[0] in out.read_text(encoding="utf-8")


def test_other_commands_do_not_import_plotly_or_jinja2() -> None:
    code = (
        "import sys, optimizer.cli, optimizer.api; "
        "print(sorted(m for m in ('plotly', 'jinja2', 'playwright') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
