"""No limit is ever ignored (issue 29 item 2): a name in a batch quota (provider, GPU, region),
a reservation or an owned box's GPU that matches no offering / no GPU is exit 2 naming the field,
the closest valid names and that matching is case-insensitive; any spelling of a valid name
applies the limit (one check: optimizer.pricing.offerings.catalog_rows_named)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from optimizer.errors import ConfigError
from optimizer.inputs.jobs.batch import Quota
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import cloud_offering
from optimizer.solve.batch.enumerate import quota_resource

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("isolated")

BATCH = """
[capacity]
horizon_days = 4
{capacity}
[[job]]
name = "a"
model = {{ preset = "llama-3-8b" }}
workload = {{ kind = "lora", tokens = 1e8, seq_len = 2048, global_batch = 16 }}
constraints = {{ deadline_days = 3 }}
"""
QUOTA = '[[capacity.quota]]\nprovider = "{provider}"\ngpu = "{gpu}"\nmax_gpus = 8\n{region}'
OWNED = '[[capacity.owned]]\ngpu = "{gpu}"\nnum_boxes = 1\n'


def _batch(tmp_path: Path, capacity: str) -> tuple[int, str]:
    path = tmp_path / "jobs.toml"
    path.write_text(BATCH.format(capacity=capacity), encoding="utf-8")
    done = runner.invoke(app, ["batch", str(path), "--json"])
    return done.exit_code, done.stderr


@pytest.mark.parametrize(
    "capacity, phrases",
    [
        (
            QUOTA.format(provider="lamda", gpu="H100", region=""),
            ["capacity.quota[0].provider: 'lamda' is not a provider in the price catalog", "'lambda'"],
        ),
        (  # a GPU the catalog knows, that lambda does not offer: the quota would bind nothing
            QUOTA.format(provider="lambda", gpu="MI300X", region=""),
            [
                "capacity.quota[0].gpu: 'MI300X' is not a GPU type of lambda",
                "allowed: A10, A100-40GB",
                "H100-80GB",
            ],
        ),
        (
            QUOTA.format(provider="lambda", gpu="H100", region='region = "us-est-1"'),
            ["capacity.quota[0].region: 'us-est-1' is not a region of lambda", "did you mean 'us-east-1'"],
        ),
        (
            QUOTA.format(provider="lambda", gpu="H1000", region=""),
            ["jobs.toml: capacity.quota[0].gpu: unknown GPU 'H1000'", "allowed:"],
        ),
        (OWNED.format(gpu="RTX4909"), ["capacity.owned[0].gpu: unknown GPU 'RTX4909'", "did you mean"]),
        (
            '[[capacity.reservation]]\nprovider = "aws"\ninstance = "p5.48xlage"\n'
            'pricing = "reserved_1y"\nmax_instances = 1\n',
            ["capacity.reservation[0].instance: 'p5.48xlage' is not an instance of aws", "'p5.48xlarge'"],
        ),
    ],
    ids=[
        "quota-provider",
        "quota-gpu-not-offered",
        "quota-region",
        "quota-gpu-unknown",
        "owned-gpu",
        "reservation",
    ],
)
def test_a_limit_on_nothing_is_bad_input(tmp_path: Path, capacity: str, phrases: list[str]) -> None:
    code, err = _batch(tmp_path, capacity)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert "case-insensitive" in err
    for phrase in phrases:
        assert phrase in err, err


def test_an_owned_box_of_a_job_file_names_its_entry(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text(
        'name = "x"\n[model]\npreset = "llama-3-8b"\n[workload]\nkind = "lora"\ntokens = 1e8\n'
        "seq_len = 2048\nglobal_batch = 16\n[constraints]\ndeadline_days = 3\n"
        '[[hardware.owned]]\ngpu = "RTX4090"\n[[hardware.owned]]\ngpu = "rtx 4090"\n',
        encoding="utf-8",
    )
    done = runner.invoke(app, ["plan", str(job)])
    assert done.exit_code == 2, done.stderr
    assert "hardware.owned[1].gpu: unknown GPU 'rtx 4090'" in done.stderr
    assert "case-insensitive" in done.stderr


def _cloud(rows, provider: str, gpu: str, region: str) -> Offering:  # type: ignore[no-untyped-def]
    row = next(r for r in rows if (r.provider, r.gpu_id, r.region) == (provider, gpu, region))
    return cloud_offering(row)


def test_any_spelling_of_a_valid_quota_applies(rows) -> None:  # type: ignore[no-untyped-def]
    """A quota written in capitals (before: compared as written, so it bound nothing)."""
    quota = quota_resource(rows, Quota(provider="LAMBDA", gpu="h100", max_gpus=8, region="US-EAST-1"), 0)
    assert (quota.provider, quota.gpu_id, quota.region) == ("lambda", "H100-80GB", "us-east-1")
    offering = _cloud(rows, "lambda", "H100-80GB", "us-east-1")
    assert quota.demand(offering, 2) == 2 * offering.gpus_per_instance  # 2 instances' GPUs count
    with pytest.raises(ConfigError, match=r"capacity.quota\[3\].provider"):
        quota_resource(rows, Quota(provider="nope", gpu="h100", max_gpus=8), 3)
