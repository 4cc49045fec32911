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
        f"README output of `{block.command}` drifted; run: python -m tools.readme --write"
    )


def block_text(block) -> str:
    return f"<!-- ccopt:{block.kind} {block.command} -->\n{block.body}<!-- ccopt:end -->\n"


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


def _commands():
    """{command path: click command} of the real app, subcommands included."""
    import typer

    from optimizer.cli import app

    root = typer.main.get_command(app)
    out = {}
    for name, cmd in root.commands.items():
        out[name] = cmd
        for sub, subcmd in getattr(cmd, "commands", {}).items():
            out[f"{name} {sub}"] = subcmd
    return out


def test_the_usage_table_names_only_flags_that_exist():
    import re

    text = README.read_text(encoding="utf-8").split("## Usage", 1)[1].split("\n\n", 2)[1]
    commands = _commands()
    checked = 0
    for row in text.splitlines()[2:]:
        cell = row.split(" | ", 1)[0]
        for usage in re.findall(r"`ccopt ([^`]+)`", cell):
            words = usage.split()
            name = " ".join(words[:2]) if " ".join(words[:2]) in commands else words[0]
            if name.startswith("--"):  # `ccopt --version`
                continue
            known = {opt for p in commands[name].params for opt in p.opts if not p.hidden}
            flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", usage))
            assert flags <= known | {"--version"}, (name, sorted(flags - known))
            checked += len(flags)
    assert checked > 40


def test_every_hidden_old_flag_is_listed():
    text = README.read_text(encoding="utf-8").split("Old flag spellings still work", 1)[1]
    text = text.split("\n\n", 1)[0]
    hidden = {
        (name, opt) for name, cmd in _commands().items() for p in cmd.params if p.hidden for opt in p.opts
    }
    assert hidden and [h for h in sorted(hidden) if f"`{h[1]}`" not in text and f"{h[1]}`" not in text] == []
    assert "`serve --compare`" in text


BENCH_BLOCKS = [b for b in blocks(README.read_text(encoding="utf-8")) if b.kind == "bench"]


@pytest.mark.parametrize("block", BENCH_BLOCKS, ids=[b.command for b in BENCH_BLOCKS])
def test_benchmark_blocks_are_not_older_than_the_code_they_measure(block):
    """Every benchmark block's script is listed in tools/readme.BENCH_SOURCES, and its block
    records the hash of the code and data it measured; it must equal their hash now (else rerun
    it: python -m tools.readme --write --benchmarks --only <script name>)."""
    from tools.readme import bench_script, recorded_hash, sources_hash

    now = sources_hash(bench_script(block.command))
    assert now is not None, f"{bench_script(block.command)} is not in tools/readme.BENCH_SOURCES"
    assert recorded_hash(block) == now, (
        f"`{block.command}` was regenerated before the code it measures last changed; run: "
        f"python -m tools.readme --write --benchmarks --only {bench_script(block.command).split('/')[-1]}"
    )


def test_sources_hash_follows_the_measured_code(tmp_path, monkeypatch):
    import tools.readme as readme

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    (tmp_path / "bench.py").write_text("print(1)\n")
    monkeypatch.setattr(readme, "ROOT", tmp_path)
    monkeypatch.setitem(readme.BENCH_SOURCES, "bench.py", ("bench.py", "pkg"))
    before = readme.sources_hash("bench.py")
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    assert readme.sources_hash("bench.py") != before
    changed = readme.sources_hash("bench.py")
    (tmp_path / "pkg" / "rows.csv").write_text("a,b\n")  # a data table the benchmark reads
    assert readme.sources_hash("bench.py") != changed
    data = readme.sources_hash("bench.py")
    (tmp_path / "pkg" / "notes.txt").write_text("not read\n")
    assert readme.sources_hash("bench.py") == data
    assert readme.sources_hash("benchmarks/unlisted.py") is None
