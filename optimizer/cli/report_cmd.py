"""`ccopt report JOB.toml|RESULT.json -o report.html`: one shareable, self-contained HTML page.

optimizer.api.report gathers the JSON results (the plan, compare, re-plans at other deadlines
or loads, latency estimates) and renders the page; the CLI checks the output path first and
writes the page atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from optimizer.api import report as report_api
from optimizer.api.report import job_kind
from optimizer.cli.common import (
    DEFAULT_TIME_LIMIT_S,
    EXIT_INFEASIBLE,
    OfflineOpt,
    OldTimeLimitOpt,
    PricesOpt,
    console,
    time_limit_help,
    time_limit_s,
    user_errors,
)
from optimizer.cli.progress import Progress
from optimizer.errors import ConfigError, OptimizerError

__all__ = ["register", "job_kind", "check_output_path", "write_atomically"]

Opt = typer.Option


def check_output_path(path: Path) -> Path:
    """The report's path, checked before any solving.

    Raises:
        ConfigError: a directory, a missing or unwritable directory, or an unwritable file.
    """
    if path.is_dir():
        raise ConfigError(f"-o {path}: is a directory; give a file name such as {path / 'report.html'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"-o {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"-o {path}: directory {parent} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"-o {path}: file is not writable")
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


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
        float | None,
        Opt(
            "--time-limit-s",
            help=time_limit_help(DEFAULT_TIME_LIMIT_S, "Solver time limit per solve"),
            show_default=False,
        ),
    ] = None,
    old_time_limit: OldTimeLimitOpt = None,
) -> None:
    """A shareable, self-contained HTML report of a plan, a batch or a serving job."""
    with user_errors():
        time_limit = time_limit_s(time_limit, old_time_limit)
        out = check_output_path(output or Path(source.with_suffix(".html").name))
        made_by = f"ccopt report {source.name}" + (" --offline" if offline else "")
        with Progress("reading…") as progress:
            page = report_api.report_html(
                source,
                made_by=made_by,
                prices=prices,
                offline=True if offline else None,
                time_limit_s=time_limit,
                on_stage=progress.say,
            )
        try:
            write_atomically(out, page.html)
        except OSError as exc:
            raise OptimizerError(f"-o {out}: cannot write: {exc.strerror}") from None
    console().print(f"report written to {out} ({out.stat().st_size / 1e6:.1f} MB)")
    if page.status == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
