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
