"""`estimate`: memory and speed of one fixed configuration, through the same model calls, the
same defaults and (with `instance`) the same hardware as the planners. The configuration is a
ConfigRequest (inputs/request.py), built by configuration/build.py exactly as `calibrate` builds
the run it fits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.configuration.build import (
    DEFAULT_TRAIN_PRECISION,
    build_configuration,
    check_seq_len,
    default_seq_len,
    instance_offering,
    resolve_model,
    serve_default_precision,
)
from optimizer.configuration.evaluate import evaluate
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.calibration_file import MIN_EFFICIENCY
from optimizer.inputs.request import (
    KIND_METHODS,
    OLD_NAMES,
    ConfigRequest,
    kind_of_method,
    method_of_kind,
    request_from_options,
)
from optimizer.inputs.validation import check_number
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec

__all__ = [
    "estimate",
    "estimate_request",
    "evaluate",
    "assumptions_with",
    "resolve_model",
    "instance_offering",
    "method_of_kind",
    "default_seq_len",
    "serve_default_precision",
    "DEFAULT_TRAIN_PRECISION",
    "KIND_METHODS",
    "check_seq_len",
]


def estimate(
    model: str | ModelSpec,
    gpu: str | None = None,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    assumptions: PerfAssumptions | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """Memory and speed of one fixed configuration, as the `ccopt estimate --json` contract.

    `settings` are ConfigRequest fields by name (num_gpus, tp, pp, context_parallel, ...,
    mode, batch, ...). `instance` ("aws:p5.48xlarge") takes the GPU, GPUs per instance,
    intra-node link and network from the catalog, exactly as the planners do; without it the
    network is the GPU class's default (model/fabric.py) and the output says it assumed it.
    `gpus`, `zero`, `checkpointing`, `quantization` and `gpus_per_node` are the old names of
    `num_gpus`, `zero_stage`, `activation_checkpointing`, `precision` (serve) and
    `gpus_per_instance` (they warn once). `method` (full | lora | qlora) is the training
    method; `kind` (pretrain | finetune | lora | qlora, as a job file's workload.kind) wins
    over it.

    Raises:
        ConfigError: a value out of range (names the flag and the allowed values).
        TypeError: a keyword that is no request field.
    """
    unknown = sorted(set(settings) - set(ConfigRequest.model_fields) - set(OLD_NAMES))
    if unknown:
        raise TypeError(f"estimate() got an unexpected keyword argument {unknown[0]!r}")
    method = settings.pop("method", None)
    if method is not None and settings.get("kind") is None:  # the API's own keyword: no warning
        settings["kind"] = kind_of_method(method)
    req = request_from_options({"model": model, "gpu": gpu, **settings})
    return estimate_request(req, prices=prices, offline=offline, assumptions=assumptions)


def assumptions_with(efficiency: float | None = None) -> PerfAssumptions:
    """Defaults + stored calibration, the base compute efficiency overridden when given.

    Raises:
        ConfigError: "--efficiency: 2 is not allowed; allowed: a number ≥ 0.001 and ≤ 1".
    """
    a = base_assumptions()
    if efficiency is None:
        return a
    check_number(efficiency, "--efficiency", ge=MIN_EFFICIENCY, le=1)
    return replace(a, efficiency=efficiency)


def estimate_request(
    req: ConfigRequest,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    assumptions: PerfAssumptions | None = None,
) -> dict[str, Any]:
    """`estimate` of a ConfigRequest (see `estimate`)."""
    return evaluate(build_configuration(req, prices, offline), assumptions or base_assumptions())
