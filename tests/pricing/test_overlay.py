"""The user's prices (issue 33 item 2): discounts, fixed prices and extra rows from
~/.config/ccopt/prices.toml ($CCOPT_PRICES_OVERLAY) or a job's [pricing], checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.pricing.catalog import load_catalog_rows

ROOT = Path(__file__).resolve().parents[2]

runner = CliRunner()

#: two offerings of one hardware class (8x H100, same links and network): only the price
#: differs, so a plan's hours and layout are the same on both and its cost scales with price
AWS_USD_PER_HOUR = 40.0
LAMBDA_USD_PER_HOUR = 32.0


def _row(provider: str, instance: str, usd: float, as_of: str = "2026-11-30") -> dict[str, str]:
    return {
        "provider": provider,
        "instance_type": instance,
        "region": "us-east-1",
        "gpu_id": "H100-80GB",
        "gpus_per_instance": "8",
        "vcpus": "192",
        "ram_gib": "2048",
        "intra_node_link": "nvlink",
        "intra_node_bw_gb_s": "450",
        "inter_node_gbps": "3200",
        "inter_node_kind": "efa",
        "inter_node_is_default": "false",
        "max_instances": "",
        "pricing_model": "on_demand",
        "usd_per_hour": f"{usd:g}",
        "usd_per_gpu_hour": f"{usd / 8:g}",
        "commitment_hours": "0",
        "derived": "false",
        "as_of": as_of,
        "source": "test",
    }


JOB = {
    "name": "lora-8b",
    "model": {"preset": "llama-3-8b"},
    "workload": {"kind": "lora", "tokens": 2e10, "seq_len": 2048, "global_batch": 64},
    "constraints": {"deadline_days": 5, "gpu_types": ["H100-80GB"], "pricing": ["on_demand"]},
}


@pytest.fixture
def prices(tmp_path, make_csv) -> Path:
    path = tmp_path / "two.csv"
    path.write_text(
        make_csv(
            [
                _row("aws", "p5.48xlarge", AWS_USD_PER_HOUR),
                _row("lambda", "gpu_8x_h100_sxm5", LAMBDA_USD_PER_HOUR),
            ]
        ),
        encoding="utf-8",
    )
    return path


def _overlay(tmp_path: Path, monkeypatch, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("CCOPT_PRICES_OVERLAY", str(path))
    return path


def _compare(prices: Path) -> dict[str, dict]:
    return dict(api.compare(JOB, prices=prices)["per_provider"])


def test_a_discount_changes_that_providers_cost_and_nothing_else(tmp_path, monkeypatch, prices):
    before = _compare(prices)
    _overlay(tmp_path, monkeypatch, "[discounts.aws]\non_demand = 0.20\n")
    after = _compare(prices)
    # same offering, same hours: cost × (1 − 0.20); the other provider is untouched
    assert after["aws"]["cost_usd"] == pytest.approx(before["aws"]["cost_usd"] * 0.80, abs=0.01)
    assert after["aws"]["hours"] == before["aws"]["hours"]
    assert after["lambda"]["cost_usd"] == before["lambda"]["cost_usd"]


@pytest.mark.parametrize(
    ("fraction", "winner"),
    # aws wins once 40 × (1 − f) < 32, i.e. f > 1 − 32/40 = 0.20
    [(0.19, "lambda"), (0.21, "aws"), (0.30, "aws")],
)
def test_a_committed_discount_flips_the_winner_where_the_arithmetic_says(
    tmp_path, monkeypatch, prices, fraction, winner
):
    lambda_alone = api.plan(JOB, prices=prices)["plan"]
    assert lambda_alone["provider"] == "lambda"  # 32 < 40 without discount
    hours, instances = lambda_alone["hours"], lambda_alone["instances"]
    _overlay(tmp_path, monkeypatch, f"[discounts.AWS]  # case-insensitive\non_demand = {fraction}\n")
    plan = api.plan(JOB, prices=prices)["plan"]
    assert plan["provider"] == winner
    usd_per_hour = AWS_USD_PER_HOUR * (1 - fraction) if winner == "aws" else LAMBDA_USD_PER_HOUR
    assert plan["hours"] == hours and plan["instances"] == instances
    assert plan["cost_usd"] == pytest.approx(usd_per_hour * instances * hours, rel=1e-3)
    assert plan["price_source"] == ("overlay" if winner == "aws" else "file")
    if winner == "aws":
        assert plan["price"]["catalog_usd_per_hour"] == AWS_USD_PER_HOUR
        assert f"on_demand {fraction:.0%} off" in plan["price"]["note"]


def test_fixed_price_and_extra_row(tmp_path, monkeypatch, prices):
    _overlay(
        tmp_path,
        monkeypatch,
        """
as_of = 2026-11-15
[[prices]]
provider = "Lambda"
instance = "GPU_8X_H100_SXM5"
usd_per_gpu_hour = 2.5     # 8 × 2.5 = 20 $/h

[[rows]]
provider = "internal"
instance = "h100-pod"
gpu = "h100"
gpus_per_instance = 8
usd_per_hour = 16.0
inter_node_gbps = 3200
inter_node_kind = "efa"
""",
    )
    rows = {(r.provider, r.instance_type): r for r in load_catalog_rows(prices).rows}
    fixed = rows[("lambda", "gpu_8x_h100_sxm5")]
    assert (fixed.usd_per_hour, fixed.usd_per_gpu_hour, fixed.origin) == (20.0, 2.5, "overlay")
    assert (fixed.catalog_usd_per_hour, str(fixed.as_of)) == (32.0, "2026-11-15")
    assert rows[("aws", "p5.48xlarge")].origin == "file"
    plan = api.plan(JOB, prices=prices)
    assert (plan["plan"]["provider"], plan["plan"]["instance"]) == ("internal", "h100-pod")  # 16 < 20 < 40
    assert plan["plan"]["price"]["note"].startswith("your row")
    assert plan["catalog"]["overlays"][0].endswith("prices.toml")


def test_a_jobs_pricing_table_applies_over_the_file(tmp_path, monkeypatch, prices):
    _overlay(tmp_path, monkeypatch, "[discounts.aws]\non_demand = 0.10\n")
    job = {**JOB, "pricing": {"discounts": {"aws": {"on_demand": 0.30}}}}
    plan = api.plan(job, prices=prices)["plan"]
    # the job's fraction replaces the file's (never compounded): 40 × 0.7 = 28 < 32
    assert plan["provider"] == "aws"
    assert plan["price"]["note"] == "on_demand 30% off (lora-8b [pricing])"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[discounts.aws]\non_demad = 0.2\n",
            "discounts.aws: unknown pricing model 'on_demad' — did you mean 'on_demand'?",
        ),
        (
            "[discounts.aws]\non_demand = 1.2\n",
            "on_demand = 1.2 is not allowed; allowed: a fraction >= 0 and < 1",
        ),
        ("[discounts.amz]\non_demand = 0.2\n", "discounts.amz: 'amz' is not a provider in the price catalog"),
        (
            '[[prices]]\nprovider = "aws"\ninstance = "p5.48xlage"\nusd_per_hour = 30\n',
            "prices[0].instance: 'p5.48xlage' is not an instance of aws in the price catalog "
            "— did you mean 'p5.48xlarge'?",
        ),
        (
            '[[prices]]\ngpu = "A100"\nusd_per_hour = 3\n',
            "prices[0].gpu: no offering in the price catalog has GPU A100-80GB",
        ),
        (
            '[[prices]]\nprovider = "aws"\ninstance = "p5.48xlarge"\n',
            "prices[0]: give exactly one of usd_per_hour or usd_per_gpu_hour",
        ),
        (
            '[[prices]]\ngpu = "H100"\nusd_per_hour = 3\npricing = ["spt"]\n',
            "prices[0].pricing[0]: Input should be 'on_demand', 'spot'",
        ),
        (
            "[discount.aws]\non_demand = 0.2\n",
            "discount: unknown field; allowed: as_of, discounts, prices, rows",
        ),
        (
            '[[rows]]\nprovider = "me"\ninstance = "box"\ngpu = "H100"\ngpus_per_instance = 8\n'
            "usd_per_gpu_hour = 250\n",
            "rows[0].usd_per_gpu_hour: 250 is not allowed; allowed: a number ≥ 0.01 and ≤ 200",
        ),
    ],
)
def test_invalid_overlay_is_one_line_naming_file_and_field(tmp_path, monkeypatch, prices, text, expected):
    path = _overlay(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as info:
        load_catalog_rows(prices)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert expected in message


def test_cli_marks_overlay_prices_and_old_ones(tmp_path, monkeypatch, prices):
    _overlay(tmp_path, monkeypatch, "[discounts.aws]\non_demand = 0.30\n")
    monkeypatch.setenv("CCOPT_PRICE_MAX_AGE_DAYS", "0")  # every row (as_of 2026-11-30) is old
    job = tmp_path / "job.json"
    job_toml = tmp_path / "job.toml"
    job_toml.write_text(
        'name = "lora-8b"\n[model]\npreset = "llama-3-8b"\n[workload]\nkind = "lora"\ntokens = 2e10\n'
        "seq_len = 2048\nglobal_batch = 64\n[constraints]\ndeadline_days = 5\n"
        'gpu_types = ["H100-80GB"]\npricing = ["on_demand"]\n',
        encoding="utf-8",
    )
    text = runner.invoke(app, ["plan", str(job_toml), "--prices", str(prices)])
    assert text.exit_code == 0, text.stderr
    assert "price: your prices (on_demand 30% off" in text.stdout and "catalog $40.00/h" in text.stdout
    assert "on_demand†⌛" in text.stdout and "† price set by your prices (overlay)" in text.stdout
    assert "older than 0 days: check it" in text.stdout
    out = runner.invoke(app, ["plan", str(job_toml), "--prices", str(prices), "--json"])
    data = json.loads(out.stdout)
    assert data["plan"]["price"]["stale"] is True and data["plan"]["price"]["max_age_days"] == 0
    monkeypatch.setenv("CCOPT_PRICES_OVERLAY", str(tmp_path / "missing.toml"))
    bad = runner.invoke(app, ["plan", str(job_toml), "--prices", str(prices)])
    assert (
        bad.exit_code == 2
        and bad.stderr.strip() == f"error: price overlay not found: {tmp_path / 'missing.toml'}"
    )
    del job


def test_serve_and_batch_files_take_pricing_where_it_applies(prices):
    import tomllib

    from optimizer.api.serve_jobs import _load
    from optimizer.inputs.jobs.batch import batch_from_dict

    root = Path(__file__).parents[2] / "examples"
    serve = tomllib.loads((root / "serve_bert_base.toml").read_text(encoding="utf-8"))
    serve["pricing"] = {"discounts": {"lambda": {"on_demand": 0.5}}}
    _job, rows, _dir, _age = _load(serve, prices, None)
    lam = next(r for r in rows or () if r.provider == "lambda")
    assert lam.usd_per_hour == LAMBDA_USD_PER_HOUR * 0.5 and lam.origin == "overlay"

    batch = tomllib.loads((root / "batch_12_finetunes.toml").read_text(encoding="utf-8"))
    assert batch_from_dict({**batch, "pricing": {"discounts": {"lambda": {"spot": 0.1}}}}).pricing is not None
    batch["job"][0]["pricing"] = {"discounts": {"lambda": {"spot": 0.1}}}
    with pytest.raises(
        ConfigError, match=r"job\[0\] \(support-bot-lora\): pricing is shared by the jobs of a batch"
    ):
        batch_from_dict(batch, "b.toml")


def test_two_entries_fixing_one_offering_at_different_prices_are_refused(tmp_path) -> None:
    """Issue 47: the last of two [[prices]] used to win silently; now neither does."""
    job = tmp_path / "dup.toml"
    job.write_text(
        (ROOT / "examples" / "llama7b_10days.toml").read_text()
        + '\n[[pricing.prices]]\nprovider = "aws"\ninstance = "p5.48xlarge"\nusd_per_gpu_hour = 1.0\n'
        + '\n[[pricing.prices]]\ngpu = "H100"\nusd_per_gpu_hour = 2.0\n'
    )
    result = CliRunner().invoke(app, ["plan", str(job), "--offline"])
    assert result.exit_code == 2
    # 8 GPUs × $1 and × $2 per GPU-hour: $8.00/h and $16.00/h for the same p5 row
    assert "prices[0] and prices[1] both fix aws p5.48xlarge us-east-1 on_demand" in result.stderr
    assert "$8.00/h and $16.00/h" in result.stderr


def test_two_entries_at_the_same_price_are_fine(tmp_path) -> None:
    job = tmp_path / "same.toml"
    job.write_text(
        (ROOT / "examples" / "llama7b_10days.toml").read_text()
        + '\n[[pricing.prices]]\nprovider = "aws"\ninstance = "p5.48xlarge"\nusd_per_gpu_hour = 2.0\n'
        + '\n[[pricing.prices]]\ngpu = "H100"\nusd_per_gpu_hour = 2.0\n'
    )
    assert CliRunner().invoke(app, ["plan", str(job), "--offline"]).exit_code == 0
