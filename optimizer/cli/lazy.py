"""Subcommands loaded on demand: `ccopt --version` and `ccopt --help` import no command module
(and so no pandas, OR-Tools or plotly); `ccopt plan` imports the plan command's stack only.

Each command module keeps its own `register(app)`; this table names the module and the one-line
help `ccopt --help` lists (tests/cli/test_lazy_cli.py checks it against the loaded command).
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, cast

import typer
from typer.core import TyperCommand, TyperGroup

from optimizer import startup

#: a command as typer builds it (the click classes it builds on are typer's own business)
Command: TypeAlias = TyperCommand | TyperGroup

__all__ = ["LAZY_COMMANDS", "LazyCommand", "LazyGroup", "load_command"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a subcommand lives and the help line `ccopt --help` shows for it."""

    module: str  # the optimizer.cli module whose register(app) adds the command
    help: str  # the first line of the command's help (its docstring's first paragraph)
    runs_on: tuple[str, ...] = ()  # optimizer.api names (or modules) the command runs on
    sub_app: str | None = None  # a typer sub-app attribute (`prices`), instead of register()


#: every subcommand, in the order `ccopt --help` lists them
LAZY_COMMANDS: dict[str, LazyCommand] = {
    "models": LazyCommand(
        "optimizer.cli.info_cmd",
        "Preset model shapes with their parameter counts.",
        runs_on=("gpu_rows",),
    ),
    "gpus": LazyCommand(
        "optimizer.cli.info_cmd",
        "The GPU catalog: memory, bandwidth, dense TFLOPS, links.",
        runs_on=("gpu_rows",),
    ),
    "stacks": LazyCommand(
        "optimizer.cli.info_cmd",
        "Software-stack profiles (`--stack`, `stack = ...`): what each stack overlaps, shards and "
        "reserves, every value with its source or marked a guess.",
        runs_on=("gpu_rows",),
    ),
    "estimate": LazyCommand(
        "optimizer.cli.estimate_cmd",
        "Memory per GPU and step time (or serving speed) of one fixed configuration.",
        runs_on=("estimate_request",),
    ),
    "calibrate": LazyCommand(
        "optimizer.cli.calibrate_cmd",
        "Fit the compute efficiency of a GPU type to one measured run and store it for later "
        "estimates and plans (file: $CCOPT_CALIBRATION or ~/.config/ccopt/calibration.json).",
        runs_on=("calibrate_run",),
    ),
    "plan": LazyCommand(
        "optimizer.cli.plan_cmd",
        "The cheapest cluster that finishes JOB by its deadline (and within budget).",
        runs_on=("plan",),
    ),
    "compare": LazyCommand(
        "optimizer.cli.plan_cmd",
        "Best plan per GPU type and per provider; cloud vs owned/bought with the break-even.",
        runs_on=("plan",),
    ),
    "batch": LazyCommand(
        "optimizer.cli.batch_cmd",
        "The cheapest plan that runs every job of JOBS on time, on shared capacity.",
        runs_on=("batch",),
    ),
    "serve": LazyCommand(
        "optimizer.cli.serve_cmd",
        "The cheapest replica mix that serves JOB's load within its latency targets.",
        runs_on=("serve",),
    ),
    "serve-compare": LazyCommand(
        "optimizer.cli.serve_cmd",
        "Best serving deployment per GPU type (and the best mix over all types).",
        runs_on=("serve",),
    ),
    "rl": LazyCommand(
        "optimizer.cli.rl_cmd",
        "The cheapest GPU pools (colocated, or generation beside training) that finish JOB's RL "
        "post-training (dpo, grpo, ppo) by its deadline.",
        runs_on=("rl",),
    ),
    "schema": LazyCommand(
        "optimizer.cli.schema_cmd",
        "JSON Schema of a command's --json output or of a job file.",
        runs_on=("schema_of",),
    ),
    "report": LazyCommand(
        "optimizer.cli.report_cmd",
        "A shareable, self-contained HTML report of a plan, a batch or a serving job.",
        runs_on=("report",),
    ),
    "sizing": LazyCommand(
        "optimizer.cli.sizing_cmd",
        "Which GPU types still contend (their plans' cost bands overlap), the short on-demand run "
        "that measures each (steps, minutes, offering, cost) and the `ccopt calibrate` line to feed "
        "the reading back, after which the plan's band narrows.",
        runs_on=("plan",),
    ),
    "replan": LazyCommand(
        "optimizer.cli.replan_cmd",
        "Plan the rest of a job under way from its [progress] (tokens done, hours elapsed, spent, "
        "what it runs on): keep, grow, shrink or switch, with the cost of switching (checkpoint "
        "transfer and restart), against the remaining deadline and budget.",
        runs_on=("replan",),
    ),
    "measure": LazyCommand(
        "optimizer.cli.measure_cmd",
        "Train a few steps of a model on this machine (PyTorch, extra `[measure]`) and write the "
        "calibration point `ccopt calibrate --from FILE` reads: samples/s (warm-up excluded) and peak"
        " memory (CUDA: max_memory_allocated/reserved; CPU: said so, peak RSS growth).",
        runs_on=("measure",),
    ),
    "prices": LazyCommand(
        "optimizer.cli.prices_cmd",
        "Cloud GPU offerings sorted by USD per GPU-hour, with price-sanity flags; `refresh` downloads"
        " newer tables.",
        runs_on=("gpu_rows",),
        sub_app="prices_app",
    ),
}


def load_command(name: str) -> Command:
    """The click command `name`, built from its module (imported now, once per process), with
    the API names it runs on loaded too; then the collector resumes (optimizer/startup.py)."""
    entry = LAZY_COMMANDS[name]
    module = importlib.import_module(entry.module)
    api = importlib.import_module("optimizer.api")
    for needed in entry.runs_on:  # a name through the API's own loader, or an API module
        getattr(api, needed) if needed in api.EXPORTS else importlib.import_module(f"optimizer.api.{needed}")
    startup.resume()
    if entry.sub_app is not None:
        group = typer.main.get_group(getattr(module, entry.sub_app))
        group.name = name
        return cast(TyperGroup, group)
    holder = typer.Typer(add_completion=False, rich_markup_mode=None)
    module.register(holder)
    return cast(Command, typer.main.get_group(holder).commands[name])


class HelpFormatter(Protocol):
    """What format_commands uses of click's help formatter."""

    width: int

    def section(self, name: str) -> contextlib.AbstractContextManager[None]: ...

    def write_dl(self, rows: list[tuple[str, str]]) -> None: ...


def short_help(text: str, limit: int) -> str:
    """The first sentence of `text`, cut at a word to at most `limit` characters ("...")."""
    first = text.split(". ")[0].rstrip(".")
    if len(first) <= limit:
        return first
    cut = first[: max(limit - 3, 1)].rsplit(" ", 1)[0]
    return f"{cut}..."


class LazyGroup(TyperGroup):
    """The root group: lists the table's commands, builds one only when it is asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[str, Command] = {}

    def list_commands(self, ctx: object) -> list[str]:
        return list(LAZY_COMMANDS)

    def get_command(self, ctx: object, cmd_name: str) -> Command | None:
        if cmd_name not in LAZY_COMMANDS:
            return None
        if cmd_name not in self._loaded:
            self._loaded[cmd_name] = load_command(cmd_name)
        return self._loaded[cmd_name]

    @property  # type: ignore[override]
    def commands(self) -> dict[str, Command]:  # every command, loaded (tools and tests)
        ctx = typer.Context(self)
        return {name: cmd for name in LAZY_COMMANDS if (cmd := self.get_command(ctx, name))}

    @commands.setter
    def commands(self, value: dict[str, Command]) -> None:  # click's __init__ sets it
        pass

    def format_commands(self, ctx: typer.Context, formatter: HelpFormatter) -> None:  # type: ignore[override]
        """The command list from the table: `ccopt --help` loads no command module."""
        limit = formatter.width - 6 - max(len(name) for name in LAZY_COMMANDS)
        rows = [(name, short_help(e.help, limit)) for name, e in LAZY_COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
