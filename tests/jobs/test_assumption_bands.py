"""`[assumptions] profile_band_*`: the (P10, P90) band of a per-sample model is a two-number
list [low, high] with low ≤ 1 ≤ high, end to end through `ccopt plan` (it used to be read as
one number and crash later with exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resnet50_imagenet_3days.toml"
BANDS = (
    "profile_band_same_gpu",
    "profile_band_same_generation",
    "profile_band_cross_generation",
    "profile_band_unmeasured",
)


pytestmark = pytest.mark.usefixtures("isolated")


def _plan(tmp_path: Path, assumptions: str) -> tuple[int, str, str]:
    path = tmp_path / "job.toml"
    path.write_text(EXAMPLE.read_text() + "\n[assumptions]\n" + assumptions)
    result = runner.invoke(app, ["plan", str(path), "--json"])
    return result.exit_code, result.stdout, result.stderr


def test_a_band_override_sets_p10_and_p90_of_every_plan(tmp_path) -> None:
    # the same band for every case, so whichever GPU a plan uses its step time spans
    # [0.5 ×, 2 ×] the predicted one (JSON rounds step times to 1 ms)
    code, out, err = _plan(tmp_path, "".join(f"{b} = [0.5, 2]\n" for b in BANDS))
    assert code == 0, err
    doc = json.loads(out)
    plans = [doc["plan"], *doc["alternatives"]]
    assert len(plans) >= 2
    for p in plans:
        assert p["step_time_s_p10"] == pytest.approx(0.5 * p["step_time_s"], abs=1.5e-3)
        assert p["step_time_s_p90"] == pytest.approx(2.0 * p["step_time_s"], abs=2.5e-3)
    # the default bands are narrower than [0.5, 2] on every GPU (at most [0.6, 1.7] measured)
    code, out, _ = _plan(tmp_path, "")
    assert code == 0
    default = json.loads(out)["plan"]
    assert default["step_time_s_p90"] < 1.75 * default["step_time_s"]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0.9", "0.9"),
        ("[1.2, 2.0]", "[1.2, 2]"),
        ("[0.5, 0.9]", "[0.5, 0.9]"),
        ("[0.5]", "[0.5]"),
        ("[0, 2]", "[0, 2]"),
        ('["a", 2]', "['a', 2]"),
        ("[0.5, 1, 2]", "[0.5, 1, 2]"),
    ],
)
def test_a_bad_band_is_a_one_line_error(tmp_path, value: str, shown: str) -> None:
    code, _out, err = _plan(tmp_path, f"profile_band_same_gpu = {value}\n")
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: {tmp_path / 'job.toml'}: assumptions.profile_band_same_gpu: {shown} is not "
        "allowed; allowed: two numbers [low, high] with 0 < low ≤ 1 ≤ high ≤ 100"
    ]
