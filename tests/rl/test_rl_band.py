"""The RL step band the planner uses is the one the published RL steps give (no drift), and
every published number carries its page, date and quote."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from benchmarks.rl_accuracy import FOLDER, fit_band, rows
from optimizer.errors import ConfigError
from optimizer.inputs.jobs.rl import rl_job_from_dict
from optimizer.model.rl.setup import RlAssumptions


def test_planner_band_is_the_fitted_band() -> None:
    assert fit_band(rows()) == RlAssumptions().step_band


def test_every_number_is_cited() -> None:
    files = sorted(Path(FOLDER).glob("*.csv"))
    numbers = [r for f in files for r in csv.DictReader(f.open(newline="", encoding="utf-8"))]
    assert len(numbers) >= 10 and len({r["source_id"] for r in numbers}) >= 3
    for r in numbers:
        assert r["source_url"].startswith("https://") and r["source_date"] and r["quote"], r["case_id"]
        assert float(r["value"]) > 0


def test_step_band_override_is_checked() -> None:
    job = {
        "model": {"preset": "llama-3-8b"},
        "workload": {"kind": "grpo"},
        "rl": {
            "prompts_per_step": 8,
            "prompt_tokens_mean": 100,
            "prompt_tokens_max": 200,
            "response_tokens_mean": 100,
            "response_tokens_max": 200,
            "steps": 1,
            "assumptions": {"step_band": [2.0, 1.0, 3.0]},
        },
    }
    with pytest.raises(ConfigError, match="rl.assumptions: step_band"):
        rl_job_from_dict(job)
    job["rl"]["assumptions"] = {"step_band": [1.0, 1.5, 3.0]}  # type: ignore[index]
    assert rl_job_from_dict(job).rl.assumptions.apply(RlAssumptions()).step_band == (1.0, 1.5, 3.0)
