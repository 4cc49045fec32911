"""`ccopt calibrate --from-log FILE [--from-plan FILE]`: the measured figures read from a
training log (optimizer.inputs.training_logs) and the run's configuration from the flags or an
exported plan's header, handed to calibrate_run exactly as if they had been typed
(--tokens-per-s or --step-time-s, --peak-memory-gib and --memory-kind)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# through the package: importing the module optimizer.api.calibrate_run by its own name would
# leave that module, not its function, as `optimizer.api.calibrate_run` (the lazy exports)
from optimizer.api import calibrate_run
from optimizer.api.plan_row import read_plan_file
from optimizer.calibrate.run import MAX_PEAK_MEMORY_GIB, MAX_STEP_S, MAX_TOKENS_PER_S
from optimizer.configuration.build import Built, build_configuration, instance_offering
from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import MEMORY_SLACK
from optimizer.inputs.request import request_from_options
from optimizer.inputs.training_logs import WARMUP_STEPS, LogFigures, read_training_log
from optimizer.inputs.training_logs.plan_header import read_plan_header
from optimizer.inputs.training_logs.records import FIGURE_NAMES
from optimizer.report.contract.calibration import CalibrateOutput
from optimizer.report.contract.common import emit
from optimizer.report.export.common import plan_options

__all__ = ["calibrate_from_log", "plan_file_options", "log_measurement", "LogMeasurement"]

#: the options that say where the run ran: a flag given for one of them replaces them all
_WHERE = ("instance", "gpu", "gpus_per_instance", "inter_node_gbps")
#: GUESS: a log's memory % (torchtitan) may imply a card up to 10% off the --gpu's memory (the
#: driver's reserve, GB vs GiB) before the log is taken for another GPU's
_CARD_SLACK = 0.10
#: what to do when a log's figures describe another card than the run's GPU
_OTHER_CARD = "give the --gpu or --instance the log ran on"


@dataclass(frozen=True)
class LogMeasurement:
    """What calibrate is given from a log: one speed figure and how it was derived."""

    tokens_per_s: float | None
    step_time_s: float | None
    conversion: str


def plan_file_options(path: str | Path) -> dict[str, Any]:
    """The options of an exported plan's header, or of a saved `ccopt plan --json` (its plan row).

    Raises:
        ConfigError: no header, an infeasible saved plan, or a header that is not ours.
    """
    header = read_plan_header(path)
    if header is not None:
        return header
    doc = read_plan_file(path)
    if not isinstance(doc.get("plan"), dict) or "layout" not in doc["plan"]:
        raise ConfigError(f"--from-plan: {path}: the plan has no training configuration (infeasible?)")
    return plan_options(doc["plan"], doc["job"])


def _merged(options: Mapping[str, Any], from_plan: str | Path | None) -> tuple[dict[str, Any], list[str]]:
    """The flags over the plan's options: (values, the options taken from the plan)."""
    values = dict(options)
    if from_plan is None:
        return values, []
    plan = plan_file_options(from_plan)
    if any(values.get(k) is not None for k in _WHERE):
        plan = {k: v for k, v in plan.items() if k not in _WHERE}
    taken = [k for k, v in plan.items() if values.get(k) is None and v is not None]
    values.update({k: plan[k] for k in taken})
    return values, taken


def log_measurement(fig: LogFigures, built: Built) -> LogMeasurement:
    """The speed figure calibrate takes, from the figures the log prints, in order of
    directness: a step time, tokens/s of the whole run, tokens/s per GPU × GPUs, samples/s ×
    sequence length, a Lightning batch time × gradient accumulation.

    Raises:
        ConfigError: the log prints no speed figure.
    """
    n = f"median of {fig.steps_used} steps"
    if fig.step_time_s is not None:
        return LogMeasurement(None, fig.step_time_s, f"step time {fig.step_time_s:.4g} s ({n})")
    if fig.tokens_per_s is not None:
        return LogMeasurement(fig.tokens_per_s, None, f"{_rate(fig.tokens_per_s)} tokens/s of the run ({n})")
    if fig.tokens_per_s_per_gpu is not None:
        total = fig.tokens_per_s_per_gpu * built.num_gpus
        words = f"{_rate(fig.tokens_per_s_per_gpu)} tokens/s per GPU ({n}) × {built.num_gpus} GPUs"
        return LogMeasurement(total, None, f"{words} = {_rate(total)} tokens/s")
    if fig.samples_per_s is not None:
        total = fig.samples_per_s * built.seq_len
        words = f"{fig.samples_per_s:.4g} samples/s ({n}) × {built.seq_len} tokens"
        return LogMeasurement(total, None, f"{words} = {_rate(total)} tokens/s")
    if fig.batch_time_s is not None and built.layout is not None:
        accum = built.layout.grad_accum
        step = fig.batch_time_s * accum
        words = f"{fig.batch_time_s:.4g} s per batch ({n}) × {accum} accumulated batches per step"
        return LogMeasurement(None, step, f"{words} = {step:.4g} s")
    raise ConfigError(f"--from-log: {fig.file}: prints no step time or throughput to calibrate with")


def _rate(tokens_per_s: float) -> str:
    """A throughput in words: whole tokens with thousands commas, 3 digits below 100 tokens/s."""
    return f"{tokens_per_s:,.0f}" if tokens_per_s >= 100 else f"{tokens_per_s:.3g}"


def _check_card(fig: LogFigures, built: Built, card_gib: float | None) -> None:
    """A log whose memory % implies another card than --gpu's describes another run."""
    if card_gib is None:
        return
    if abs(card_gib / built.gpu.memory_gib - 1) > _CARD_SLACK:
        raise ConfigError(
            f"--from-log: {fig.file} line {fig.memory_line}: inconsistent numbers: the memory % "
            f"implies a {card_gib:.1f} GiB card, the run's GPU {built.gpu.gpu_id} has "
            f"{built.gpu.memory_gib:g} GiB; {_OTHER_CARD}"
        )


def _check_ranges(fig: LogFigures, speed: LogMeasurement, built: Built) -> None:
    """The log's figures within the ranges calibrate takes (calibrate.run), refused here naming
    the log's lines: nothing was typed, so calibrate's own refusal would blame a flag."""
    lines = (
        f"line {fig.first_line}"
        if fig.first_line == fig.last_line
        else f"lines {fig.first_line}-{fig.last_line}"
    )
    where = f"--from-log: {fig.file} {lines}"
    if speed.tokens_per_s is not None and not speed.tokens_per_s <= MAX_TOKENS_PER_S:
        raise ConfigError(f"{where}: {speed.conversion}; allowed: at most {MAX_TOKENS_PER_S:g} tokens/s")
    if built.layout is not None:  # else calibrate refuses the mode
        tokens_per_step = built.layout.global_batch * built.seq_len
        step_s = speed.step_time_s or tokens_per_step / float(speed.tokens_per_s or 1)
        if not step_s <= MAX_STEP_S:
            raise ConfigError(
                f"{where}: {speed.conversion} means {step_s:.3g} s per step of {tokens_per_step} tokens; "
                f"allowed: a step of at most {MAX_STEP_S:g} s (check the log's units and the run described)"
            )
    most_gib = min(MAX_PEAK_MEMORY_GIB, built.gpu.memory_gib * MEMORY_SLACK)
    if fig.peak_memory_gib is not None and fig.peak_memory_gib > most_gib:
        raise ConfigError(
            f"--from-log: {fig.file} line {fig.memory_line}: peak memory {fig.peak_memory_gib:g} GiB per GPU "
            f"({fig.memory_kind}) is more than a {built.gpu.gpu_id} has ({built.gpu.memory_gib:g} GiB); "
            f"allowed: ≤ {most_gib:g} GiB; {_OTHER_CARD}"
        )


def calibrate_from_log(
    options: Mapping[str, Any],
    *,
    from_log: str | Path,
    from_plan: str | Path | None = None,
    warmup_steps: int = WARMUP_STEPS,
    memory_metric: str | None = None,
    force: bool = False,
    prices: str | Path | None = None,
    offline: bool | None = None,
) -> dict[str, Any]:
    """`ccopt calibrate --from-log`: read the log, describe the run (flags over --from-plan),
    and calibrate as if its figures had been typed. Returns the `ccopt calibrate --json`
    contract with a `from_log` block saying what was read and how it was converted.

    Raises:
        ConfigError: an unreadable or ambiguous log (names the file and line), a run the flags
            and plan do not describe, or what calibrate itself refuses.
    """
    values, taken = _merged(options, from_plan)
    fig = read_training_log(from_log, warmup_steps)
    if values.get("model") is None or (values.get("gpu") is None and values.get("instance") is None):
        raise ConfigError(
            "--from-log: give --model and --gpu or --instance (or --from-plan an exported plan)"
        )
    where = dict(values)
    if where.get("gpu") is None:
        where["gpu"] = instance_offering(where["instance"], prices, offline).gpu_id
    built = build_configuration(request_from_options(where), prices, offline)
    _check_card(fig, built, fig.card_gib)
    speed = log_measurement(fig, built)
    _check_ranges(fig, speed, built)
    if memory_metric is not None and fig.memory_kind is not None and memory_metric != fig.memory_kind:
        raise ConfigError(
            f"--memory-kind: {memory_metric!r}, but {fig.file} line {fig.memory_line} prints the "
            f"{fig.memory_kind} peak; leave --memory-kind out"
        )
    out = calibrate_run(
        values,
        tokens_per_s=speed.tokens_per_s,
        step_time_s=speed.step_time_s,
        peak_memory_gib=fig.peak_memory_gib,
        memory_metric=fig.memory_kind if fig.peak_memory_gib is not None else memory_metric,
        force=force,
        prices=prices,
        offline=offline,
    )
    return emit(CalibrateOutput, {**out, "from_log": _block(fig, speed, taken)})


def _block(fig: LogFigures, speed: LogMeasurement, taken: list[str]) -> dict[str, Any]:
    """The `from_log` block of the output."""
    measured = {k: v for k in FIGURE_NAMES if (v := getattr(fig, k)) is not None}
    used = {k: v for k, v in (("tokens_per_s", speed.tokens_per_s), ("step_time_s", speed.step_time_s)) if v}
    if fig.peak_memory_gib is not None:
        used["peak_memory_gib"] = fig.peak_memory_gib
    return {
        "file": fig.file,
        "format": fig.fmt,
        "steps_logged": fig.steps_logged,
        "steps_used": fig.steps_used,
        "warmup_steps": fig.warmup_steps,
        "lines": [fig.first_line, fig.last_line],
        "measured": measured,
        "used": used,
        "conversion": speed.conversion,
        "memory_kind": fig.memory_kind,
        "memory_line": fig.memory_line,
        **({"from_plan": taken} if taken else {}),
        "notes": list(fig.notes),
    }
