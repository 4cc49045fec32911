"""The estimate of a built configuration: memory and speed of one fixed configuration under
given assumptions, as the `ccopt estimate --json` contract (what `estimate` reports and what
`calibrate` compares a measured run with)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from optimizer.configuration.build import Built
from optimizer.errors import ConfigError
from optimizer.model.bands import memory_band, step_band
from optimizer.model.estimate_figures import serve_estimate_figures, train_estimate_figures
from optimizer.model.memory import serving_memory, training_memory
from optimizer.model.profile import is_profile
from optimizer.model.serving import serving_max_batch, serving_perf
from optimizer.model.setup import PerfAssumptions, ServeSetup
from optimizer.model.step_time import compute_efficiency, microbatch_size_factor, training_step_time
from optimizer.report.estimate import serve_estimate_json, train_estimate_json

__all__ = ["evaluate"]


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
    where = {**where, "band": band, "memory_band": memory_band(a), "seq_len": built.seq_len}
    figures = train_estimate_figures(spec, g, mem)
    return train_estimate_json(spec, g, built.num_gpus, layout, mem, step, precision, where, figures=figures)
