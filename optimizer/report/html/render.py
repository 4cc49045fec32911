"""Render a report page to one self-contained HTML document (jinja2 template, plotly.js and
the styles inlined, the JSON results embedded; nothing is loaded from outside the file)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from optimizer import __version__
from optimizer.report.html.inputs import ReportInputs
from optimizer.report.html.ops import batch_page, serve_page
from optimizer.report.html.page import Page
from optimizer.report.html.train import train_page

__all__ = ["render_html", "build_page", "plotly_js", "PLOTLY_BASIC_VERSION"]

#: the vendored plotly.js bundle (vendor/README.md): scatter and bar traces only, 1.2 MB
#: instead of the 4.8 MB full bundle plotly.py ships
PLOTLY_BASIC_VERSION = "4.1.1"


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("optimizer.report.html", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@cache
def plotly_js() -> str:
    """The plotly.js inlined into every report (read once per process)."""
    return (resources.files("optimizer.report.html") / "vendor" / "plotly-basic.min.js").read_text(
        encoding="utf-8"
    )


def build_page(inputs: ReportInputs) -> Page:
    """The page model of a report (sections, tables, charts) from its JSON inputs."""
    if inputs.kind == "train":
        return train_page(inputs)
    if inputs.kind == "batch":
        return batch_page(inputs)
    return serve_page(inputs)


def _embedded_json(inputs: ReportInputs) -> Markup:
    """The results the page was made from, as a JSON script block: every '<', '>' and '&' is a
    JSON escape, so no name (a job called `<!--<script>`) can end or re-open the script element
    (HTML's script data states; the escapes are valid inside JSON strings, the only place they
    can occur)."""
    data: dict[str, Any] = {"kind": inputs.kind, "result": inputs.result}
    if inputs.compare is not None:
        data["compare"] = inputs.compare
    text = json.dumps(data, separators=(",", ":"), sort_keys=True)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)  # noqa: S704 - JSON without '<' cannot close or re-open the script


def render_html(inputs: ReportInputs, generated_at: datetime | None = None) -> str:
    """One self-contained HTML document for a report.

    Args:
        inputs: the JSON results of the report (see ReportInputs).
        generated_at: the time stamped in the footer (default: now, UTC).
    Returns:
        The HTML text (about 1.3 MB: plotly.js basic is inlined once for all charts).
    """
    page = build_page(inputs)
    stamp = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    template = _environment().get_template("report.html.j2")
    return template.render(
        page=page,
        plotly_js=Markup(plotly_js()),  # noqa: S704
        result_json=_embedded_json(inputs),
        generated_at=stamp,
        version=__version__,
    )
