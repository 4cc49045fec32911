"""`ccopt report JOB.toml|RESULT.json -o report.html`: one shareable, self-contained HTML page.

optimizer.api.report gathers the JSON results (the plan, compare, re-plans at other deadlines
or loads, latency estimates) and renders the page; the CLI checks the output path first and
writes the page atomically (optimizer.files: never over an input or a store; --force to
replace a file that is not an earlier ccopt output)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from optimizer import api
from optimizer.api import report as report_api
from optimizer.api.report import job_kind
from optimizer.cli.common import (
    DEFAULT_TIME_LIMIT_S,
    EXIT_INFEASIBLE,
    ForceOpt,
    OfflineOpt,
    OldTimeLimitOpt,
    PricesOpt,
    console,
    input_files,
    offline_choice,
    time_limit_option,
    time_limit_s,
    user_errors,
)
from optimizer.cli.progress import Progress

__all__ = ["register", "job_kind"]

Opt = typer.Option


def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="Job file (TOML: training, batch or serve) or a saved --json result", metavar="SOURCE"
        ),
    ],
    output: Annotated[
        Path | None,
        Opt(
            "-o",
            "--output",
            help="HTML file to write (default: SOURCE's file name with .html, in the current directory)",
        ),
    ] = None,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    time_limit: Annotated[
        float | None, time_limit_option(DEFAULT_TIME_LIMIT_S, "Solver time limit per solve")
    ] = None,
    old_time_limit: OldTimeLimitOpt = None,
    force: ForceOpt = False,
) -> None:
    """A shareable, self-contained HTML report of a plan, a batch or a serving job."""
    with user_errors():
        time_limit = time_limit_s(time_limit, old_time_limit)
        inputs = {**input_files(None, prices), "the file it reports (SOURCE)": source}
        out = api.output_file(
            output or Path(source.with_suffix(".html").name), "-o", force=force, inputs=inputs
        )
        made_by = f"ccopt report {source.name}" + (" --offline" if offline else "")
        with Progress("reading…") as progress:
            page = report_api.report_html(
                source,
                made_by=made_by,
                prices=prices,
                offline=offline_choice(offline),
                time_limit_s=time_limit,
                on_stage=progress.say,
            )
        written = out.write(page.html)
    console().print(f"report written to {out.path} ({written.stat().st_size / 1e6:.1f} MB)")
    if page.status == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
