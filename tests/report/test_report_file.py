"""The report file itself: self-contained (nothing loaded from outside), at most 1.5 MB, the JSON it
was made from embedded, and well-formed enough for a parser."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest
from plotly.offline import get_plotlyjs_version

from optimizer.report.html.render import PLOTLY_BASIC_VERSION, plotly_js
from tests.report.report_support import Report

_OUTSIDE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
_URL_ATTRS = {"src", "href", "data", "poster", "action", "srcset", "xlink:href"}


class _Links(HTMLParser):
    """Every URL-bearing attribute, and the tags a page uses to pull in other files."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in _URL_ATTRS and value is not None:
                self.urls.append((tag, name, value))


@pytest.mark.parametrize("kind", ["plan", "rent-vs-buy", "batch", "serve"])
def test_report_loads_nothing_from_outside_itself(reports: dict[str, Report], kind: str) -> None:
    text = reports[kind].html.read_text(encoding="utf-8")
    links = _Links()
    links.feed(text)
    outside = [u for u in links.urls if _OUTSIDE.match(u[2])]
    assert outside == []
    assert [u for u in links.urls if u[1] == "src"] == []  # scripts and images are inline
    assert "link" not in links.tags and "iframe" not in links.tags
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", _styles(text))
    assert all(href.startswith("#") for tag, name, href in links.urls if tag == "a")


def _styles(text: str) -> str:
    return "".join(re.findall(r"<style[^>]*>(.*?)</style>", text, flags=re.S))


@pytest.mark.parametrize("kind", ["plan", "batch", "serve"])
def test_report_is_at_most_one_and_a_half_megabytes_and_embeds_its_json(
    reports: dict[str, Report], kind: str
) -> None:
    report = reports[kind]
    assert report.html.stat().st_size <= 1_500_000  # plotly.js basic (1.19 MB) + page and data
    text = report.html.read_text(encoding="utf-8")
    assert text.count("<script") == text.count("</script>")
    assert text.count("<script") >= 3  # plotly.js, the charts, the JSON
    blob = re.search(r'<script type="application/json" id="ccopt-result">(.*?)</script>', text, re.S)
    assert blob is not None
    embedded = json.loads(blob.group(1))
    assert embedded["result"]["status"] == report.result["status"]
    if kind == "batch":
        assert embedded["result"]["total_cost_usd"] == report.result["total_cost_usd"]
    else:
        assert embedded["result"]["plan"] == report.result["plan"]


def test_vendored_plotly_js_is_the_major_version_plotly_py_writes_for() -> None:
    assert plotly_js().lstrip().startswith("/**")
    assert f"plotly.js (basic - minified) v{PLOTLY_BASIC_VERSION}" in plotly_js()[:200]
    assert PLOTLY_BASIC_VERSION.split(".")[0] == get_plotlyjs_version().split(".")[0]
