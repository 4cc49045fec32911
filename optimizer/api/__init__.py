"""Python API: everything the CLI does, as functions returning plain dicts / results.

>>> from optimizer import api
>>> api.estimate("llama-2-7b", "A100-80GB", num_gpus=8, zero_stage=3, seq_len=4096)
>>> result = api.plan("examples/llama7b_10days.toml")

Names load on first use (PEP 562): `ccopt --version` and `--help` import none of them, and
`ccopt plan` imports the training planner without the batch or serving stacks. `EXPORTS` is the
one table of what the API offers and where each name lives; `optimizer.api.report` (the
`ccopt report` sweeps and page) is a module: `from optimizer.api import report`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: module -> the names it offers through `optimizer.api`
_MODULES: dict[str, tuple[str, ...]] = {
    # training, serving and batch jobs (job files, dicts or parsed jobs)
    "optimizer.api.train_jobs": (
        "plan",
        "plan_result",
        "plan_json",
        "compare",
        "sizing",
        "SizingRule",
        "replan",
    ),
    "optimizer.api.serve_jobs": ("serve", "serve_compare"),
    "optimizer.api.rl_jobs": ("rl", "run_rl", "rl_export", "check_rl_export", "RL_EXPORT_FORMATS"),
    "optimizer.api.batch_jobs": ("batch", "batch_json"),
    # one configuration: the request shape of estimate, calibrate, sizing and measure points
    "optimizer.api.estimate_run": ("estimate", "estimate_request", "assumptions_with"),
    "optimizer.configuration.build": ("Built", "build_configuration", "resolve_model"),
    "optimizer.configuration.evaluate": ("evaluate",),
    "optimizer.api.calibrate_run": ("calibrate_run", "point_request"),
    "optimizer.api.calibrate_log": ("calibrate_from_log", "plan_file_options"),
    "optimizer.calibrate.run": ("calibrate_request",),
    "optimizer.api.calibration_points": ("calibration_list", "calibration_remove"),
    "optimizer.api.plan_row": ("plan_row_request", "read_plan_file"),
    # output files (-o, --plot): never over an input, a store, a device or a directory
    "optimizer.api.outputs": ("output_file", "kept_stores"),
    # the files that launch a plan (SkyPilot, DeepSpeed, torchrun, Megatron, Slurm, ...)
    "optimizer.api.export_run": ("export", "Export", "ExportedFile", "EXPORT_FORMATS"),
    "optimizer.inputs.request": (
        "ConfigRequest",
        "RequestOption",
        "OLD_NAMES",
        "SERVE_FIELDS",
        "request_from_options",
        "request_options",
        "request_flags",
    ),
    "optimizer.inputs.calibration_file": ("MIN_EFFICIENCY",),
    # catalogs, schemas and the argument checks a front end shares with the job files
    "optimizer.api.catalog": (
        "PriceListing",
        "gpu_rows",
        "gpus_json",
        "model_rows",
        "models_json",
        "price_listing",
        "refresh_prices",
        "stack_rows",
        "stacks_json",
    ),
    "optimizer.api.checks": ("DeprecatedName", "check_number", "warn_renamed"),
    "optimizer.api.schema": ("schema_names", "schema_of"),
}
#: name -> the module it lives in
EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items() for name in names}

__all__ = sorted(EXPORTS)


def __getattr__(name: str) -> Any:
    """Load `name` from its module on first use, then keep it here."""
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'optimizer.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(EXPORTS))


if TYPE_CHECKING:  # what type checkers see: the same names, imported eagerly
    from optimizer.api.batch_jobs import batch, batch_json
    from optimizer.api.calibrate_log import calibrate_from_log, plan_file_options
    from optimizer.api.calibrate_run import calibrate_run, point_request
    from optimizer.api.calibration_points import calibration_list, calibration_remove
    from optimizer.api.catalog import (
        PriceListing,
        gpu_rows,
        gpus_json,
        model_rows,
        models_json,
        price_listing,
        refresh_prices,
        stack_rows,
        stacks_json,
    )
    from optimizer.api.checks import DeprecatedName, check_number, warn_renamed
    from optimizer.api.estimate_run import assumptions_with, estimate, estimate_request
    from optimizer.api.export_run import EXPORT_FORMATS, Export, ExportedFile, export
    from optimizer.api.outputs import kept_stores, output_file
    from optimizer.api.plan_row import plan_row_request, read_plan_file
    from optimizer.api.schema import schema_names, schema_of
    from optimizer.api.serve_jobs import serve, serve_compare
    from optimizer.api.train_jobs import SizingRule, compare, plan, plan_json, plan_result, replan, sizing
    from optimizer.calibrate.run import calibrate_request
    from optimizer.configuration.build import Built, build_configuration, resolve_model
    from optimizer.configuration.evaluate import evaluate
    from optimizer.inputs.calibration_file import MIN_EFFICIENCY
    from optimizer.inputs.request import (
        OLD_NAMES,
        SERVE_FIELDS,
        ConfigRequest,
        RequestOption,
        request_flags,
        request_from_options,
        request_options,
    )
