"""Docs that cannot drift: every command shown in README.md is re-run and its shown output
must match (timings and the price tables' age ignored); the job-field tables of
docs/job-files.md must equal what the input models generate. Regenerate both with
`python -m tools.readme --write`."""

from __future__ import annotations

import pytest

from tools.readme import DOCUMENTS, README, blocks, mask, regenerate, shown_output

README_BLOCKS = [b for b in blocks(README.read_text(encoding="utf-8")) if b.kind == "run"]


def test_readme_shows_the_commands_users_meet_first():
    commands = [b.command for b in README_BLOCKS]
    assert "ccopt plan examples/llama7b_10days.toml" in commands
    assert len(commands) >= 10


@pytest.mark.parametrize("block", README_BLOCKS, ids=[b.command for b in README_BLOCKS])
def test_readme_command_output_matches(block, no_user_state):
    fresh = blocks(regenerate(block_text(block)))[0]
    assert mask(shown_output(block)) == mask(shown_output(fresh)), (
        f"README output of `{block.command}` drifted; run: python -m tools.readme --write")


def block_text(block) -> str:
    return (f"<!-- ccopt:{block.kind} {block.command} -->\n{block.body}<!-- ccopt:end -->\n")


@pytest.mark.parametrize("path", DOCUMENTS[1:], ids=lambda p: p.name)
def test_field_tables_match_the_input_models(path):
    text = path.read_text(encoding="utf-8")
    fields = [b for b in blocks(text) if b.kind == "fields"]
    assert fields
    fresh = [b for b in blocks(regenerate(text)) if b.kind == "fields"]
    assert [shown_output(b) for b in fields] == [shown_output(b) for b in fresh]


def test_mask_ignores_timings_and_age_only():
    shown = "x — optimal (CP-SAT, 12 candidates, 0.013 s; prices as of 2026-12-02, 1 day old"
    later = "x — optimal (CP-SAT, 12 candidates, 0.420 s; prices as of 2026-12-02, 9 days old"
    assert mask(shown) == mask(later)
    assert mask("33,379 steps of 16.54 s") != mask("33,379 steps of 16.55 s")


def test_every_environment_variable_the_code_reads_is_documented():
    import re

    from tools.readme import ROOT

    read = set()
    for path in (ROOT / "optimizer").rglob("*.py"):
        read |= set(re.findall(r"environ(?:\.get\(|\[)\s*\"([A-Z_]+)\"", path.read_text()))
    assert {"CCOPT_OFFLINE", "CCOPT_CACHE_DIR", "CCOPT_CALIBRATION", "CCOPT_PRICES_URL"} <= read
    table = README.read_text(encoding="utf-8").split("### Environment variables", 1)[1]
    table = table.split("\n### ", 1)[0]
    assert [v for v in sorted(read) if f"`{v}" not in table] == []


def test_the_annotated_job_file_is_valid_in_todays_names():
    """The README's TOML job snippet loads with no error and no old-name warning."""
    import tomllib
    import warnings

    from optimizer.inputs.aliases import DeprecatedName
    from optimizer.inputs.jobs.train import job_from_dict

    text = README.read_text(encoding="utf-8").split("### Job files", 1)[1]
    snippet = text.split("```toml\n", 1)[1].split("```", 1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecatedName)
        job = job_from_dict(tomllib.loads(snippet), "README.md")
    assert job.constraints.gpu_types == ("A100-80GB", "H100-80GB", "RTX4090")
    assert job.hardware.buy and job.hardware.buy[0].gpu == "RTX4090"
