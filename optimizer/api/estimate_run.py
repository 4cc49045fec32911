"""`estimate`: memory and speed of one fixed configuration, through the same model calls, the
same defaults and (with `instance`) the same hardware as the planners. The configuration is a
ConfigRequest (inputs/request.py), built by api/configuration.py exactly as `calibrate` builds
the run it fits."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.api.configuration import (
    DEFAULT_TRAIN_PRECISION,
    Built,
    build_configuration,
    check_seq_len,
    default_seq_len,
    instance_offering,
    resolve_model,
    serve_default_precision,
)
from optimizer.errors import ConfigError
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
from optimizer.model.bands import step_band
from optimizer.model.estimate_figures import serve_estimate_figures, train_estimate_figures
from optimizer.model.memory import serving_memory, training_memory
from optimizer.model.profile import is_profile
from optimizer.model.serving import serving_max_batch, serving_perf
from optimizer.model.setup import PerfAssumptions, ServeSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import compute_efficiency, microbatch_size_factor, training_step_time
from optimizer.report.estimate import serve_estimate_json, train_estimate_json

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


def evaluate(built: Built, a: PerfAssumptions) -> dict[str, Any]:
    """The estimate of a built configuration under assumptions `a` (the contract's dict)."""
    return _serve(built, a) if built.request.mode == "serve" else _train(built, a)


def _serve(built: Built, a: PerfAssumptions) -> dict[str, Any]:
    req, spec, g, tp, quant = built.request, built.spec, built.gpu, built.request.tp, built.precision
    output_tokens, context = req.output_tokens, req.context
    prompt = req.prompt_tokens or (context - output_tokens if context and context > output_tokens else 1024)
    ctx = context or prompt + output_tokens
    setup = ServeSetup(
        weight_precision=quant,
        kv_precision=req.kv_cache_precision,
        batch=1,
        context=ctx,
        stack=built.stack,
        output_tokens=output_tokens,
    )
    if req.batch == "max":
        size = serving_max_batch(spec, setup, g, tp, a)
        if size < 1:
            raise ConfigError(
                f"--batch max: one {ctx}-token sequence of {spec.name} at {quant} "
                f"does not fit {tp}× {g.gpu_id}"
            )
    else:
        size = int(req.batch)
    setup = replace(setup, batch=size)
    mem = serving_memory(spec, setup, tp, a)
    perf = serving_perf(spec, setup, g, tp, prompt, output_tokens, a)
    figures = serve_estimate_figures(spec, g, built.num_gpus, tp, mem, perf)
    return serve_estimate_json(spec, g, built.num_gpus, setup, tp, mem, perf, built.where, figures=figures)


def _train(built: Built, a: PerfAssumptions) -> dict[str, Any]:
    spec, g, setup, layout, precision = built.spec, built.gpu, built.setup, built.layout, built.precision
    assert setup is not None and layout is not None  # mode train: built with both
    where = built.where
    mem = training_memory(spec, setup, layout, a)
    step = training_step_time(spec, setup, layout, built.cluster, a) if g.supports(precision) else None
    band = None if step is None else step_band(step, g, precision, built.stack, a)
    if step is not None and not is_profile(spec):  # before the size factor (what calibrate fits)
        base = compute_efficiency(g, precision, a, built.stack)[0]
        if step.calibrated:  # a calibration's base efficiency is the layout's own (model.calibrated)
            base = step.efficiency / microbatch_size_factor(spec, setup, layout, a)
        where = {**where, "base_efficiency": round(base, 4)}
    where = {**where, "band": band, "seq_len": built.seq_len}
    figures = train_estimate_figures(spec, g, mem)
    return train_estimate_json(spec, g, built.num_gpus, layout, mem, step, precision, where, figures=figures)
