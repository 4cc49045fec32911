"""`ccopt schema COMMAND`: the JSON Schema of a command's `--json` output or of a job file."""

from __future__ import annotations

from typing import Annotated

import typer

from optimizer.api.schema import INPUTS, OUTPUTS, SCHEMA_VERSION, schema_names, schema_of
from optimizer.cli.common import EXIT_BAD_INPUT, print_json

__all__ = ["register", "INPUTS", "schema_of"]


def schema(
    name: Annotated[
        str,
        typer.Argument(
            help=f"A command ({', '.join(OUTPUTS)}) or a job file kind ({', '.join(INPUTS)})",
            metavar="COMMAND",
        ),
    ],
) -> None:
    """Print the JSON Schema of COMMAND's `--json` output (or of a job file), then exit."""
    if name not in schema_names():
        typer.echo(f"error: schema: {name!r} is not known; allowed: {', '.join(schema_names())}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    print_json(schema_of(name))


def register(app: typer.Typer) -> None:
    app.command(
        "schema",
        help=f"JSON Schema of a command's --json output or of a job file.\n\nThe outputs carry "
        f"schema_version {SCHEMA_VERSION}.",
    )(schema)
