"""Every command's JSON contract as pydantic models; `ccopt schema COMMAND` prints them.

The models of a command load with its module (building pydantic models costs time at import):
`ccopt plan` builds the training contract only. `OUTPUTS` (every command's model) loads them all
on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from optimizer.report.contract.common import SCHEMA_VERSION, Contract, emit, emit_list

__all__ = [
    "SCHEMA_VERSION",
    "JSON_SCHEMA_DIALECT",
    "OUTPUTS",
    "OUTPUT_MODELS",
    "output_model",
    "output_schema",
    "emit",
    "emit_list",
    "Contract",
]

#: the JSON Schema dialect of every schema ccopt prints (outputs and job files)
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: command -> (the optimizer.report.contract module, the model of its `--json` output)
OUTPUT_MODELS: dict[str, tuple[str, str]] = {
    "plan": ("train", "PlanOutput"),
    "compare": ("train", "CompareOutput"),
    "estimate": ("estimate", "EstimateOutput"),
    "calibrate": ("calibration", "CalibrateOutput"),
    "calibrate-list": ("calibration", "CalibrationListOutput"),
    "serve": ("serve", "ServeOutput"),
    "serve-compare": ("serve", "ServeCompareOutput"),
    "rl": ("rl", "RlOutput"),
    "batch": ("batch", "BatchOutput"),
    "prices": ("catalogs", "PricesOutput"),
    "gpus": ("catalogs", "GpusOutput"),
    "models": ("catalogs", "ModelsOutput"),
    "stacks": ("catalogs", "StacksOutput"),
    "sizing": ("sizing", "SizingOutput"),
    "replan": ("replan", "ReplanOutput"),
    "measure": ("measure", "MeasureOutput"),
}

if TYPE_CHECKING:
    #: command -> the model of its `--json` output (every model, loaded on first use)
    OUTPUTS: dict[str, Any]


def output_model(command: str) -> Any:
    """The model of one command's `--json` output (its module loaded on first use).

    Raises:
        KeyError: `command` has no JSON contract.
    """
    module, name = OUTPUT_MODELS[command]
    return getattr(importlib.import_module(f"optimizer.report.contract.{module}"), name)


def __getattr__(name: str) -> Any:
    """`OUTPUTS`: every command's model, loaded on first use and then kept here."""
    if name != "OUTPUTS":
        raise AttributeError(f"module 'optimizer.report.contract' has no attribute {name!r}")
    outputs = {command: output_model(command) for command in OUTPUT_MODELS}
    globals()["OUTPUTS"] = outputs
    return outputs


def output_schema(command: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of one command's `--json` output."""
    schema = output_model(command).model_json_schema(mode="serialization")
    schema["$schema"] = JSON_SCHEMA_DIALECT
    schema["title"] = f"ccopt {command} --json (schema_version {SCHEMA_VERSION})"
    return schema
