"""`ccopt calibrate` from its options: the request fields, the measurement given as flags or
read from a `ccopt measure` point file (`--from FILE`), handed to the fitting below the API
(optimizer.calibrate: run.py for transformers, profile.py for per-sample models)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from optimizer.api.calibrate import read_point_file
from optimizer.calibrate.profile import calibrate_profile_request, is_profile_name
from optimizer.calibrate.run import calibrate_request
from optimizer.configuration.build import instance_offering
from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import memory_kind
from optimizer.inputs.request import request_from_options

__all__ = ["calibrate_run", "point_request", "calibrate_request"]

#: the request fields a `ccopt measure` point fixes (what was run), over the flags given
_POINT_FIELDS = ("precision", "micro_batch", "seq_len", "global_batch")


@dataclass(frozen=True)
class _Measurement:
    """What was measured: a throughput (tokens/s of an LM, samples/s of a per-sample model)
    and/or a peak memory of a kind; `kind_source` says where the kind came from ("given":
    --memory-kind, "default": none given, "file": a `ccopt measure` point)."""

    tokens_per_s: float | None
    samples_per_s: float | None
    peak_memory_gib: float | None
    memory_metric: str | None
    kind_source: str


def point_request(point: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields of a calibration point written by `ccopt measure`: its model, GPU,
    precision, optimizer and batch (an LM step is one micro-batch of seq_len tokens)."""
    out: dict[str, Any] = {
        "model": point["model"],
        "gpu": point.get("gpu"),
        "precision": point["precision"],
        "micro_batch": int(point["micro_batch"]),
        "optimizer": point.get("optimizer"),
    }
    if point.get("model_kind") == "lm":
        out.update(seq_len=int(point["seq_len"]), global_batch=int(point["micro_batch"]))
    return out


def calibrate_run(
    options: Mapping[str, Any],
    *,
    tokens_per_s: float | None = None,
    step_time_s: float | None = None,
    samples_per_s: float | None = None,
    peak_memory_gib: float | None = None,
    memory_metric: str | None = None,
    from_file: str | Path | None = None,
    force: bool = False,
    prices: str | Path | None = None,
    offline: bool | None = None,
) -> dict[str, Any]:
    """`ccopt calibrate` from its options: the request fields by name (None: not given; old
    names warn once), the measurement, or a `ccopt measure` point file; `force` stores a run
    the plausibility checks refuse (calibration_file thresholds). Returns the
    `ccopt calibrate --json` contract.

    Raises:
        ConfigError: bad input (names the flag and the allowed values), or a fit outside
            the stored range.
    """
    values = dict(options)
    source = "default" if memory_metric is None else "given"
    given = _Measurement(tokens_per_s, samples_per_s, peak_memory_gib, memory_metric, source)
    m = _from_point_file(values, from_file, given) if from_file is not None else given
    if values.get("gpu") is None and values.get("instance"):
        values["gpu"] = instance_offering(values["instance"], prices, offline).gpu_id
    if values.get("model") is None or values.get("gpu") is None:
        raise ConfigError("give --model and --gpu or --instance (or --from a `ccopt measure` file)")
    req = request_from_options(values)
    kind = memory_kind(m.memory_metric)
    if m.samples_per_s is not None or is_profile_name(req.model):
        profile_kind = "device" if kind == "nvidia-smi" else kind  # MeasuredPoint's names
        return calibrate_profile_request(
            req, m.samples_per_s, m.peak_memory_gib, profile_kind, from_file, force, prices, offline
        )
    return calibrate_request(
        req,
        tokens_per_s=m.tokens_per_s,
        step_time_s=step_time_s,
        peak_memory_gib=m.peak_memory_gib,
        memory_kind=kind,
        memory_kind_source=m.kind_source,
        force=force,
        prices=prices,
        offline=offline,
    )


def _from_point_file(values: dict[str, Any], from_file: str | Path, given: _Measurement) -> _Measurement:
    """Read a `ccopt measure` point: its request fields go into `values` (what was run wins
    over the flags; the model and GPU fill in what the flags leave out), its numbers into
    the measurement."""
    point = read_point_file(from_file)
    if values.get("gpu") is None and values.get("instance") is None and point["device"] == "cpu":
        raise ConfigError(
            f"--gpu: {from_file} was measured on the CPU ({point.get('note')}); "
            "give --gpu to say which catalog GPU type the run stands for"
        )
    fields = point_request(point)
    values["model"] = values.get("model") or fields["model"]
    values["gpu"] = values.get("gpu") or fields["gpu"]
    values.update({k: fields[k] for k in _POINT_FIELDS if k in fields})  # what was run
    m = given
    if point.get("model_kind") == "lm":
        m = replace(m, tokens_per_s=float(point["tokens_per_s"]))
    else:
        m = replace(m, samples_per_s=float(point["samples_per_s"]))
        values["optimizer"] = fields["optimizer"] or values.get("optimizer")
    if point.get("peak_memory_gib") is not None:  # measured on a GPU: the file says its kind
        m = replace(
            m,
            peak_memory_gib=float(point["peak_memory_gib"]),
            memory_metric=point.get("memory_metric") or "allocated",
            kind_source="file",
        )
    return m
