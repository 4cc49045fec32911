"""The report's sizing-run section (report/html/sizing_run.py): the headline plan's `sizing_run`
block shown with its own arithmetic, and on the page of `ccopt report`."""

from __future__ import annotations

import pytest

from optimizer import api
from optimizer.report.html.inputs import ReportInputs
from optimizer.report.html.sizing_run import sizing_run_section
from optimizer.report.html.train import train_page
from tests.report.report_support import EXAMPLES


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    """The headline plan, uncalibrated (a store of its own)."""
    tmp = tmp_path_factory.mktemp("sizing-run-report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CCOPT_CALIBRATION", str(tmp / "calibration.json"))
        mp.setenv("CCOPT_CACHE_DIR", str(tmp / "cache"))
        return api.plan(EXAMPLES / "llama7b_10days.toml", offline=True)


def _dollars(text: str) -> float:
    return float(text.lstrip("$").replace(",", ""))


def test_the_section_shows_the_block_and_its_arithmetic(result) -> None:
    s = result["sizing_run"]
    section = sizing_run_section(result)
    assert section is not None and section.section_id == "sizing-run"
    rows = {r[0]: r[1] for r in section.tables[0].rows}
    assert rows["steps"] == f"{s['warmup_steps']} + {s['measured_steps']}"
    assert s["instance"] in rows["run on"] and s["provider"] in rows["run on"]
    # the page's figures agree with each other as the block's do: expected = P × saving − cost
    # (P shown to a whole percent; the dollars to the dollar)
    p, saving, cost = float(rows["P(holds)"].rstrip("%")) / 100, _dollars(rows["saving"]), s["cost_usd"]
    assert rows["cost"] == f"${cost:,.2f}"
    assert _dollars(rows["expected saving"]) == pytest.approx(p * saving - cost, abs=0.005 * saving + 1)
    assert rows["holds if a step takes"] == f"≤ {s['threshold_multiplier']:.3f}× the prediction"


def test_no_block_no_section() -> None:
    assert sizing_run_section({"sizing_run": None}) is None


def test_the_plan_page_carries_it(result) -> None:
    page = train_page(ReportInputs(kind="train", result=result))
    ids = [sec.section_id for sec in page.sections]
    assert "sizing-run" in ids and ids.index("sizing-run") > ids.index("cost")
