"""`ccopt prices` sub-app: list offerings (table / JSON / CSV) with their price-sanity flags,
and `refresh` the price tables."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from optimizer import api
from optimizer.api.catalog import MAX_DEADLINE_S, MAX_TIMEOUT_S, PriceListing, offerings_to_records
from optimizer.cli.common import EXIT_BAD_INPUT, OVERLAY_MARK, STALE_MARK, offline_choice, renamed_flag
from optimizer.cli.common import console as common_console
from optimizer.errors import OptimizerError

__all__ = ["prices_app", "offerings_to_records"]

prices_app = typer.Typer(
    name="prices",
    help="Cloud GPU offerings sorted by USD per GPU-hour, with price-sanity flags; `refresh` "
    "downloads newer tables.",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


_COLUMNS = (
    ("provider", "left"),
    ("instance", "left"),
    ("region", "left"),
    ("gpu", "left"),
    ("gpus", "right"),
    ("pricing", "left"),
    ("$/h", "right"),
    ("$/GPU-h", "right"),
    ("intra", "left"),
    ("inter-node", "right"),
    ("max", "right"),
    ("price from", "left"),
    ("flags", "left"),
)


def _render_table(listing: PriceListing) -> None:
    frame = listing.frame
    table = Table(title=f"{len(frame)} offerings, cheapest GPU-hour first")
    for name, justify in _COLUMNS:
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    notes: list[str] = []
    yours: list[str] = []  # what your prices changed, one line per row
    for row in frame.itertuples(index=False):
        table.add_row(*_table_row(listing, row, notes, yours))
    console = common_console(width=200)  # piped: do not squeeze the table into 80 columns
    console.print(table)
    console.print(
        "* reserved rate derived from a published discount (reserved rows bill every "
        "hour of the 1- or 3-year term); ^ inter-node bandwidth is a documented default; "
        f"{OVERLAY_MARK} price set by your prices; {STALE_MARK} price older than the stated age "
        "($CCOPT_PRICE_MAX_AGE_DAYS)"
    )
    if yours:
        console.print("your prices (overlay):", markup=False)
        for line in yours:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if notes:
        console.print("flags (double-check these prices before relying on them):", markup=False)
        for note in notes:
            console.print(f"  {note}", markup=False, highlight=False, soft_wrap=True)


def _table_row(listing: PriceListing, row: Any, notes: list[str], yours: list[str]) -> tuple[str | Text, ...]:
    """One offering's cells; its flags go to the numbered `notes`, a price your prices changed
    to `yours`."""
    pricing = row.pricing_model + ("*" if row.derived else "")
    inter = f"{row.inter_node_gbps:g} Gb/s {row.inter_node_kind}"
    inter += "^" if row.inter_node_is_default else ""
    limit = "" if math.isnan(row.max_instances) else str(int(row.max_instances))
    found = listing.flags_of(row)
    first = len(notes) + 1  # footnote number of this row's first flag
    notes.extend(f"[{first + i}] {f.rule}: {f.reason}" for i, f in enumerate(found))
    marks = Text(", ".join(f"{f.rule} [{first + i}]" for i, f in enumerate(found)))
    price = listing.price_of(row)
    origin = f"{price.get('source', '')} {price.get('as_of', '')}"
    origin += (OVERLAY_MARK if price.get("source") == "overlay" else "") + (
        STALE_MARK if price.get("stale") else ""
    )
    if price.get("note"):
        yours.append(f"  {row.provider} {row.instance_type} {row.pricing_model}: {price['note']}")
    return (
        row.provider,
        row.instance_type,
        row.region,
        row.gpu_id,
        str(row.gpus_per_instance),
        pricing,
        f"{row.usd_per_hour:.2f}",
        f"{row.usd_per_gpu_hour:.3f}",
        row.intra_node_link,
        inter,
        limit,
        origin,
        marks,
    )


def _min_instances(min_instances: int | None, max_instances: int | None) -> int | None:
    """The --min-instances value, taking the old spelling --max-instances (it always meant
    'at least N'; warns once, as every renamed flag)."""
    try:
        return renamed_flag(min_instances, max_instances, "--min-instances", "--max-instances", None)
    except OptimizerError as exc:
        raise _fail(str(exc)) from None


def _seconds(new: float | None, old: float | None, name: str, default: float, most: float) -> float:
    """A refresh time from --NAME-s or its old spelling --NAME (warns once), in range."""
    try:
        value = renamed_flag(new, old, f"--{name}-s", f"--{name}", default)
        api.check_number(value, f"--{name}" if old is not None else f"--{name}-s", gt=0, le=most)
    except OptimizerError as exc:
        raise _fail(str(exc)) from None
    return float(value)


GpuFilterOpt = Annotated[
    list[str] | None,
    typer.Option("--gpu", "-g", metavar="GPU", help="GPU id or alias; repeat or comma-separate."),
]
ProviderFilterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--provider",
        "-p",
        metavar="PROVIDER",
        help="Provider (aws, gcp, azure, lambda, ...); repeat for several.",
    ),
]
PricingFilterOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--pricing", metavar="PRICING", help="on_demand, spot, reserved_1y, reserved_3y; repeat for several."
    ),
]
RegionFilterOpt = Annotated[
    list[str] | None,
    typer.Option("--region", metavar="REGION", help="Region name as in the table; repeat for several."),
]
MinInstancesOpt = Annotated[
    int | None,
    typer.Option(
        "--min-instances", metavar="N", help="Only offerings that can supply at least N instances together."
    ),
]
OldMaxInstancesOpt = Annotated[
    int | None, typer.Option("--max-instances", hidden=True, help="Old name of --min-instances.")
]
FlaggedOpt = Annotated[bool, typer.Option("--flagged", help="Only rows flagged by a price-sanity rule.")]
ListingJsonOpt = Annotated[
    bool,
    typer.Option(
        "--json", help="JSON list of rows on stdout (catalog columns, gpu/instance/pricing, flags)."
    ),
]
ListingCsvOpt = Annotated[
    bool, typer.Option("--csv", help="CSV on stdout (the catalog columns only: a valid offerings file).")
]
ListingOfflineOpt = Annotated[
    bool, typer.Option("--offline", help="Use the bundled tables (also CCOPT_OFFLINE=1).")
]


@prices_app.callback()
def prices(
    ctx: typer.Context,
    gpu: GpuFilterOpt = None,
    provider: ProviderFilterOpt = None,
    pricing: PricingFilterOpt = None,
    region: RegionFilterOpt = None,
    min_instances: MinInstancesOpt = None,
    max_instances: OldMaxInstancesOpt = None,
    flagged: FlaggedOpt = False,
    as_json: ListingJsonOpt = False,
    as_csv: ListingCsvOpt = False,
    offline: ListingOfflineOpt = False,
) -> None:
    """List offerings sorted by USD per GPU-hour (source, as-of date and age on stderr).

    Flags are judged against the whole catalog, before the filters.
    """
    if ctx.invoked_subcommand is not None:
        return
    least = _min_instances(min_instances, max_instances)
    if as_json and as_csv:
        raise _fail("output: choose one of --json or --csv")

    try:
        listing = api.price_listing(
            gpus=gpu,
            providers=provider,
            regions=region,
            pricing=pricing,
            min_instances=least,
            flagged=flagged,
            offline=offline_choice(offline),
        )
    except OptimizerError as exc:
        raise _fail(str(exc)) from None
    typer.echo(_age_line(listing.description, listing.age_days), err=True)
    _print_listing(listing, as_json=as_json, as_csv=as_csv)


def _print_listing(listing: PriceListing, *, as_json: bool, as_csv: bool) -> None:
    """The listing on stdout: JSON, CSV or the table (nothing matched: one line on stderr)."""
    if as_json:
        typer.echo(json.dumps(listing.to_json(), indent=2, allow_nan=False))
    elif as_csv:
        typer.echo(listing.frame.to_csv(index=False), nl=False)
    elif listing.frame.empty:
        typer.echo("no offerings match the filters", err=True)
    else:
        _render_table(listing)


def _age_line(description: str, age_days: int) -> str:
    """The stderr summary with the tables' age: '..., as of 2026-12-02; 1 day old'."""
    age = "dated today" if age_days == 0 else f"{age_days} day{'' if abs(age_days) == 1 else 's'} old"
    return f"{description}; {age}"


UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="http(s) URL of an offerings CSV (default: $CCOPT_PRICES_URL; neither: the "
        "public SkyPilot catalog).",
    ),
]
CatalogUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--catalog-url",
        help="SkyPilot catalog directory holding v8/<cloud>/vms.csv (default: "
        "$CCOPT_SKYPILOT_URL, else the published catalog on raw.githubusercontent.com).",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout-s",
        help=f"Seconds per read (connect, each read of the body): > 0 and ≤ {MAX_TIMEOUT_S:g} (default 10).",
        show_default=False,
    ),
]
DeadlineOpt = Annotated[
    float | None,
    typer.Option(
        "--deadline-s",
        help=f"Seconds for the whole refresh (every attempt): > 0 and ≤ {MAX_DEADLINE_S:g} (default 60).",
        show_default=False,
    ),
]
RetriesOpt = Annotated[
    int, typer.Option("--retries", help="Extra attempts on timeouts, connection errors and 5xx; 0 to 10.")
]
AllowShrinkOpt = Annotated[
    bool,
    typer.Option(
        "--allow-shrink",
        help="Accept a table that lost more than 20% of the rows in use or a whole provider.",
    ),
]
OldTimeoutOpt = Annotated[float | None, typer.Option("--timeout", hidden=True)]
OldDeadlineOpt = Annotated[float | None, typer.Option("--deadline", hidden=True)]


@prices_app.command("refresh")
def refresh(
    url: UrlOpt = None,
    catalog_url: CatalogUrlOpt = None,
    timeout_s: TimeoutOpt = None,
    deadline_s: DeadlineOpt = None,
    retries: RetriesOpt = 3,
    allow_shrink: AllowShrinkOpt = False,
    old_timeout: OldTimeoutOpt = None,
    old_deadline: OldDeadlineOpt = None,
) -> None:
    """Download newer price tables into the user cache (previous tables kept on any failure).

    Without --url: the public SkyPilot catalog's per-cloud vms.csv files (aws, azure, gcp,
    lambda, oci, runpod, vast), converted with the rules of the bundled table; each file has
    its own deadline and each provider its own shrink check.

    Exit codes, as every command: 0 updated or not modified, 2 the arguments or the price source
    are unusable (network, server, an invalid or shrunken table: the one line says which, and
    that the previous tables are kept byte-identical), 3 an internal error (a bug in ccopt;
    `ccopt --debug prices refresh` shows the traceback).
    """
    timeout_s = _seconds(timeout_s, old_timeout, "timeout", 10.0, MAX_TIMEOUT_S)
    deadline_s = _seconds(deadline_s, old_deadline, "deadline", 60.0, MAX_DEADLINE_S)
    try:
        result = api.refresh_prices(
            url,
            catalog_url=catalog_url,
            timeout_s=timeout_s,
            retries=retries,
            deadline_s=deadline_s,
            allow_shrink=allow_shrink,
        )
    except OptimizerError as exc:  # RefreshError included: the message says the cache was kept
        raise _fail(str(exc)) from None
    typer.echo(result.describe(), err=True)
    for note in result.skipped[:20]:  # what the catalog has that the tables cannot use, and why
        typer.echo(f"  left out: {note}", err=True)
    if len(result.skipped) > 20:
        typer.echo(f"  (+{len(result.skipped) - 20} more left out)", err=True)
