"""What the report tests share: the repository's examples and one made report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True)
class Report:
    kind: str
    html: Path
    result: dict[str, Any]  # the JSON contract, computed apart from the report
    charts: tuple[str, ...]


def open_offline(browser: Any, html: Path) -> tuple[Any, Any, list[str], list[str]]:
    """(context, page, console errors, outside requests attempted): `html` loaded in a new
    1280×900 context whose every request other than file:// is recorded and aborted."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(html.as_uri(), wait_until="load")
    return context, page, errors, outside
