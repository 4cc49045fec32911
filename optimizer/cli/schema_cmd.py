"""`ccopt schema COMMAND`: the JSON Schema of a command's `--json` output or of a job file."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from optimizer.cli.common import EXIT_BAD_INPUT, print_json
from optimizer.inputs.jobs.batch import BatchFile
from optimizer.inputs.jobs.serve import ServeJob
from optimizer.inputs.jobs.train import Job
from optimizer.report.contract import OUTPUTS, SCHEMA_VERSION, output_schema

__all__ = ["register", "INPUTS", "schema_of"]

#: job-file kinds -> their input model (every field with its type, default and description)
INPUTS: dict[str, Any] = {"job": Job, "serve-job": ServeJob, "batch-job": BatchFile}


def schema_of(name: str) -> dict[str, Any]:
    """JSON Schema of a command's output (plan, estimate, ...) or a job file (job, ...)."""
    if name in OUTPUTS:
        return output_schema(name)
    schema = INPUTS[name].model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"ccopt {name} file (TOML)"
    return schema


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
    if name not in OUTPUTS and name not in INPUTS:
        typer.echo(
            f"error: schema: {name!r} is not known; allowed: {', '.join([*OUTPUTS, *INPUTS])}", err=True
        )
        raise typer.Exit(EXIT_BAD_INPUT)
    print_json(schema_of(name))


def register(app: typer.Typer) -> None:
    app.command(
        "schema",
        help=f"JSON Schema of a command's --json output or of a job file.\n\nThe outputs carry "
        f"schema_version {SCHEMA_VERSION}.",
    )(schema)
