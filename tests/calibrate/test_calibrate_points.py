"""`ccopt calibrate` with several runs (issue 27 items 1, 2, 4): two runs of one GPU × precision
× stack fit the size dependence too, the output says what a run changes, `--list` / `--remove`
manage the store, and a run wildly outside the model's band is refused with the reason."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.model.calibrated import PowerCurve
from optimizer.model.setup import PerfAssumptions

pytestmark = pytest.mark.usefixtures("isolated")
runner = CliRunner()

KEY = ("H100-80GB", "bf16", "generic")
#: a small and a large layout, and a third run of the same GPU × precision × stack
SMALL = {"model": "llama-3-8b", "num_gpus": 8, "micro_batch": 1, "seq_len": 1024, "zero_stage": 3}
LARGE = {"model": "llama-2-70b", "num_gpus": 32, "tp": 8, "micro_batch": 4, "seq_len": 4096, "zero_stage": 1}
THIRD = {"model": "llama-2-13b", "num_gpus": 16, "tp": 2, "micro_batch": 2, "seq_len": 4096, "zero_stage": 1}
#: a large layout on one node (size factor ~0.93): the only kind that can imply > 90% of the peak
BIG = {"model": "llama-2-70b", "num_gpus": 8, "tp": 8, "micro_batch": 8, "seq_len": 4096, "zero_stage": 1}
#: the "true" GPU of these tests: achieved efficiency = 0.5 × size factor^1.8 (steeper than the
#: model's own size curve, b = 1, and lower)
TRUTH = PerfAssumptions(calibrated_curves={KEY: PowerCurve(level=0.5, size_exponent=1.8)})


def _flags(run: dict) -> list[str]:
    out = ["-g", "h100"]
    for key, value in run.items():
        out += [{"model": "-m"}.get(key, "--" + key.replace("_", "-")), str(value)]
    return out


def _estimate(run: dict, assumptions: PerfAssumptions | None = None) -> dict:
    return api.estimate(
        run["model"], "h100", assumptions=assumptions, **{k: v for k, v in run.items() if k != "model"}
    )


def _calibrate(run: dict, step_s: float, *extra: str) -> dict:
    result = runner.invoke(app, ["calibrate", *_flags(run), "--step-time-s", repr(step_s), "--json", *extra])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _step(run: dict, assumptions: PerfAssumptions | None = None) -> float:
    return _estimate(run, assumptions)["step"]["time_s"]


def _step_at(run: dict, achieved: float) -> float:
    """The step the model gives `run` when its GEMMs reach `achieved` of the dense peak
    (an explicit base efficiency = achieved / the layout's size factor)."""
    default = _estimate(run)
    size = default["effective_efficiency"] / default["base_efficiency"]
    return _step(run, PerfAssumptions(efficiency=achieved / size))


def test_two_runs_fit_the_size_curve_and_both_are_reproduced_within_1pct() -> None:
    truth = {name: _step(run, TRUTH) for name, run in (("small", SMALL), ("large", LARGE), ("third", THIRD))}
    default_third = _step(THIRD)
    one = _calibrate(SMALL, truth["small"])
    assert one["fit"]["runs"] == 1 and one["fit"]["size_exponent"] == 1.0
    one_point_third = _step(THIRD)
    two = _calibrate(LARGE, truth["large"])
    assert two["fit"]["runs"] == 2
    # the known curve comes back (log-space least squares through two runs is exact)
    # the size dependence moves from the model's own (exponent 1) toward the truth's 1.8, shrunk
    # by the slope's prior (optimizer.model.calibrated: kriging, not an unconstrained line)
    assert 1.0 < two["fit"]["size_exponent"] < 1.8 and two["fit"]["transfer"] > one["fit"]["transfer"]
    # both runs reproduced within 1% by estimate, and by calibrate's own table
    for run, name in ((SMALL, "small"), (LARGE, "large")):
        assert _step(run) == pytest.approx(truth[name], rel=0.01)
    assert [abs(r["error_pct"]) < 1.0 for r in two["runs"]] == [True, True]
    # a third run of the same GPU × precision × stack: better than with one run (and than the default)
    err = {k: abs(v / truth["third"] - 1) for k, v in (("two", _step(THIRD)), ("one", one_point_third))}
    assert err["two"] < 0.01 < err["one"] < abs(default_third / truth["third"] - 1)


def test_the_output_says_what_moved_and_which_predictions_it_affects() -> None:
    before = _estimate(SMALL)["effective_efficiency"]
    step = _step(SMALL) * 1.25  # measured 25% slower than predicted
    result = runner.invoke(app, ["calibrate", *_flags(SMALL), "--step-time-s", repr(step)])
    assert result.exit_code == 0, result.stderr
    after = _estimate(SMALL)
    assert after["calibrated"] is True and after["step"]["time_s"] == pytest.approx(step, rel=1e-3)
    text = " ".join(result.stdout.split())
    moved = f"efficiency {before:.3f} -> {after['effective_efficiency']:.3f}"
    pct = (after["effective_efficiency"] / before - 1) * 100
    assert pct < -15  # 25% slower: at least the compute part's efficiency fell
    assert f"H100-80GB bf16 generic: {moved} ({pct:+.0f}%)" in text
    assert "affects training estimates and plans on H100-80GB in bf16 with stack generic" in text
    # outside the scope: another stack, another precision keep the model's default
    other_stack = api.estimate(
        "llama-3-8b", "h100", num_gpus=8, micro_batch=1, seq_len=1024, stack="megatron-core"
    )
    fp8 = _estimate({**SMALL, "precision": "fp8"})
    assert other_stack["calibrated"] is False and fp8["calibrated"] is False


def test_list_and_remove_manage_the_store(isolated_store) -> None:
    _calibrate(SMALL, _step(SMALL) * 1.1)
    _calibrate(LARGE, _step(LARGE) * 1.1)
    rows = json.loads(runner.invoke(app, ["calibrate", "--list", "--json"]).stdout)
    schema = json.loads(runner.invoke(app, ["schema", "calibrate-list"]).stdout)
    jsonschema.validate(rows, schema, cls=jsonschema.Draft202012Validator)
    assert [(r["model"], r["gpu"], r["precision"], r["stack"]) for r in rows] == [
        ("llama-3-8b", *KEY),
        ("llama-2-70b", *KEY),
    ]
    assert rows[1]["layout"] == "32 GPUs dp4 tp8 pp1 z1 mb4 ga1 seq 4096"
    assert all(r["file"] == str(isolated_store) and r["when"].endswith("Z") for r in rows)
    table = runner.invoke(app, ["calibrate", "--list"])
    assert table.exit_code == 0 and rows[0]["id"] in table.stdout and "llama-2-70b" in table.stdout
    gone = runner.invoke(app, ["calibrate", "--remove", rows[0]["id"], "--json"])
    assert [r["id"] for r in json.loads(gone.stdout)] == [rows[0]["id"]]
    assert [r["id"] for r in api.calibration_list()] == [rows[1]["id"]]
    # the remaining run alone: its curve is one run's again (exact for it)
    assert _step(LARGE) == pytest.approx(rows[1]["measured_step_s"], rel=1e-3)
    runner.invoke(app, ["calibrate", "--remove", "h100-80gb:bf16"])
    assert api.calibration_list() == [] and _estimate(LARGE)["calibrated"] is False
    missing = runner.invoke(app, ["calibrate", "--remove", "A100-80GB"])
    assert missing.exit_code == 2 and "names no stored run" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    empty = runner.invoke(app, ["calibrate", "--list"])
    assert empty.exit_code == 0 and "no stored runs" in empty.stdout


def test_list_shows_and_remove_drops_an_old_entry(isolated_store) -> None:
    isolated_store.write_text(json.dumps({"entries": {"A100-80GB/bf16": {"efficiency": 0.4}}}))
    (row,) = api.calibration_list()
    assert (row["id"], row["stack"], row["size_factor"], row["when"]) == ("A100-80GB/bf16", "any", None, None)
    runner.invoke(app, ["calibrate", "--remove", "A100-80GB/bf16"])
    assert json.loads(isolated_store.read_text())["entries"] == {}


def test_a_second_run_of_the_same_request_replaces_the_first() -> None:
    first = _calibrate(SMALL, _step(SMALL) * 1.1)
    second = _calibrate(SMALL, _step(SMALL) * 1.2 / 1.1 * 1.0)
    assert second["replaced"] == [first["id"]] and second["fit"]["runs"] == 1
    assert [r["id"] for r in api.calibration_list()] == [second["id"]]


def test_list_and_remove_take_no_run_options() -> None:
    result = runner.invoke(app, ["calibrate", "--list", "-m", "llama-3-8b"])
    assert result.exit_code == 2 and "--list: takes no run options" in result.stderr


@pytest.mark.parametrize(
    ("run", "extra", "factor", "phrase"),
    [
        (SMALL, [], 1 / 10, "10× faster than predicted"),  # the example: 10× the speed
        (SMALL, [], 25.0, "25× slower than predicted"),
        (BIG, [], None, "implies 92% of the GPU's dense peak; allowed: at most 90%"),
        (SMALL, ["--peak-memory-gib", "5000"], 1.0, "5000 GiB per GPU is more than a H100-80GB has (80 GiB)"),
    ],
    ids=["10x-faster", "25x-slower", "above-the-ceiling", "5000-gib"],
)
def test_a_run_wildly_outside_the_model_is_refused_with_the_reason(
    isolated_store, run, extra, factor, phrase
) -> None:
    measured = _step(run) * factor if factor is not None else _step_at(run, 0.92)
    result = runner.invoke(app, ["calibrate", *_flags(run), "--step-time-s", repr(measured), *extra])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert phrase in line and "refused" in line, line
    assert not isolated_store.exists()  # nothing stored


def test_force_stores_an_implausible_run_but_never_an_impossible_one(isolated_store) -> None:
    out = _calibrate(BIG, _step_at(BIG, 0.915), "--force")  # above the 90% ceiling
    assert out["efficiency_after"] == pytest.approx(0.915, rel=1e-3)
    other = {**THIRD, "stack": "megatron-core"}  # its own curve (one run: exact for it)
    slow = _calibrate(other, _step(other) * 25, "--force")
    # exact up to the run-to-run noise ν² of the rule: ν²/(τ²+σ²+ν²) × |log 25| ≈ 0.1%
    assert math.isclose(slow["calibrated_prediction_step_s"], slow["measured_step_s"], rel_tol=2e-3)
    beyond = runner.invoke(
        app, ["calibrate", *_flags(LARGE), "--step-time-s", repr(_step(LARGE) / 10), "--force"]
    )
    assert beyond.exit_code == 2 and "faster than the model allows even at 100%" in beyond.stderr
    memory = runner.invoke(
        app,
        [
            "calibrate",
            *_flags(LARGE),
            "--step-time-s",
            repr(_step(LARGE)),
            "--peak-memory-gib",
            "5000",
            "--force",
        ],
    )
    assert memory.exit_code == 2 and "more than a H100-80GB has" in memory.stderr
    assert len(api.calibration_list()) == 2


@pytest.fixture
def isolated_store(isolated, tmp_path):
    """The store file of the `isolated` user (CCOPT_CALIBRATION)."""
    return tmp_path / "calibration.json"


@pytest.mark.parametrize(
    ("extra", "phrase"),
    [
        # ResNet-50 trains at ~12 GFLOPs a sample (3 × 4.1 forward): 1e9 samples/s would need
        # 1.2e19 FLOP/s, ~12,000× an H100's dense bf16 peak
        (["--samples-per-s", "1e9"], "× faster than predicted"),
        (
            ["--samples-per-s", "1000", "--peak-memory-gib", "5000"],
            "5000 GiB per GPU is more than a H100-80GB",
        ),
    ],
    ids=["1e9-samples-per-s", "5000-gib"],
)
def test_a_per_sample_run_wildly_outside_the_model_is_refused(isolated_store, extra, phrase) -> None:
    args = ["calibrate", "-m", "resnet50", "-g", "h100", "--micro-batch", "256", *extra]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert phrase in line and "refused" in line, line
    assert not isolated_store.exists()


def test_a_stored_run_moves_plans_of_its_stack_only() -> None:
    def plan(stack: str) -> dict:
        workload = {"kind": "pretrain", "tokens": 2e9, "seq_len": 1024, "global_batch": 64, "stack": stack}
        job = {
            "name": "scope",
            "model": {"preset": "llama-3-8b"},
            "workload": workload,
            "constraints": {"deadline_days": 30, "gpu_types": ["H100-80GB"]},
        }
        return api.plan(job)["plan"]

    before = {stack: plan(stack) for stack in ("generic", "megatron-core")}
    _calibrate(SMALL, _step(SMALL) * 1.5)  # stack generic, 50% slower than predicted
    after = {stack: plan(stack) for stack in ("generic", "megatron-core")}
    assert before["generic"]["calibrated"] is False and after["generic"]["calibrated"] is True
    assert after["generic"]["step_time_s"] > before["generic"]["step_time_s"] * 1.2
    assert after["megatron-core"] == before["megatron-core"]  # another stack: untouched
