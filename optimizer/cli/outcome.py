"""What the solving commands (plan, batch, serve) do once they have an
answer: the --export files, else --json or the rendering, the --plot line, exit 1 when the answer
is infeasible; and the plan line and price legend their tables share."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from optimizer.cli.common import EXIT_INFEASIBLE, console, price_legend, price_mark, print_json
from optimizer.cli.export_opts import exported
from optimizer.cli.plot import check_plot_path
from optimizer.files import OutputFile

__all__ = ["ExportRequest", "PlotNote", "plot_file", "finish", "offering_words", "print_price_legend"]


@dataclass(frozen=True)
class ExportRequest:
    """--export FORMAT and -o/--output-dir as given, with what the files may not replace."""

    fmt: str | None
    out_dir: Path | None
    force: bool = False
    inputs: Mapping[str, Path | None] = field(default_factory=dict)
    train_script: str | None = None  # --train-script: the user's script the launch files run


@dataclass(frozen=True)
class PlotNote:
    """--plot as given and whether a plot was written, with the words that say so."""

    path: Path | None
    written: bool
    shown_as: str  # "schedule plot": what the line after the rendering calls it
    nothing: str  # "no schedule to plot": why none was written


def plot_file(plot: Path | None, *, force: bool, inputs: Mapping[str, Path | None]) -> OutputFile | None:
    """Where --plot goes, checked before any solving (None: no --plot).

    Raises:
        ConfigError: the path is unusable or would replace a file it may not.
    """
    return None if plot is None else check_plot_path(plot, force=force, inputs=inputs)


def finish(
    data: dict[str, Any],
    json_out: bool,
    render: Callable[[dict[str, Any]], None],
    export: ExportRequest,
    plot: PlotNote | None = None,
) -> None:
    """The exported files (and nothing else), or --json / the rendering with the plot's line;
    a plot asked for but not written is said on stderr; an infeasible answer exits 1."""
    if exported(
        data,
        export.fmt,
        export.out_dir,
        force=export.force,
        inputs=dict(export.inputs),
        train_script=export.train_script,
    ):
        return
    if json_out:
        print_json(data)
    else:
        render(data)
        if plot is not None and plot.written:
            console().print(f"{plot.shown_as} written to {plot.path}")
    if plot is not None and plot.path is not None and not plot.written:
        sys.stderr.write(f"no plot written to {plot.path}: {data['status']}, {plot.nothing}\n")
    if data.get("status") == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)


def offering_words(line: dict[str, Any]) -> str:
    """A plan line's offering in a table cell: '4× p5.48xlarge (aws, spot†)'."""
    return (
        f"{line['instances']}× {line['instance']} ({line['provider']}, {line['pricing']}{price_mark(line)})"
    )


def print_price_legend(c: Any, lines: list[dict[str, Any]]) -> None:
    """The legend of the price marks under a table of plan lines, when it shows any."""
    legend = price_legend(lines)
    if legend:
        c.print(f"  {legend}")
