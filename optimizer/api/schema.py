"""JSON Schemas: of each command's `--json` output (the contract) and of each job file."""

from __future__ import annotations

from typing import Any

from optimizer.inputs.jobs.batch import BatchFile
from optimizer.inputs.jobs.rl import RlJob
from optimizer.inputs.jobs.serve import ServeJob
from optimizer.inputs.jobs.train import Job
from optimizer.report.contract import JSON_SCHEMA_DIALECT, OUTPUTS, SCHEMA_VERSION, output_schema

__all__ = ["INPUTS", "OUTPUTS", "SCHEMA_VERSION", "schema_names", "schema_of"]

#: job-file kinds -> their input model (every field with its type, default and description)
INPUTS: dict[str, Any] = {"job": Job, "serve-job": ServeJob, "batch-job": BatchFile, "rl-job": RlJob}


def schema_names() -> list[str]:
    """Every name `schema_of` knows: the commands with a --json output, then the job files."""
    return [*OUTPUTS, *INPUTS]


def schema_of(name: str) -> dict[str, Any]:
    """JSON Schema of a command's output (plan, estimate, ...) or a job file (job, ...).

    Raises:
        KeyError: `name` is neither (see schema_names).
    """
    if name in OUTPUTS:
        return output_schema(name)
    schema = INPUTS[name].model_json_schema(mode="validation")
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["title"] = f"ccopt {name} file (TOML)"
    return schema
