"""The `ccopt` command line: parses, calls optimizer.api, renders (rich tables or --json)."""

from __future__ import annotations

import typer

from optimizer import __version__
from optimizer.cli import batch_cmd, estimate_cmd, info_cmd, plan_cmd, schema_cmd, serve_cmd
from optimizer.cli.common import show_deprecations
from optimizer.cli.prices_cmd import prices_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="ccopt",
    help="The cheapest GPU cluster that finishes an ML job on time.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ccopt {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit")) -> None:
    """The cheapest GPU cluster that finishes an ML job on time."""
    show_deprecations()


info_cmd.register(app)
estimate_cmd.register(app)
plan_cmd.register(app)
app.add_typer(prices_app, name="prices")

batch_cmd.register(app)
serve_cmd.register(app)
schema_cmd.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
