"""The JSON contract of `ccopt estimate --json`: one fixed configuration's memory and speed."""

from __future__ import annotations

from typing import Any

from optimizer.model.bands import Band
from optimizer.model.estimate_figures import EstimateFigures
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.profile import is_profile
from optimizer.model.serving import ServePerf
from optimizer.model.setup import Layout, ServeSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import StepTime
from optimizer.report.band_basis import basis_dict
from optimizer.report.contract.common import emit, significant
from optimizer.report.contract.estimate import EstimateOutput

__all__ = ["train_estimate_json", "serve_estimate_json", "significant"]


def _status(fits: bool) -> str:
    return "fits" if fits else "does_not_fit"


def _head(spec: ModelSpec, gpu: GpuSpec, gpus: int, figures: EstimateFigures) -> dict[str, Any]:
    return {
        "model": {"name": spec.name, "params": figures.params, "active_params": figures.active_params},
        "gpu": gpu.gpu_id,
        "gpus": gpus,
        "gpu_memory_gib": gpu.memory_gib,
    }


def train_estimate_json(
    spec: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    layout: Layout,
    mem: MemoryBreakdown,
    step: StepTime | None,
    precision: str,
    where: dict[str, Any] | None = None,
    *,
    figures: EstimateFigures,
) -> dict[str, Any]:
    """Memory and step time of one training layout (step None: the GPU lacks the precision).

    `where`: the hardware context (gpus_per_instance and its old name gpus_per_node,
    inter_node_gbps, inter_node_assumed, inter_node_is_default, instance, provider,
    instance_type, stack, note, seq_len, base_efficiency) and `band`, the P10-P90 step times
    (optimizer.model.bands.Band)."""
    where = dict(where or {})
    band: Band | None = where.pop("band", None)
    memory: Band | None = where.pop("memory_band", None)
    if step is None:
        where.pop("base_efficiency", None)
    out = _head(spec, gpu, gpus, figures)
    out.update({k: v for k, v in where.items() if v is not None})
    fits = figures.fits
    out.update(
        mode="train",
        status=_status(fits),
        layout=layout.as_dict(),
        memory_gib=mem.as_dict(2),
        fits=fits,
        memory_calibrated=mem.calibrated,
        memory_activation_factor=None if mem.activation_factor is None else round(mem.activation_factor, 4),
    )
    if memory is not None:
        out.update(
            memory_device_gib_p10=round(mem.device * memory.p10, 2),
            memory_device_gib_p90=round(mem.device * memory.p90, 2),
        )
    if step is None:
        out.update(step=None, note=f"{gpu.gpu_id} has no {precision} tensor path")
        return emit(EstimateOutput, out)
    out.update(_step_fields(step, band, precision))
    if is_profile(spec):  # a sample is one "token" of seq_len 1
        out.update(
            sample_unit=spec.sample_unit, samples_per_s=round(step.tokens_per_s, 2), band_source="profile"
        )
    return emit(EstimateOutput, out)


def _step_fields(step: StepTime, band: Band | None, precision: str) -> dict[str, Any]:
    """A training estimate's step fields: the P10–P90 band (when known), a clipped MFU's
    note, the step and its rates."""
    out: dict[str, Any] = {}
    if band is not None:
        out.update(
            step_time_s_p10=round(step.time_s * band.p10, 4),
            step_time_s_p50=round(step.time_s * band.p50, 4),
            step_time_s_p90=round(step.time_s * band.p90, 4),
            interval_basis=basis_dict(band.cases, band.sources, band.basis),
        )
    if step.ceiling_note:
        out.update(mfu_unclipped=round(step.mfu_unclipped or 0.0, 4), mfu_ceiling_note=step.ceiling_note)
    out.update(
        step=step.as_dict(),
        step_time_s=round(step.time_s, 4),  # the plan's name for step.time_s (one vocabulary)
        step_parts_s={k: round(v, 4) for k, v in step.parts_s.items()},
        tokens_per_s=round(step.tokens_per_s, 1),
        tokens_per_s_per_gpu=round(step.tokens_per_s_per_gpu, 1),
        mfu=round(step.mfu, 4),
        hfu=round(step.hfu, 4),
        efficiency=round(step.efficiency, 4),
        effective_efficiency=round(step.efficiency, 4),
        calibrated=step.calibrated,
        precision=precision,
    )
    return out


def serve_estimate_json(
    spec: ModelSpec,
    gpu: GpuSpec,
    gpus: int,
    serve: ServeSetup,
    tp: int,
    mem: MemoryBreakdown,
    perf: ServePerf,
    where: dict[str, Any] | None = None,
    *,
    figures: EstimateFigures,
) -> dict[str, Any]:
    """Memory, latency and throughput of `gpus // tp` serving replicas of one setup (`figures`:
    the replicas and their totals, model/estimate_figures.py)."""
    replicas = figures.replicas
    out = _head(spec, gpu, gpus, figures)
    out.update(
        {
            k: v
            for k, v in (where or {}).items()
            if v is not None and k not in ("band", "seq_len", "base_efficiency")
        }
    )
    fits = figures.fits
    out.update(
        mode="serve",
        status=_status(fits),
        precision=serve.weight_precision,
        quantization=serve.weight_precision,
        kv_cache_precision=serve.kv_precision,
        layout={"tp": tp, "replicas": replicas, "batch": serve.batch, "context": serve.context},
        memory_gib=mem.as_dict(2),
        fits=fits,
        ttft_s=significant(perf.ttft_s),
        tpot_ms=significant(perf.tpot_s * 1e3),
        decode_step_ms=round(perf.decode_step_s * 1e3, 3),
        output_tokens_per_s=round(figures.output_tokens_per_s or 0.0, 1),
        requests_per_s=round(figures.requests_per_s or 0.0, 3),
        requests_per_s_per_replica=round(perf.requests_per_s, 4),
        bound=perf.bound,
    )
    return emit(EstimateOutput, out)
