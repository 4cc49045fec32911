"""`ccopt prices` via CliRunner on a small app that mounts prices_app (stdout / stderr apart)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from optimizer.cli.prices_cmd import prices_app
from optimizer.pricing.catalog import COLUMNS

app = typer.Typer()


@app.callback()
def _root() -> None:
    """Stand-in for the main ccopt app."""


app.add_typer(prices_app, name="prices")
runner = CliRunner()


def test_h100_json_has_all_pricing_models_from_several_providers():
    result = runner.invoke(app, ["prices", "--gpu", "H100", "--json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {r["gpu_id"] for r in rows} == {"H100-80GB"}
    assert {r["pricing_model"] for r in rows} == {
        "on_demand",
        "spot",
        "reserved_1y",
        "reserved_3y",
        "capacity_block",  # AWS EC2 Capacity Blocks (pricing_data/clusters.csv)
    }
    for model in ("on_demand", "spot", "reserved_1y"):
        assert len({r["provider"] for r in rows if r["pricing_model"] == model}) >= 2, model
    # the catalog columns first (scripts rely on them), then the plan's names and the flags
    assert list(rows[0]) == [
        *COLUMNS,
        *("gpu", "instance", "pricing", "flags", "price_source", "price", "schema_version"),
    ]
    assert rows[0]["price_source"] == "bundled" and rows[0]["price"]["as_of"] == rows[0]["as_of"]
    for r in rows:
        assert (r["gpu"], r["instance"], r["pricing"]) == (
            r["gpu_id"],
            r["instance_type"],
            r["pricing_model"],
        )
    prices = [r["usd_per_gpu_hour"] for r in rows]
    assert prices == sorted(prices)
    assert re.fullmatch(
        r"prices: bundled tables, as of 2026-12-05; (\d+ days?|-\d+ days?) old"
        r"|prices: bundled tables, as of 2026-12-05; dated today",
        result.stderr.strip(),
    )


def test_table_and_csv_outputs():
    table = runner.invoke(app, ["prices", "--gpu", "rtx4090", "--provider", "vast,runpod"])
    assert table.exit_code == 0
    assert "8x-RTX_4090-32-65536" in table.stdout and "0.346" in table.stdout
    csv_out = runner.invoke(app, ["prices", "-g", "L40S", "--pricing", "reserved_3y", "--csv"])
    assert csv_out.exit_code == 0
    lines = csv_out.stdout.splitlines()
    assert lines[0] == ",".join(COLUMNS)
    assert len(lines) > 1 and all(",reserved_3y," in line for line in lines[1:])


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--provider", "awz"], "error: provider: unknown value 'awz'"),
        (["--pricing", "monthly"], "Allowed: capacity_block, on_demand, reserved_1y, reserved_3y, spot"),
        (["--gpu", "H1000"], "error: gpu: unknown GPU 'H1000'"),
        (["--json", "--csv"], "error: output: choose one of --json or --csv"),
        (["--min-instances", "0"], "error: min_instances: must be >= 1"),
    ],
)
def test_bad_input_exit_2_one_line(args, phrase):
    result = runner.invoke(app, ["prices", *args])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert phrase in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_no_match_is_not_an_error():
    result = runner.invoke(app, ["prices", "--gpu", "MI250X"])
    assert result.exit_code == 0
    assert "no offerings match" in result.stderr


def test_offline_flag_ignores_cache(isolated_env, tiny_csv):
    isolated_env.mkdir()
    (isolated_env / "offerings.csv").write_bytes(tiny_csv.read_bytes())
    cached = runner.invoke(app, ["prices", "--json"])
    assert len(json.loads(cached.stdout)) == 3
    assert "cached tables" in cached.stderr and "as of 2026-12-01" in cached.stderr
    offline = runner.invoke(app, ["prices", "--json", "--offline"])
    assert len(json.loads(offline.stdout)) > 100
    assert "bundled tables" in offline.stderr


def test_refresh_failure_exit_4_bad_args_2_and_success(httpserver, isolated_env, tiny_csv):
    failed = runner.invoke(app, ["prices", "refresh", "--retries", "0"])
    assert failed.exit_code == 2  # no URL: the SkyPilot catalog, here a closed port
    line = failed.stderr.strip()
    assert line.startswith(
        "error: refresh from the SkyPilot catalog failed: http://127.0.0.1:9/catalogs/v8/aws/vms.csv"
    )
    assert line.endswith("keeping previous tables") and "\n" not in line
    httpserver.expect_request("/p.csv").respond_with_data(tiny_csv.read_bytes())
    ok = runner.invoke(app, ["prices", "refresh", "--url", httpserver.url_for("/p.csv")])
    assert ok.exit_code == 0, ok.stderr
    assert "3 offerings, as of 2026-12-01" in ok.stderr
    assert (isolated_env / "offerings.csv").read_bytes() == tiny_csv.read_bytes()
    httpserver.clear()
    httpserver.expect_request("/p.csv").respond_with_data("x", status=503)
    down = runner.invoke(app, ["prices", "refresh", "--url", httpserver.url_for("/p.csv"), "--retries", "0"])
    assert down.exit_code == 2  # the price source is unusable: bad input, tables kept
    assert "HTTP 503" in down.stderr and "keeping previous tables" in down.stderr
    assert (isolated_env / "offerings.csv").read_bytes() == tiny_csv.read_bytes()


def test_the_model_layer_imports_no_solver_or_dataframe():
    # optimizer.model is pure arithmetic: importing it must not pull pandas, ortools or requests
    code = (
        "import sys, optimizer.model.memory, optimizer.model.step_time, optimizer.model.serving; "
        "print(sorted(m for m in ('pandas', 'ortools', 'requests', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- price-sanity flags, --flagged, --min-instances ----------------------------------------

P4D_SPOT = ("aws", "p4d.24xlarge", "us-east-1", "spot")


def _key(r):
    return (r["provider"], r["instance_type"], r["region"], r["pricing_model"])


def test_table_shows_flags_column_and_footnote_reasons():
    result = runner.invoke(app, ["prices", "--gpu", "A100-40GB", "--provider", "aws"])
    assert result.exit_code == 0, result.stderr
    p4d_line = next(line for line in result.stdout.splitlines() if "p4d.24xlarge" in line and "spot" in line)
    assert "spot-extreme [1]" in p4d_line
    assert "flags (double-check these prices" in result.stdout
    assert "[1] spot-extreme: spot $0.308/GPU-h is 11.2% of on-demand" in result.stdout


def test_json_flags_and_flagged_filter():
    everything = json.loads(runner.invoke(app, ["prices", "--json"]).stdout)
    by_key = {_key(r): r for r in everything}
    assert [f["rule"] for f in by_key[P4D_SPOT]["flags"]] == ["spot-extreme"]
    assert set(by_key[P4D_SPOT]["flags"][0]) == {"rule", "reason"}
    result = runner.invoke(app, ["prices", "--flagged", "--json"])
    assert result.exit_code == 0, result.stderr
    flagged = json.loads(result.stdout)
    assert P4D_SPOT in {_key(r) for r in flagged}
    assert all(r["flags"] for r in flagged)
    assert {_key(r) for r in flagged} == {_key(r) for r in everything if r["flags"]}
    # filters combine with --flagged; flags are judged on the whole catalog (the on-demand
    # reference row is filtered out here)
    spot_only = json.loads(
        runner.invoke(app, ["prices", "--flagged", "--pricing", "spot", "-g", "A100-40GB", "--json"]).stdout
    )
    assert P4D_SPOT in {_key(r) for r in spot_only}
    table = runner.invoke(app, ["prices", "--flagged"])
    assert table.exit_code == 0 and "p4d.24xlarge" in table.stdout
    # H100 p5 rows are not flagged, but for the capacity block: its rates date from 2024 (stale)
    p5_lines = [line for line in table.stdout.splitlines() if "p5.48xlarge" in line]
    assert p5_lines and all("capacity_blo" in line for line in p5_lines)


def test_csv_stays_a_valid_offerings_file(tmp_path):
    out = runner.invoke(app, ["prices", "--flagged", "--csv"])
    assert out.stdout.splitlines()[0] == ",".join(COLUMNS)  # no flags column: loadable as --prices
    cache = tmp_path / "csv-cache"
    cache.mkdir()
    (cache / "offerings.csv").write_text(out.stdout, encoding="utf-8")
    reread = runner.invoke(app, ["prices", "--json"], env={"CCOPT_CACHE_DIR": str(cache)})
    assert reread.exit_code == 0 and "cached tables" in reread.stderr
    assert len(json.loads(reread.stdout)) == len(out.stdout.splitlines()) - 1


def test_min_instances_and_the_deprecated_alias_warns_once():
    from optimizer.cli import app as ccopt  # its callback prints old-name warnings on stderr

    new = runner.invoke(ccopt, ["prices", "--min-instances", "2", "--json"])
    assert new.exit_code == 0 and "warning:" not in new.stderr
    old = runner.invoke(ccopt, ["prices", "--max-instances", "2", "--json"])
    assert old.exit_code == 0
    assert old.stdout == new.stdout  # same meaning: at least 2 instances
    warnings = [line for line in old.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: --max-instances is now called --min-instances; the old name "
        "still works but will be removed in the next schema version"
    ]
    rows = json.loads(new.stdout)
    assert rows and all(r["max_instances"] is None or r["max_instances"] >= 2 for r in rows)
    hidden = runner.invoke(app, ["prices", "--help"])
    assert "--min-instances" in hidden.stdout and "--max-instances" not in hidden.stdout
    clash = runner.invoke(app, ["prices", "--min-instances", "2", "--max-instances", "3"])
    assert clash.exit_code == 2 and "disagree" in clash.stderr
