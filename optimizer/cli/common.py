"""Shared CLI plumbing: error handling (exit codes), JSON output, rich console."""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.highlighter import NullHighlighter, ReprHighlighter
from rich.text import Text

from optimizer import notices
from optimizer.api.checks import check_number, warn_renamed
from optimizer.errors import CatalogError, ConfigError, InfeasibleError, OptimizerError, SolverError
from optimizer.units import money

__all__ = [
    "user_errors",
    "solved_line",
    "goodput_words",
    "signed_money",
    "memory_calibration_words",
    "print_json",
    "console",
    "money",
    "EXIT_OK",
    "EXIT_INFEASIBLE",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL",
    "header_or_infeasible",
    "print_solved_header",
    "catalog_line",
    "print_fallback",
    "layout_words",
    "interconnect_words",
    "answer",
    "print_notes",
    "renamed_flag",
    "price_mark",
    "price_words",
    "price_legend",
    "notices_on_stderr",
    "MAX_TIME_LIMIT_S",
    "MIN_TIME_LIMIT_S",
    "MAX_WORKERS",
    "MAX_ALTERNATIVES",
    "JobArg",
    "PricesOpt",
    "OfflineOpt",
    "JsonOpt",
    "ForceOpt",
    "input_files",
    "TimeLimitOpt",
    "OldTimeLimitOpt",
    "time_limit_s",
    "time_limit_help",
    "time_limit_option",
    "offline_choice",
    "WarmupStepsOpt",
    "AlternativesOpt",
    "DEFAULT_TIME_LIMIT_S",
]

#: options shared by the commands that read a job file (one definition each)
JobArg = Annotated[Path, typer.Argument(help="Job file (TOML)", metavar="JOB")]
PricesOpt = Annotated[Path | None, typer.Option("--prices", help="Offerings CSV to use instead")]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="Use the bundled price tables only")]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output (the documented contract)")]
#: `--warmup-steps` of the commands that time a reading (sizing, measure); each its own default
WarmupStepsOpt = Annotated[int, typer.Option(help="Steps before the reading (excluded)")]


def offline_choice(offline: bool) -> bool | None:
    """The API's `offline` of an --offline flag: True when given, else None ($CCOPT_OFFLINE decides)."""
    return True if offline else None


ConfidenceOpt = Annotated[
    float | None,
    typer.Option(
        "--confidence",
        help="Meet the deadline and budget at this quantile of the step-time band, 0.5-0.99 "
        "(default: the job's constraints.confidence, else 0.8)",
        show_default=False,
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an existing output file that is not an earlier ccopt output "
        "(never an input, the calibration store or the price cache)",
    ),
]


def input_files(job: Path | None, prices: Path | None = None) -> dict[str, Path | None]:
    """What an output may never replace among a command's named inputs (optimizer.files)."""
    return {"the job file": job, "the --prices table": prices}


#: ranges of the solver flags (--time-limit-s seconds, --workers threads, --alternatives plans)
MAX_TIME_LIMIT_S = 86_400.0
MIN_TIME_LIMIT_S = 0.1
MAX_WORKERS = 256
MAX_ALTERNATIVES = 20
#: the solver time limit of plan, serve, serve-compare and report (batch: its own default)
DEFAULT_TIME_LIMIT_S = 10.0


def time_limit_help(default_s: float, what: str = "Solver time limit") -> str:
    """Help of --time-limit-s: its range and default (the option itself defaults to None, so
    that its old spelling --time-limit can be told apart)."""
    return f"{what}, seconds: {MIN_TIME_LIMIT_S:g}–{MAX_TIME_LIMIT_S:g} (default {default_s:g})"


def time_limit_option(default_s: float, what: str = "Solver time limit") -> Any:
    """The --time-limit-s option of a command whose solver defaults to `default_s` seconds
    (its help: time_limit_help); the one declaration of plan's, batch's and report's."""
    return typer.Option("--time-limit-s", help=time_limit_help(default_s, what), show_default=False)


TimeLimitOpt = Annotated[float | None, time_limit_option(DEFAULT_TIME_LIMIT_S)]
OldTimeLimitOpt = Annotated[float | None, typer.Option("--time-limit", hidden=True)]
AlternativesOpt = Annotated[
    int, typer.Option("--alternatives", help=f"Next-best distinct plans to show: 0–{MAX_ALTERNATIVES}")
]


def time_limit_s(new: float | None, old: float | None, default_s: float = DEFAULT_TIME_LIMIT_S) -> float:
    """The solver time limit from --time-limit-s or its old spelling --time-limit (warns once;
    both given and different: bad input), checked against its range under the name given.

    Raises:
        ConfigError: out of range, or the two spellings disagree.
    """
    value = renamed_flag(new, old, "--time-limit-s", "--time-limit", default_s)
    name = "--time-limit" if old is not None else "--time-limit-s"
    check_number(value, name, ge=MIN_TIME_LIMIT_S, le=MAX_TIME_LIMIT_S)
    return float(value)


EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3


@contextlib.contextmanager
def user_errors() -> Iterator[None]:
    """Turn our errors into one line on stderr and the documented exit code (no traceback)."""
    try:
        yield
    except (ConfigError, CatalogError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except InfeasibleError as exc:
        typer.echo(f"infeasible: {exc}", err=True)
        raise typer.Exit(EXIT_INFEASIBLE) from None
    except SolverError as exc:  # not the user's fault (a bug: exit 3), unless it ran out of time
        text = " ".join(str(exc).split())  # one line, however CP-SAT words it
        if "raise the time limit" in text:  # no answer within --time-limit: the flag's value
            typer.echo(f"error: {text}", err=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        typer.echo(
            f"internal error: {text[:300]} — a bug in ccopt; rerun with --debug for the "
            "traceback and report it",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL) from None
    except OptimizerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def renamed_flag(
    new_value: Any, old_value: Any, new_flag: str, old_flag: str, default: Any, new_text: Any = None
) -> Any:
    """The value of a flag that has an old spelling: the old one still works (warns once);
    both given with different values is bad input. `new_text`: the new flag's value as the
    user typed it, when `new_value` is its translation to the old flag's vocabulary."""
    if old_value is None:
        return default if new_value is None else new_value
    warn_renamed(old_flag, new_flag)
    if new_value is not None and new_value != old_value:
        shown = new_value if new_text is None else new_text
        raise ConfigError(f"{new_flag} {shown} and {old_flag} {old_value} disagree; give only {new_flag}")
    return old_value


def notices_on_stderr() -> contextlib.AbstractContextManager[None]:
    """While a command runs: every note and warning (optimizer.notices: an old name used, a
    cache ignored) as one `note: …` / `warning: …` line on stderr, each distinct line once."""
    return notices.printed_to(_to_stderr)


def _to_stderr(line: str) -> None:
    sys.stderr.write(f"{line}\n")


def print_json(data: Any) -> None:
    """JSON to stdout (the machine-readable contract)."""
    sys.stdout.write(json.dumps(data, indent=2, default=_default) + "\n")


def _default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


#: a word this long is not highlighted: rich's repr regexes (e.g. `[\w.]*?\(`) take time
#: quadratic in a word's length, so a 1 MB job or instance name would take hours to print
LONGEST_HIGHLIGHTED_WORD = 200
_LONG_WORD = re.compile(rf"[\w.]{{{LONGEST_HIGHLIGHTED_WORD}}}")


class LinearHighlighter(ReprHighlighter):
    """rich's ReprHighlighter, except on text holding a very long word (printed plain): the
    time to print stays linear in the length of the names printed."""

    def highlight(self, text: Text) -> None:
        if _LONG_WORD.search(text.plain) is None:
            super().highlight(text)


def console(width: int = 160, **options: Any) -> Any:
    """A rich Console on stdout (`options`: Console's), `width` wide when piped so tables are
    not squeezed; printing stays linear in name length (LinearHighlighter), and without colours
    nothing is highlighted (the same text, ~5 ms less for a plan); emoji codes are not replaced
    (names print as written, and rich's 2 ms emoji table is not loaded)."""

    options.setdefault("emoji", False)  # a name like "run:fire:" prints as written
    c = Console(highlighter=LinearHighlighter(), **options)
    if not c.is_terminal:
        c = Console(width=width, highlighter=LinearHighlighter(), **options)
    if c.color_system is None:  # no colours shown (piped, NO_COLOR...): nothing to highlight
        c.highlighter = NullHighlighter()
    return c


def header_or_infeasible(data: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """(console, job block) for rendering an answer, or None after printing why it is infeasible."""
    c = console()
    if data["status"] == "infeasible":
        c.print(f"[red]infeasible[/red]: {(data['explanation'] or {}).get('text')}")
        print_fallback(c, data)
        return None
    return c, data.get("job") or {}


def solved_line(data: dict[str, Any], job: dict[str, Any], subject: str, rows_word: str) -> str:
    """The first line of a solved answer: '[b]NAME[/b]: SUBJECT — [b]STATUS[/b] (CP-SAT, N
    ROWS_WORD, T s; prices as of ...)'."""
    s = data["solver"]
    return (
        f"[b]{job.get('name')}[/b]: {subject} — [b]{data['status']}[/b] (CP-SAT, {s.get('rows')} "
        f"{rows_word}, {s.get('wall_s', 0):.3f} s; {catalog_line(data.get('catalog'))})"
    )


def print_solved_header(
    data: dict[str, Any], rows_word: str, subject: Callable[[dict[str, Any], dict[str, Any]], str]
) -> tuple[Any, dict[str, Any], dict[str, Any]] | None:
    """(console, job block, plan) of a one-plan answer (plan, serve, rl) after printing its
    first line (solved_line of `subject(job, plan)`), or None after printing why it is infeasible."""
    shown = header_or_infeasible(data)
    if shown is None:
        return None
    c, job = shown
    plan = data["plan"]
    c.print(solved_line(data, job, subject(job, plan), rows_word))
    return c, job, plan


def answer(data: Any, json_out: bool, render: Any, status: str | None = None) -> None:
    """Print the contract (--json) or its rendering; exit 1 when the answer is infeasible."""
    if json_out:
        print_json(data)
    else:
        render(data)
    if (status or data.get("status")) == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)


def print_notes(c: Any, data: dict[str, Any]) -> None:
    """The answer's notes (flagged prices a plan relies on), right under its first line."""
    for note in data.get("notes", []):
        c.print(f"  [bold yellow]note:[/bold yellow] {note}")


def print_fallback(c: Any, data: dict[str, Any]) -> None:
    """The price-table fallback (an invalid cache → bundled), for outputs without catalog_line."""
    note = (data.get("catalog") or {}).get("note")
    if note:
        c.print(f"  [bold yellow]note:[/bold yellow] prices: {note}")


def catalog_line(catalog: dict[str, Any] | None) -> str:
    """'prices as of 2026-12-02, 1 day old (bundled)' or 'no cloud prices used'; a fallback
    (an invalid cache → the bundled tables) is stated: '...; NOTE: ignored invalid cache: ...'."""
    if not catalog:
        return "no cloud prices used"
    days = catalog.get("age_days")
    age = "" if days is None else f", {days} day{'' if days == 1 else 's'} old"
    line = f"prices as of {catalog.get('as_of')}{age} ({catalog.get('source')})"
    if catalog.get("overlays"):
        line += f" + your prices ({', '.join(catalog['overlays'])})"
    return f"{line}; NOTE: {catalog['note']}" if catalog.get("note") else line


def layout_words(lay: dict[str, Any], short: bool = False) -> str:
    """A training layout in words: 'tp 2 × pp 2 × dp 2, ZeRO-1, selective checkpointing'."""
    ckpt = lay["activation_checkpointing"]
    if short:
        return (
            f"tp{lay['tp']}×pp{lay['pp']}×dp{lay['dp']} ZeRO-{lay['zero_stage']} {ckpt} "
            f"mb{lay['micro_batch']}×ga{lay['grad_accum']}"
        )
    return (
        f"tp {lay['tp']} × pp {lay['pp']} × dp {lay['dp']}, ZeRO-{lay['zero_stage']}, "
        f"{'no' if ckpt == 'none' else ckpt} activation checkpointing"
    )


def memory_calibration_words(p: dict[str, Any]) -> str:
    """ "; activations × F from measured peaks" for a plan or estimate whose memory is
    calibrated (`ccopt calibrate --peak-memory-gib`), else ""."""
    if not p.get("memory_calibrated"):
        return ""
    return f"; memory calibrated: activations ×{p['memory_activation_factor']:.2f} from measured peaks"


def interconnect_words(p: dict[str, Any]) -> str:
    """The links a plan's layout communicates over, in words."""
    intra = (p.get("intra_node_link") or "?").upper()
    if p.get("intra_node_path") == "host":
        intra = "PCIe through host memory (no peer-to-peer)"
    lay = p["layout"]
    parts = [f"{intra} inside the instance"] if p.get("gpus_per_instance", 1) > 1 else []
    if p["instances"] > 1:
        guess = ", a documented default" if p.get("inter_node_is_default") else ""
        parts.append(
            f"{p['inter_node_gbps']:g} Gbit/s {p['inter_node_kind']} between "
            f"{p['instances']} instances{guess}"
        )
    if not parts:
        return "one GPU (no interconnect)"
    tp = " (tensor parallel over " + intra + ")" if lay["tp"] > 1 else ""
    return " and ".join(parts) + tp


def signed_money(usd: float) -> str:
    """A difference in USD with its sign (+$143, −$194)."""
    return ("−" if usd < 0 else "+") + money(abs(usd))


#: the marks a plan line's pricing column carries (legend printed under the table)
OVERLAY_MARK = "†"
STALE_MARK = "⌛"


def price_mark(line: dict[str, Any]) -> str:
    """'†' when your prices changed this line's price, '⌛' when the price is older than the
    stated age (both may show)."""
    price = line.get("price") or {}
    return (OVERLAY_MARK if line.get("price_source") == "overlay" else "") + (
        STALE_MARK if price.get("stale") else ""
    )


def price_words(line: dict[str, Any]) -> str:
    """E.g. 'price: your prices (on_demand 30% off (prices.toml); catalog $55.04/h), as of
    2026-12-02, 2 days old' — where a plan line's price comes from and how old it is."""
    price = line.get("price") or {}
    source = line.get("price_source", price.get("source", ""))
    label = {
        "bundled": "bundled tables",
        "refreshed": "refreshed tables",
        "file": "the --prices file",
        "overlay": "your prices",
        "hardware": "the box's specs",
    }.get(source, source)
    if price.get("note"):
        before = price.get("catalog_usd_per_hour")
        label += f" ({price['note']}" + (f"; catalog ${before:,.2f}/h)" if before else ")")
    if price.get("as_of"):
        days = price.get("age_days") or 0
        label += f", as of {price['as_of']}, {days} day{'' if days == 1 else 's'} old"
    if price.get("stale"):
        label += f" — [yellow]older than {price.get('max_age_days')} days: check it[/yellow]"
    return f"price: {label}"


def price_legend(lines: list[dict[str, Any]]) -> str | None:
    """The legend of the marks used in a table of plan lines, or None."""
    marks = "".join(price_mark(x) for x in lines)
    parts = []
    if OVERLAY_MARK in marks:
        parts.append(f"{OVERLAY_MARK} price set by your prices (overlay)")
    if STALE_MARK in marks:
        parts.append(f"{STALE_MARK} price older than the stated age")
    return "; ".join(parts) or None


def goodput_words(g: dict[str, Any]) -> str:
    """The plan's whole-run line: where its hours go (the JSON's `goodput` block)."""
    interval = g.get("checkpoint_interval_h")
    every = f", one every {interval:.1f} h" if interval is not None else ""
    return (
        f"whole run: {g['compute_hours']:,.1f} h compute + {g.get('evaluation_hours', 0.0):,.1f} h "
        f"evaluation + {g['checkpoint_hours']:,.1f} h checkpoints{every} + {g['failures_hours']:,.1f} h "
        f"failures and restarts ({g['expected_interruptions']:.2g} expected, "
        f"{g['interruptions_per_day']:.2g}/day) + {g['startup_hours']:,.2f} h start-up + "
        f"{g.get('conversion_hours', 0.0):,.2f} h checkpoint conversion; goodput {g['goodput']:.1%}"
    )
