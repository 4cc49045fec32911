"""`[data]` bad input: negative or absurd sizes and rates, unknown places — one line on stderr
naming the field, exit 2 (issue 16)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

runner = CliRunner()

JOB = """name = "j"
[model]
preset = "gpt2"
[workload]
kind = "pretrain"
tokens = 1e8
seq_len = 1024
global_batch = 64
[constraints]
deadline_days = 5
[data]
{data}
"""


pytestmark = pytest.mark.usefixtures("isolated")


@pytest.mark.parametrize(
    ("data", "phrases"),
    [
        ("dataset_gb = -5", ["data.dataset_gb", "-5 is not allowed", "> 0"]),
        ("dataset_gb = 0", ["data.dataset_gb"]),
        ("dataset_gb = 1e12", ["data.dataset_gb", "1e+08"]),  # 1 ZB: beyond the 100 PB bound
        ("dataset_gb = 10\nsamples_per_s_per_vcpu = -3", ["data.samples_per_s_per_vcpu"]),
        ("dataset_gb = 10\nsamples_per_s_per_vcpu = 1e9", ["data.samples_per_s_per_vcpu"]),
        ("dataset_gb = 10\nloader_samples_per_s = 500", ["loader_vcpus"]),
        ('dataset_gb = 10\nkind = "video"', ["data.kind", "text", "image"]),
        ('dataset_gb = 10\naccess = "nfs"', ["data.access", "stream", "local"]),
        ("dataset_gb = 10\ncheckpoint_every_hours = 0", ["data.checkpoint_every_hours"]),
        ('dataset_gb = 10\nprovider = "awz"', ["data.provider", "did you mean", "aws"]),
        ('dataset_gb = 10\nprovider = "gcp"\nregion = "mars-1"', ["data.region", "us-central1"]),
        ('dataset_gb = "big"', ["data.dataset_gb"]),
    ],
)
def test_bad_data_input_is_one_line_naming_the_field(tmp_path, data: str, phrases: list[str]) -> None:
    path = tmp_path / "job.toml"
    path.write_text(JOB.format(data=data))
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2, result.output
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    for phrase in phrases:
        assert phrase in err, err


def test_assumption_overrides_of_the_host_guesses_are_bounded(tmp_path) -> None:
    path = tmp_path / "job.toml"
    path.write_text(JOB.format(data="dataset_gb = 10") + "[assumptions]\nsamples_per_s_per_vcpu_image = 0\n")
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    assert "assumptions.samples_per_s_per_vcpu_image" in result.stderr


@pytest.mark.parametrize(("field", "value"), [("ram_gib", -4), ("vcpus", 0), ("local_nvme_gb", -1)])
def test_bad_host_figures_of_a_box_name_the_field(tmp_path, field: str, value: float) -> None:
    path = tmp_path / "job.toml"
    path.write_text(
        JOB.format(data="dataset_gb = 10").replace("deadline_days = 5", "deadline_days = 5\ncloud = false")
        + f'[[hardware.owned]]\ngpu = "RTX4090"\nnum_boxes = 1\n{field} = {value}\n'
    )
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    # the file and the entry's path, as every job-file error names them
    assert f"job.toml: hardware.owned[0].{field}: {value} is not allowed" in result.stderr
