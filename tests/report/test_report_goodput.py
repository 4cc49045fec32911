"""The report's whole-run section (report/html/goodput.py): its parts add up to the plan's
hours, and the chart has one segment per part."""

from __future__ import annotations

import pytest

from optimizer import api
from optimizer.report.html.goodput import GOODPUT_PARTS, goodput_figure, goodput_section
from tests.report.report_support import EXAMPLES


def test_the_parts_add_up_to_the_plans_hours() -> None:
    p = api.plan(EXAMPLES / "llama7b_10days.toml", offline=True)["plan"]
    section = goodput_section(p)
    assert section is not None and section.charts[0].chart_id == "chart-goodput"
    table = section.tables[0]
    parts = [float(v.replace(",", "")) for _, v in table.rows[:-1]]
    assert len(parts) == len(GOODPUT_PARTS) == 6
    # the plan's hours are the whole run: the six parts sum to them (2-decimal rounding each)
    assert sum(parts) == pytest.approx(p["hours"], abs=0.05)
    assert float(table.rows[-1][1].replace(",", "")) == pytest.approx(p["hours"], abs=0.05)
    assert len(goodput_figure(p["goodput"]).data) == 6


def test_no_block_no_section() -> None:
    assert goodput_section({"goodput": None}) is None
