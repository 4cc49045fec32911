"""Shared CLI plumbing: error handling (exit codes), JSON output, rich console."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from optimizer.errors import CatalogError, ConfigError, InfeasibleError, OptimizerError

__all__ = ["user_errors", "print_json", "console", "money", "EXIT_OK", "EXIT_INFEASIBLE",
           "EXIT_BAD_INPUT", "EXIT_REFRESH_FAILED", "header_or_infeasible", "PricesOpt", "OfflineOpt",
           "JsonOpt"]

#: options shared by the commands that read a job file (one definition each)
PricesOpt = Annotated[Path | None, typer.Option("--prices", help="Offerings CSV to use instead")]
OfflineOpt = Annotated[bool, typer.Option("--offline", help="Use the bundled price tables only")]
JsonOpt = Annotated[bool, typer.Option("--json", help="JSON output (the documented contract)")]

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT = 0, 1, 2
EXIT_REFRESH_FAILED = 1  # `prices refresh` could not replace the tables (the previous ones stay)


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
    except OptimizerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


def print_json(data: Any) -> None:
    """JSON to stdout (the machine-readable contract)."""
    sys.stdout.write(json.dumps(data, indent=2, default=_default) + "\n")


def _default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def console() -> Any:
    """A rich Console on stdout; wide when piped so tables are not squeezed."""

    c = Console()
    return c if c.is_terminal else Console(width=160)


def header_or_infeasible(data: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
    """(console, job block) for rendering an answer, or None after printing why it is infeasible."""
    c = console()
    if data["status"] == "infeasible":
        c.print(f"[red]infeasible[/red]: {(data['explanation'] or {}).get('text')}")
        return None
    return c, data.get("job") or {}


def money(usd: float) -> str:
    """USD for tables: whole dollars from $100 up, cents below."""
    return f"${usd:,.0f}" if usd >= 100 else f"${usd:,.2f}"
