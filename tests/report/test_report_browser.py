"""Reports opened in a real headless Chromium with the network cut off: no console errors,
no request leaves the file, every chart drawn with data, the headline numbers are the JSON's."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from optimizer.api import report as report_api
from tests.report.report_support import Report, open_offline

KINDS = ("plan", "rent-vs-buy", "batch", "serve")


def _open(browser: Any, report: Report) -> tuple[Any, Any, list[str], list[str]]:
    """(context, page, console errors, outside requests attempted) with the report loaded."""
    context, page, errors, outside = open_offline(browser, report.html)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
    return context, page, errors, outside


@pytest.fixture(scope="module")
def opened(browser: Any, reports: dict[str, Report]) -> Any:
    pages = {kind: _open(browser, reports[kind]) for kind in KINDS}
    yield pages
    for context, *_ in pages.values():
        context.close()


@pytest.mark.parametrize("kind", KINDS)
def test_page_loads_offline_without_errors(opened: Any, kind: str, tmp_path: Any) -> None:
    _, page, errors, outside = opened[kind]
    assert errors == []
    assert outside == [], f"the report tried to load {outside}"
    shot = tmp_path / f"{kind}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


_TRACES = """id => {
  const div = document.getElementById(id);
  if (!div || !div.data) return null;
  const points = div.data.map(t => (t.x || t.y || []).filter(v => v !== null).length);
  const drawn = div.querySelectorAll('.main-svg .trace').length;
  return {traces: div.data.length, points: points.reduce((a, b) => a + b, 0), drawn: drawn,
          width: div.getBoundingClientRect().width, height: div.getBoundingClientRect().height};
}"""


@pytest.mark.parametrize("kind", KINDS)
def test_every_chart_is_drawn_with_data(opened: Any, reports: dict[str, Report], kind: str) -> None:
    _, page, _, _ = opened[kind]
    shown = page.eval_on_selector_all("figure.chart", "els => els.map(e => e.dataset.chart)")
    assert set(reports[kind].charts) <= set(shown)
    for chart_id in shown:
        stats = page.evaluate(_TRACES, chart_id)
        assert stats is not None, f"{chart_id}: no plotly chart"
        assert stats["traces"] > 0 and stats["points"] > 0, (chart_id, stats)
        assert stats["drawn"] > 0, f"{chart_id}: nothing drawn in its svg"
        assert stats["width"] > 300 and stats["height"] > 150, (chart_id, stats)


def _field(result: dict[str, Any], dotted: str) -> Any:
    value: Any = result
    for key in dotted.split("."):
        value = value[key]
    return value


def _number(text: str) -> tuple[float, float]:
    """A displayed number and half its last shown digit (what rounding may have moved)."""
    digits = re.sub(r"[$,\s]", "", text)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), 0.5 * 10**-decimals


@pytest.mark.parametrize("kind", KINDS)
def test_headline_numbers_are_the_json_result(opened: Any, reports: dict[str, Report], kind: str) -> None:
    _, page, _, _ = opened[kind]
    result = reports[kind].result
    if kind == "batch":
        result = {**result, "jobs.scheduled": sum(j["status"] == "scheduled" for j in result["jobs"])}
    fields = page.eval_on_selector_all(
        "#headline [data-field]", "els => els.map(e => [e.dataset.field, e.dataset.value, e.textContent])"
    )
    assert len(fields) >= 2
    for field, value, text in fields:
        expected = result[field] if field in result else _field(result, field)
        if isinstance(expected, str):
            assert value == expected == text
            continue
        assert float(value) == pytest.approx(expected, rel=1e-12), field
        shown, half_digit = _number(text)
        assert abs(shown - expected) <= half_digit + 1e-9 * abs(expected), (field, text, expected)


def test_plan_page_shows_the_chosen_plan_and_the_catalog_date(
    opened: Any, reports: dict[str, Report]
) -> None:
    _, page, _, _ = opened["plan"]
    plan = reports["plan"].result["plan"]
    body = page.inner_text("body")
    assert plan["instance"] in page.inner_text("#headline")
    assert reports["plan"].result["catalog"]["as_of"] in body
    assert f"{plan['memory_gib']['total']:.2f}" in page.inner_text("#memory")
    pareto_names = page.evaluate("() => document.getElementById('chart-pareto').data.map(t => t.name)")
    assert "chosen plan" in pareto_names


def test_print_layout_hides_navigation(opened: Any) -> None:
    _, page, _, _ = opened["plan"]
    page.emulate_media(media="print")
    try:
        assert page.eval_on_selector("nav", "e => getComputedStyle(e).display") == "none"
    finally:
        page.emulate_media(media="screen")


@pytest.mark.parametrize("name", ["x<!--<script>", "a</script><b>bold</b>", "q&amp;<!-- -->"])
def test_embedded_json_survives_any_job_name(
    browser: Any, reports: dict[str, Report], tmp_path: Any, name: str
) -> None:
    """A job named `<!--<script>` must not swallow the rest of the page into the JSON block
    (HTML's double-escaped script state): Chromium parses the block back to the same name and
    the page's footer still stands after it."""
    saved = dict(reports["plan"].result, job=dict(reports["plan"].result["job"], name=name))
    source = tmp_path / "named.json"
    source.write_text(json.dumps(saved), encoding="utf-8")
    html = tmp_path / "named.html"
    html.write_text(report_api.report_html(source, made_by="test").html, encoding="utf-8")
    page = browser.new_page()
    page.goto(html.as_uri(), wait_until="load")
    parsed = page.evaluate("() => JSON.parse(document.getElementById('ccopt-result').textContent)")
    assert parsed["result"]["job"]["name"] == name
    assert page.locator("footer").count() == 1
    page.close()
