"""`ccopt prices` sub-app: list offerings (table / JSON / CSV) and `refresh` the price tables."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from optimizer.cli.common import EXIT_BAD_INPUT, EXIT_REFRESH_FAILED
from optimizer.errors import OptimizerError, RefreshError
from optimizer.pricing.catalog import filter_offerings, load_catalog
from optimizer.pricing.refresh import refresh_prices

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["prices_app", "offerings_to_records"]

prices_app = typer.Typer(
    name="prices",
    help="Cloud GPU offerings sorted by USD per GPU-hour; `refresh` downloads newer tables.",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

_SORT = ["usd_per_gpu_hour", "provider", "instance_type", "region", "pricing_model"]


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def offerings_to_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (NaN -> None; max_instances as int)."""
    records = frame.to_dict(orient="records")
    for record in records:
        for key, value in record.items():
            if isinstance(value, float) and math.isnan(value):
                record[key] = None
        if record.get("max_instances") is not None:
            record["max_instances"] = int(record["max_instances"])
    return records


def _render_table(frame: pd.DataFrame) -> None:

    table = Table(title=f"{len(frame)} offerings, cheapest GPU-hour first")
    for name, justify in (("provider", "left"), ("instance", "left"), ("region", "left"),
                          ("gpu", "left"), ("gpus", "right"), ("pricing", "left"),
                          ("$/h", "right"), ("$/GPU-h", "right"), ("intra", "left"),
                          ("inter-node", "right"), ("max", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in frame.itertuples(index=False):
        pricing = row.pricing_model + ("*" if row.derived else "")
        inter = f"{row.inter_node_gbps:g} Gb/s {row.inter_node_kind}"
        inter += "^" if row.inter_node_is_default else ""
        limit = "" if math.isnan(row.max_instances) else str(int(row.max_instances))
        table.add_row(row.provider, row.instance_type, row.region, row.gpu_id,
                      str(row.gpus_per_instance), pricing, f"{row.usd_per_hour:.2f}",
                      f"{row.usd_per_gpu_hour:.3f}", row.intra_node_link, inter, limit)
    console = Console()
    if not console.is_terminal:  # piped: do not squeeze the table into 80 columns
        console = Console(width=200)
    console.print(table)
    console.print("* reserved rate derived from a published discount (reserved rows bill every "
                  "hour of the 1- or 3-year term); ^ inter-node bandwidth is a documented default")


@prices_app.callback()
def prices(
    ctx: typer.Context,
    gpu: Annotated[list[str] | None, typer.Option(  # noqa: UP007 (typer needs Optional)
        "--gpu", "-g", help="GPU id or alias; repeat or comma-separate.")] = None,
    provider: Annotated[list[str] | None, typer.Option(  # noqa: UP007
        "--provider", "-p", help="Provider (aws, gcp, azure, lambda, ...).")] = None,
    pricing: Annotated[list[str] | None, typer.Option(  # noqa: UP007
        "--pricing", help="on_demand, spot, reserved_1y, reserved_3y.")] = None,
    region: Annotated[list[str] | None, typer.Option(  # noqa: UP007
        "--region", help="Region name as in the table; repeat for several.")] = None,
    max_instances: Annotated[int | None, typer.Option(  # noqa: UP007
        "--max-instances", help="Only offerings rentable at least this many instances together.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON list of rows on stdout.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout.")] = False,
    offline: Annotated[bool, typer.Option(
        "--offline", help="Use the bundled tables (also CCOPT_OFFLINE=1).")] = False,
) -> None:
    """List offerings sorted by USD per GPU-hour (source and as-of date on stderr)."""
    if ctx.invoked_subcommand is not None:
        return
    if as_json and as_csv:
        raise _fail("output: choose one of --json or --csv")

    try:
        catalog = load_catalog(offline=True if offline else None)
        frame = filter_offerings(catalog.frame, gpus=gpu, providers=provider, regions=region,
                                 pricing=pricing, max_instances=max_instances)
    except OptimizerError as exc:
        raise _fail(str(exc)) from None
    typer.echo(catalog.describe(), err=True)
    frame = frame.sort_values(_SORT, kind="mergesort").reset_index(drop=True)
    if as_json:
        typer.echo(json.dumps(offerings_to_records(frame), indent=2))
    elif as_csv:
        typer.echo(frame.to_csv(index=False), nl=False)
    elif frame.empty:
        typer.echo("no offerings match the filters", err=True)
    else:
        _render_table(frame)


@prices_app.command("refresh")
def refresh(
    url: Annotated[str | None, typer.Option(  # noqa: UP007
        "--url", help="http(s) URL of an offerings CSV (default: $CCOPT_PRICES_URL).")] = None,
    timeout_s: Annotated[float, typer.Option("--timeout", help="Seconds per attempt.")] = 10.0,
    retries: Annotated[int, typer.Option("--retries", help="Extra attempts on failure.")] = 3,
) -> None:
    """Download newer price tables into the user cache (previous tables kept on any failure)."""

    try:
        result = refresh_prices(url, timeout_s=timeout_s, retries=retries)
    except RefreshError as exc:
        raise _fail(str(exc), code=EXIT_REFRESH_FAILED) from None
    except OptimizerError as exc:
        raise _fail(str(exc)) from None
    typer.echo(result.describe(), err=True)
