"""Python API: everything the CLI does, as functions returning plain dicts / results.

    >>> from optimizer import api
    >>> api.estimate("llama-2-7b", "A100-80GB", gpus=8, zero=3, micro_batch=1, seq_len=4096)
    >>> result = api.plan("examples/llama7b_10days.toml")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.train import Job, coerce_document, job_from_dict, load_job
from optimizer.inputs.models import load_model
from optimizer.model.memory import serving_memory, training_memory
from optimizer.model.serving import serving_perf
from optimizer.model.setup import (
    ATTENTION_KERNELS,
    CHECKPOINTING,
    METHODS,
    OPTIMIZERS,
    TRAIN_PRECISIONS,
    WEIGHT_PRECISIONS,
    Layout,
    PerfAssumptions,
    ServeSetup,
    TrainingSetup,
)
from optimizer.model.spec import LINEAR_MODULES, ModelSpec
from optimizer.model.step_time import Cluster, training_step_time
from optimizer.pricing.catalog import load_catalog_rows
from optimizer.pricing.schema import OfferingRow
from optimizer.report.batch import batch_dict
from optimizer.report.estimate import serve_estimate_json, train_estimate_json
from optimizer.report.serve import serve_compare_json, serve_json
from optimizer.report.train import compare_json, plan_json
from optimizer.solve.batch.plan import plan_batch
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.plan import run_serve, run_serve_compare
from optimizer.solve.train.compare import compare_job
from optimizer.solve.train.plan import PlanResult, plan_job

__all__ = ["estimate", "plan", "plan_result", "plan_json", "compare", "serve", "serve_compare", "batch",
           "batch_json", "resolve_model"]


def resolve_model(model: str | ModelSpec) -> ModelSpec:
    """A ModelSpec, a preset name or a path to a Hugging Face config.json."""
    if isinstance(model, ModelSpec):
        return model
    return load_model(model)


def _choice(field: str, value: str, allowed: tuple[str, ...] | list[str]) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise ConfigError(f"{field}: {value!r} is not allowed; allowed: {', '.join(allowed)}")
    return v


def _targets(targets: tuple[str, ...] | None) -> tuple[str, ...]:
    if not targets:
        return LINEAR_MODULES
    bad = [t for t in targets if t not in LINEAR_MODULES]
    if bad:
        raise ConfigError(f"--lora-targets: {', '.join(bad)} not allowed; allowed: "
                          f"{', '.join(LINEAR_MODULES)}")
    return tuple(targets)


def _positive(field: str, value: int | float | None) -> None:
    if value is not None and value <= 0:
        raise ConfigError(f"{field}: must be > 0, got {value}")


def estimate(model: str | ModelSpec, gpu: str, *, gpus: int = 1, gpus_per_node: int | None = None,
             tp: int = 1, pp: int = 1, zero: int = 0, checkpointing: str = "none",
             micro_batch: int = 1, global_batch: int | None = None, seq_len: int = 2048,
             precision: str = "bf16", optimizer: str = "adamw", method: str = "full",
             lora_rank: int = 16, attention: str = "flash", inter_node_gbps: float = 100.0,
             mode: str = "train", batch: int = 1, context: int = 2048,
             quantization: str | None = None, prompt_tokens: int | None = None,
             output_tokens: int = 256, assumptions: PerfAssumptions | None = None,
             offload_optimizer: bool = False, offload_params: bool = False,
             lora_targets: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Memory and speed of one fixed configuration, as the `ccopt estimate --json` contract.

    Raises:
        ConfigError: a flag out of range (names the flag and the allowed values).
    """
    spec = resolve_model(model)
    g = get_gpu(gpu, "--gpu")
    for name, value in (("--gpus", gpus), ("--tp", tp), ("--pp", pp), ("--micro-batch", micro_batch),
                        ("--seq-len", seq_len), ("--batch", batch), ("--context", context),
                        ("--global-batch", global_batch), ("--lora-rank", lora_rank),
                        ("--gpus-per-node", gpus_per_node), ("--inter-node-gbps", inter_node_gbps),
                        ("--output-tokens", output_tokens), ("--prompt-tokens", prompt_tokens)):
        _positive(name, value)
    if zero not in (0, 1, 2, 3):
        raise ConfigError(f"--zero: {zero} is not allowed; allowed: 0, 1, 2, 3")
    mode = _choice("--mode", mode, ("train", "serve"))
    if spec.heads % tp or spec.n_kv_heads % tp:
        raise ConfigError(f"--tp: {tp} must divide the attention heads ({spec.heads}) and KV heads "
                          f"({spec.n_kv_heads}) of {spec.name}")
    a = assumptions or base_assumptions()
    gpn = gpus_per_node or min(gpus, 8)
    if gpus % gpn:
        raise ConfigError(f"--gpus-per-node: {gpn} must divide --gpus ({gpus})")
    if tp > gpn:
        raise ConfigError(f"--tp: {tp} exceeds GPUs per node ({gpn}); TP stays within a node")
    if mode == "serve":
        quant = _choice("--quantization", quantization or precision, list(WEIGHT_PRECISIONS))
        if gpus % tp:
            raise ConfigError(f"--gpus: {gpus} must be a multiple of --tp ({tp})")
        serve = ServeSetup(weight_precision=quant, batch=batch, context=context)
        mem = serving_memory(spec, serve, tp, a)
        perf = serving_perf(spec, serve, g, tp, prompt_tokens or max(1, context // 2),
                            output_tokens, a)
        return serve_estimate_json(spec, g, gpus, serve, tp, mem, perf)

    precision = _choice("--precision", precision, TRAIN_PRECISIONS)
    setup = TrainingSetup(
        seq_len=seq_len, precision=precision, optimizer=_choice("--optimizer", optimizer, OPTIMIZERS),
        method=_choice("--method", method, METHODS), lora_rank=lora_rank,
        attention=_choice("--attention", attention, ATTENTION_KERNELS),
        offload_optimizer=offload_optimizer, offload_params=offload_params,
        lora_targets=_targets(lora_targets))
    if offload_params and zero < 3:
        raise ConfigError("--offload-params: needs --zero 3 (parameters are offloaded per shard)")
    ckpt = _choice("--checkpointing", checkpointing, CHECKPOINTING)
    if gpus % (tp * pp):
        raise ConfigError(f"--gpus: {gpus} must be a multiple of tp × pp = {tp * pp}")
    if pp > spec.layers:
        raise ConfigError(f"--pp: {pp} exceeds the {spec.layers} layers of {spec.name}")
    dp = gpus // (tp * pp)
    if global_batch is None:
        grad_accum = 1
    elif global_batch % (dp * micro_batch):
        raise ConfigError(f"--global-batch: {global_batch} is not a multiple of dp × micro-batch "
                          f"= {dp} × {micro_batch}")
    else:
        grad_accum = global_batch // (dp * micro_batch)
    layout = Layout(dp=dp, tp=tp, pp=pp, zero_stage=zero, checkpointing=ckpt,
                    micro_batch=micro_batch, grad_accum=grad_accum)
    mem = training_memory(spec, setup, layout, a)
    step = None
    if g.supports(precision):
        step = training_step_time(spec, setup, layout, Cluster(g, gpn, gpus // gpn, inter_node_gbps), a)
    return train_estimate_json(spec, g, gpus, layout, mem, step, precision)


def _train_job(job: Any, prices: str | Path | None, offline: bool | None
               ) -> tuple[Job, Path | None, tuple[OfferingRow, ...] | None, dict[str, Any] | None]:
    """The job (TOML path, dict or Job), its base directory, the price rows it needs and their
    age (None without cloud)."""
    job, base_dir = coerce_document(job, Job, load_job, job_from_dict)
    if not job.constraints.cloud:
        return job, base_dir, None, None
    loaded = load_catalog_rows(prices, offline=offline)
    return job, base_dir, loaded.rows, loaded.age.as_dict()


def plan_result(job: Any, *, prices: str | Path | None = None, offline: bool | None = None,
                alternatives: int = 3, pareto: bool = False, time_limit_s: float = 10.0
                ) -> PlanResult:
    """Plan a job (a Job, a dict, or a TOML path). Returns the PlanResult (objects).

    `prices` is an offerings CSV to use instead of the user cache / bundled tables.
    """
    job, base_dir, rows, age = _train_job(job, prices, offline)
    result = plan_job(job, rows, base_dir, alternatives=alternatives, pareto=pareto,
                      config=SolverConfig(time_limit_s=time_limit_s))
    result.catalog = age
    return result


def plan(job: Any, **options: Any) -> dict[str, Any]:
    """Plan a job, as the `ccopt plan --json` contract (options as in `plan_result`)."""
    return plan_json(plan_result(job, **options))


def compare(job: Any, *, prices: str | Path | None = None, offline: bool | None = None) -> dict[str, Any]:
    """Best plan per GPU type, per provider, and cloud vs owned/bought with the break-even."""
    job, base_dir, rows, age = _train_job(job, prices, offline)
    out = compare_json(compare_job(job, rows, base_dir))
    return {**out, "catalog": age} if age is not None else out


def serve(job: Any, *, prices: str | Path | None = None, offline: bool | None = None,
          time_limit_s: float = 10.0) -> dict[str, Any]:
    """Cheapest replica mix for a serving job (TOML path, dict or ServeJob), as `ccopt serve
    --json` returns it."""
    return serve_json(run_serve(job, prices=prices, offline=offline, time_limit_s=time_limit_s))


def serve_compare(job: Any, *, prices: str | Path | None = None, offline: bool | None = None,
                  time_limit_s: float = 10.0) -> dict[str, Any]:
    """Best serving deployment per GPU type."""
    return serve_compare_json(run_serve_compare(job, prices=prices, offline=offline,
                                                time_limit_s=time_limit_s))


def batch(batch_file: Any, *, prices: str | Path | None = None, offline: bool | None = None,
          time_limit_s: float = 30.0, workers: int = 2, on_progress: Any = None) -> Any:
    """Plan many jobs at once (a batch TOML path, a dict or a BatchFile). Returns a BatchResult;
    batch_json(result) gives the `ccopt batch --json` contract."""
    return plan_batch(batch_file, prices=prices, offline=offline,
                      config=SolverConfig(time_limit_s=time_limit_s, workers=workers),
                      on_progress=on_progress)


def batch_json(result: Any) -> dict[str, Any]:
    """A BatchResult in the `ccopt batch --json` contract."""
    return batch_dict(result)
