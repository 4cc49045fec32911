"""The shareable HTML report of a plan, a batch or a serving job (`ccopt report`): built from
the JSON contract, charts by plotly with plotly.js inlined, laid out by a jinja2 template.

Import this package lazily: plotly and jinja2 are the optional 'report' extra."""

from __future__ import annotations

from optimizer.report.html.inputs import ReportInputs, detect_command, inputs_from_saved
from optimizer.report.html.render import build_page, render_html

__all__ = ["ReportInputs", "detect_command", "inputs_from_saved", "build_page", "render_html"]
