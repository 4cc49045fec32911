"""Every command's JSON contract as pydantic models; `ccopt schema COMMAND` prints them."""

from __future__ import annotations

from typing import Any

from optimizer.report.contract.batch import BatchOutput
from optimizer.report.contract.calibration import CalibrateOutput, CalibrationListOutput
from optimizer.report.contract.catalogs import GpusOutput, ModelsOutput, PricesOutput, StacksOutput
from optimizer.report.contract.common import SCHEMA_VERSION, Contract, emit, emit_list
from optimizer.report.contract.estimate import EstimateOutput
from optimizer.report.contract.measure import MeasureOutput
from optimizer.report.contract.serve import ServeCompareOutput, ServeOutput
from optimizer.report.contract.sizing import SizingOutput
from optimizer.report.contract.train import CompareOutput, PlanOutput

__all__ = ["SCHEMA_VERSION", "OUTPUTS", "output_schema", "emit", "emit_list", "Contract"]

#: command -> the model of its `--json` output
OUTPUTS: dict[str, Any] = {
    "plan": PlanOutput,
    "compare": CompareOutput,
    "estimate": EstimateOutput,
    "calibrate": CalibrateOutput,
    "calibrate-list": CalibrationListOutput,
    "serve": ServeOutput,
    "serve-compare": ServeCompareOutput,
    "batch": BatchOutput,
    "prices": PricesOutput,
    "gpus": GpusOutput,
    "models": ModelsOutput,
    "stacks": StacksOutput,
    "sizing": SizingOutput,
    "measure": MeasureOutput,
}


def output_schema(command: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of one command's `--json` output."""
    schema = OUTPUTS[command].model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"ccopt {command} --json (schema_version {SCHEMA_VERSION})"
    return schema
