"""The figures of a plan are worked out once by the solve layer and attached to it; the report
only rounds them. Checked by hand on a made-up plan, and on a real plan's whole JSON."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from optimizer import api
from optimizer.inputs.gpus import load_gpus
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.setup import Layout
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering
from optimizer.report.train import plan_dict, plan_json
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.plan_figures import with_figures

ROOT = Path(__file__).resolve().parents[2]
H100 = load_gpus()["H100-80GB"]


def _plan(usd_per_instance_hour: float, instances: int, hours: float, band: tuple[float, float]) -> Candidate:
    """A cloud plan of `instances` 8× H100 instances for `hours`, whose step (2 s) carries the
    P10-P90 `band` (as a per-sample profile's step does)."""
    off = Offering(
        key="k",
        kind="cloud",
        provider="p",
        instance="p8",
        region="r",
        pricing="on_demand",
        gpu=H100,
        gpus_per_instance=8,
        inter_node_gbps=400.0,
        usd_per_hour=usd_per_instance_hour,
    )
    step = StepTime(
        time_s=2.0,
        compute_s=2.0,
        communication_s=0.0,
        bubble_s=0.0,
        tokens_per_s=1.0,
        tokens_per_s_per_gpu=1.0,
        mfu=0.5,
        hfu=0.5,
        efficiency=0.5,
        calibrated=False,
        interval=band,
    )
    return Candidate(
        off,
        instances,
        Layout(dp=8 * instances),
        MemoryBreakdown(10, 10, 20, 5, 0, 1),
        step,
        steps=180_000,
        hours=hours,
        cost_usd=usd_per_instance_hour * instances * hours,
    )


def test_p90_and_p10_cost_days_and_step_by_hand() -> None:
    # 2 instances at $20/h for 100 h: $4,000. The P90 step is 1.25× the expected one, so the
    # job takes 125 h = 5.21 days and costs 2 × $20 × 125 h = $5,000; P10 (0.9×): 90 h, $3,600
    out = plan_dict(with_figures(_plan(20.0, 2, 100.0, (0.9, 1.25))))
    assert out["cost_usd"] == 4000.0
    assert out["cost_usd_p90"] == 5000.0
    assert out["cost_usd_p10"] == 3600.0
    assert out["days_p90"] == pytest.approx(125 / 24, abs=0.005)
    assert out["days_p10"] == pytest.approx(90 / 24, abs=0.005)
    assert out["step_time_s_p90"] == 2.5
    assert out["step_time_s_p10"] == 1.8
    # the cost lines: all of it is GPU time (no capital, no [data]); 16 GPUs × 100 h
    assert out["running_usd"] == 4000.0
    assert out["data_usd"] == 0.0
    assert out["gpu_hours"] == 1600.0
    # the card (80 GiB) minus what the device holds: 10 + 10 + 20 + 5 + 1 GiB = 46 GiB
    assert out["memory_headroom_gib"] == 34.0
    assert out["memory_headroom_fraction"] == pytest.approx(34 / 80, abs=1e-4)


def test_a_plan_without_figures_is_refused_by_the_report() -> None:
    with pytest.raises(ValueError, match="figures"):
        plan_dict(_plan(20.0, 2, 100.0, (0.9, 1.25)))


#: JSON field -> (PlanFigures attribute, digits the report rounds to)
ROUNDED = {
    "step_time_s_p10": ("step_time_s_p10", 3),
    "step_time_s_p90": ("step_time_s_p90", 3),
    "days": ("days", 2),
    "days_p10": ("days_p10", 2),
    "days_p90": ("days_p90", 2),
    "cost_usd_p10": ("cost_usd_p10", 2),
    "cost_usd_p90": ("cost_usd_p90", 2),
    "running_usd": ("running_usd", 2),
    "data_usd": ("data_usd", 2),
    "gpu_hours": ("gpu_hours", 2),
    "memory_headroom_gib": ("memory_headroom_gib", 2),
    "memory_headroom_fraction": ("memory_headroom_fraction", 4),
    "memory_headroom_required_gib": ("memory_headroom_required_gib", 2),
    "intra_node_bw_gb_s": ("intra_node_bw_gb_s", 2),
}


@pytest.mark.usefixtures("isolated")
def test_plan_json_shows_the_figures_solve_attached_rounded() -> None:
    result = api.plan_result(ROOT / "examples" / "llama7b_data_in_s3.toml", pareto=True, offline=True)
    out = plan_json(result)
    pairs = [(result.plan, out["plan"])]
    pairs += list(zip(result.alternatives, out["alternatives"], strict=True))
    pairs += list(zip(result.pareto, out["pareto"], strict=True))
    assert len(pairs) > 3
    for cand, shown in pairs:
        f = cand.figures
        assert f is not None
        for key, (attr, digits) in ROUNDED.items():
            assert shown[key] == round(getattr(f, attr), digits), key
        assert shown["intra_node_path"] == f.intra_node_path
        assert shown["warnings"] == list(f.warnings)
        assert shown["tokens"] == f.tokens
        assert f.data is not None and shown["data"]["storage_usd"] == round(f.data.storage_usd, 2)
    for alt, shown in zip(result.alternatives, out["alternatives"], strict=True):
        assert alt.figures is not None and alt.figures.extra_cost_usd is not None
        assert shown["extra_cost_usd"] == round(alt.figures.extra_cost_usd, 2)


def test_report_modules_import_neither_pricing_nor_inputs() -> None:
    """What the import-linter contract "report formats only" enforces, read off the source."""
    found = []
    for path in sorted((ROOT / "optimizer" / "report").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            found += [
                f"{path.relative_to(ROOT)}: {n}"
                for n in names
                if n.startswith(("optimizer.pricing", "optimizer.inputs"))
            ]
    assert not found, found


@pytest.mark.usefixtures("isolated")
def test_batch_json_shows_the_figures_of_each_scheduled_plan() -> None:
    result = api.batch(ROOT / "examples" / "batch_12_finetunes.toml", offline=True)
    jobs = {j["name"]: j for j in api.batch_json(result)["jobs"]}
    scheduled = [s for s in result.jobs if s.row is not None]
    assert scheduled and set(result.figures) == {s.name for s in scheduled}
    for s in scheduled:
        f, shown = result.figures[s.name], jobs[s.name]
        for key, (attr, digits) in ROUNDED.items():
            assert shown[key] == round(getattr(f, attr), digits), (s.name, key)
        # the rows stay the job's own candidates (validate_batch checks them by identity)
        assert any(s.row.candidate is c for c in s.job.spec.candidates)
