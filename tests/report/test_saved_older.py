"""A result saved by an older ccopt (before the report stopped doing arithmetic) lacks the
figures solve attaches now: its page still renders, showing "—" where a figure is missing
rather than working it out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from optimizer import api
from optimizer.report import html
from optimizer.report.html.page import num

ROOT = Path(__file__).resolve().parents[2]
#: the fields added when the figures moved to the solve layer
ADDED = {
    "days_p10",
    "cost_usd_p10",
    "running_usd",
    "gpu_hours",
    "memory_headroom_fraction",
    "storage_usd",
    "jobs_per_month",
    "memory_device_gib_p10",
    "memory_device_gib_p90",
}


def _older(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _older(v) for k, v in x.items() if k not in ADDED}
    if isinstance(x, list):
        return [_older(v) for v in x]
    return x


@pytest.mark.usefixtures("isolated")
def test_a_plan_saved_without_the_new_figures_still_renders() -> None:
    saved = _older(api.plan(ROOT / "examples" / "llama7b_data_in_s3.toml", pareto=True, offline=True))
    page = html.render_html(html.inputs_from_saved(saved, made_by="test"))
    assert "Cost breakdown" in page
    assert "— GPU-hours" in page  # gpu_hours missing: not recomputed from gpus × hours


@pytest.mark.usefixtures("isolated")
def test_the_memory_band_row_shows_the_saved_figures_and_is_absent_without_them() -> None:
    saved = api.plan(ROOT / "examples" / "llama7b_data_in_s3.toml", offline=True)
    plan = saved["plan"]
    page = html.render_html(html.inputs_from_saved(saved, made_by="test"))
    low, high = plan["memory_device_gib_p10"], plan["memory_device_gib_p90"]
    assert f'<tr><td>device, P10–P90</td><td class="r">{num(low)}–{num(high)}</td></tr>' in page
    older = html.render_html(html.inputs_from_saved(_older(saved), made_by="test"))
    assert "device, P10–P90" not in older
