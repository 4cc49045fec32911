"""`ccopt calibrate`: fit a GPU type's compute efficiency to measured runs (or store a
per-sample model's run); `--list` / `--remove` manage the stored runs. Its configuration
options are the request's (cli/request_options.py), the same as `ccopt estimate`'s, so every
configuration estimate can express can be calibrated; the measurement (--tokens-per-s,
--step-time-s, --samples-per-s, --peak-memory-gib, --memory-kind, --from, or a training log:
--from-log, --from-plan, --warmup-steps), --force, --list and --remove are calibrate's own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer import api
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    console,
    offline_choice,
    print_json,
    user_errors,
)
from optimizer.cli.request_options import SERVE_ONLY, with_request_options
from optimizer.errors import ConfigError

__all__ = ["register", "CALIBRATE_ONLY"]

Opt = typer.Option

#: calibrate's own options (the measurement); the configuration options are estimate's too
CALIBRATE_ONLY = (
    "tokens_per_s",
    "step_time_s",
    "samples_per_s",
    "peak_memory_gib",
    "memory_metric",
    "from_file",
    "from_log",
    "plan_file",  # --from-plan: named apart from estimate's own --from-plan (a saved plan JSON)
    "warmup_steps",
    "force",
    "list_runs",
    "remove",
)


TokensPerSOpt = Annotated[float | None, Opt(help="Measured tokens/s of the whole run (calibrate only)")]
StepTimeSOpt = Annotated[float | None, Opt(help="Measured seconds per optimizer step (calibrate only)")]
SamplesPerSOpt = Annotated[
    float | None, Opt(help="Per-sample models: measured samples/s of the whole run (calibrate only)")
]
PeakMemoryGibOpt = Annotated[
    float | None,
    Opt(
        help="Measured peak memory per GPU, GiB: calibrates the activation memory of the "
        "model × stack (transformers; alone or with a throughput) (calibrate only)"
    ),
]
MemoryKindOpt = Annotated[
    str | None,
    Opt(
        "--memory-kind",
        "--memory-metric",
        help="What --peak-memory-gib measures: allocated (torch.cuda.max_memory_allocated) | "
        "reserved (max_memory_reserved) | nvidia-smi (= device). Default nvidia-smi: the "
        "figure read without instrumenting the script and the one compared with the card; "
        "a `ccopt measure` file says its own (calibrate only)",
    ),
]
FromFileOpt = Annotated[
    Path | None, Opt("--from", help="A calibration point written by `ccopt measure` (calibrate only)")
]
FromLogOpt = Annotated[
    Path | None,
    Opt(
        "--from-log",
        help="A training log (torchtitan, Megatron-LM, NeMo, DeepSpeed, Hugging Face Trainer, PyTorch "
        "Lightning, Composer/llm-foundry): its step time or tokens/s (median after the "
        "warm-up) and peak memory are calibrated as if typed (calibrate only)",
    ),
]
FromPlanOpt = Annotated[
    Path | None,
    Opt(
        "--from-plan",
        help="With --from-log: the run's configuration from a file `ccopt plan --export` wrote "
        "(its ccopt-plan header) or a saved `ccopt plan --json`; flags given win (calibrate only)",
    ),
]
WarmupStepsOpt = Annotated[
    int | None,
    Opt(
        "--warmup-steps",
        min=0,
        help="With --from-log: skip the steps numbered up to this (default 3) (calibrate only)",
    ),
]
StoreAnywayOpt = Annotated[
    bool,
    Opt(
        "--force",
        help="Store a run the plausibility checks refuse (far faster or slower than predicted, "
        "above 90% of peak, a peak implying activations outside 0.2-5× the model's); never one "
        "beyond 100%, above the card's memory or below the model states (calibrate only)",
    ),
]
ListRunsOpt = Annotated[
    bool, Opt("--list", help="List the stored runs (id, GPU, precision, stack, ...) (calibrate only)")
]
RemoveOpt = Annotated[
    str | None, Opt("--remove", help="Remove stored runs: a run id or GPU[:precision] (calibrate only)")
]


@with_request_options(exclude=SERVE_ONLY)
def calibrate(
    config: dict[str, Any] | None = None,
    tokens_per_s: TokensPerSOpt = None,
    step_time_s: StepTimeSOpt = None,
    samples_per_s: SamplesPerSOpt = None,
    peak_memory_gib: PeakMemoryGibOpt = None,
    memory_metric: MemoryKindOpt = None,
    from_file: FromFileOpt = None,
    from_log: FromLogOpt = None,
    plan_file: FromPlanOpt = None,
    warmup_steps: WarmupStepsOpt = None,
    force: StoreAnywayOpt = False,
    list_runs: ListRunsOpt = False,
    remove: RemoveOpt = None,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Fit the compute efficiency of a GPU type to one measured run and store it for later
    estimates and plans (file: $CCOPT_CALIBRATION or ~/.config/ccopt/calibration.json).

    The run is described with estimate's configuration options (the serving ones aside: a
    calibration is of a training run); calibrate only: --tokens-per-s, --step-time-s,
    --samples-per-s, --peak-memory-gib, --memory-kind, --from, --from-log, --from-plan,
    --warmup-steps, --force, --list, --remove.

    --from-log FILE reads the measurement from a training log (the format is detected; the
    first --warmup-steps steps are skipped, the median of the rest is used); the run itself is
    described by the flags or by --from-plan (an exported plan's header).

    A measured peak memory (--peak-memory-gib, --memory-kind) calibrates the activation memory
    of the model × stack: later estimates and plans of it, every layout, use the factor.

    Several runs of one GPU type × precision × stack fit its size dependence too:
    log(efficiency) = a + b·log(size factor), least squares over the runs."""
    if list_runs or remove is not None:
        _manage(config or {}, list_runs, remove, json_out)
        return
    if from_log is not None or plan_file is not None or warmup_steps is not None:
        typed = (tokens_per_s, step_time_s, samples_per_s, peak_memory_gib, from_file)
        log: dict[str, Any] = {"from_log": from_log, "from_plan": plan_file, "warmup_steps": warmup_steps}
        with user_errors():
            _check_log_flags(log, typed)
            extra: dict[str, Any] = {"memory_metric": memory_metric, "force": force, "prices": prices}
            out = api.calibrate_from_log(
                config or {},
                **{k: v for k, v in log.items() if v is not None},
                **extra,
                offline=offline or None,
            )
        _print(out, json_out)
        return
    with user_errors():
        out = api.calibrate_run(
            config or {},
            tokens_per_s=tokens_per_s,
            step_time_s=step_time_s,
            samples_per_s=samples_per_s,
            peak_memory_gib=peak_memory_gib,
            memory_metric=memory_metric,
            from_file=from_file,
            force=force,
            prices=prices,
            offline=offline_choice(offline),
        )
    _print(out, json_out)


def _print(out: dict[str, Any], json_out: bool) -> None:
    if json_out:
        print_json(out)
        return
    if out.get("from_log"):
        _render_log(out["from_log"])
    _render_stored_run(out)


#: calibrate's measurement flags, in the order `typed` gives their values
_TYPED_FLAGS = ("--tokens-per-s", "--step-time-s", "--samples-per-s", "--peak-memory-gib", "--from")


def _check_log_flags(log: dict[str, Any], typed: tuple[Any, ...]) -> None:
    """--from-plan and --warmup-steps go with --from-log; the log gives the measurement."""
    if log["from_log"] is None:
        flag = "--from-plan" if log["from_plan"] is not None else "--warmup-steps"
        raise ConfigError(f"{flag} goes with --from-log LOG (the training log it describes)")
    given = [flag for flag, value in zip(_TYPED_FLAGS, typed, strict=True) if value is not None]
    if given:
        raise ConfigError(f"{given[0]}: --from-log reads the measurement from the log; leave {given[0]} out")


def _render_log(b: dict[str, Any]) -> None:
    """What the log gave: format, steps used, the conversion, the peak."""
    words = (
        f"{b['file']} ({b['format']}): {b['steps_used']} of {b['steps_logged']} logged steps after "
        f"the warm-up (steps ≤ {b['warmup_steps']}), lines {b['lines'][0]}-{b['lines'][1]}: "
        f"{b['conversion']}"
    )
    if "peak_memory_gib" in b["used"]:
        words += f"; peak {b['used']['peak_memory_gib']:.2f} GiB {b['memory_kind']} (line {b['memory_line']})"
    if b.get("from_plan"):
        words += f"; from the plan: {', '.join(b['from_plan'])}"
    console().print(words)
    for note in b.get("notes") or []:
        console().print(f"note: {note}")


def _render_stored_run(out: dict[str, Any]) -> None:
    """What was stored, by its kind: a per-sample model's run, a peak, or a transformer run."""
    if out.get("kind") == "profile_point":
        _render_profile(out)
    elif out.get("kind") == "memory":
        _render_memory(out["memory"], out["file"])
    else:
        _render(out)
        if out.get("memory"):
            _render_memory(out["memory"], out["file"])


def _render_memory(m: dict[str, Any], file: str) -> None:
    """A stored measured peak: the activation factor, the scope, before and after."""
    source = {
        "default": " (the default: give --memory-kind allocated|reserved if the figure is PyTorch's)",
        "file": " (as the measure file says)",
    }.get(m["kind_source"], "")
    words = (
        f"{m['model']} {m['stack']}: measured peak {m['measured_gib']:.2f} GiB {m['kind']}{source}; "
        f"the model predicted {m['predicted_before_gib']:.2f} GiB "
        f"({m['states_gib']:.2f} GiB weights + gradients + optimizer states, exact; activations "
        f"{m['activations_before_gib']:.2f} GiB); this peak implies activations × "
        f"{m['activation_factor']:.3f}"
    )
    if m.get("previous_gib") is not None:
        words += f"; the peaks stored before predicted {m['previous_gib']:.2f} GiB"
    words += (
        f"; estimate now predicts {m['calibrated_gib']:.2f} GiB {m['kind']} for this run "
        f"(activations {m['activations_after_gib']:.2f} GiB); {m['scope']}"
    )
    if m.get("replaced"):
        words += f"; replaced the stored peak of the same request: {', '.join(m['replaced'])}"
    console().print(words)
    console().print(f"peak {m['id']} stored in {file}")


def _render(out: dict[str, Any]) -> None:
    """A stored transformer run: what moved, the scope, the runs of its group."""
    console().print(
        f"{out['gpu']} {out['precision']} {out['stack']}: efficiency {out['efficiency_before']:.3f} "
        f"-> {out['efficiency_after']:.3f} ({out['efficiency_change_pct']:+.0f}%) for this run; "
        f"{out['scope']}"
    )
    if out.get("previous_prediction_step_s") is not None:
        console().print(
            f"the runs stored before predicted {out['previous_prediction_step_s']:.4g} s/step for this "
            f"run; now {out['calibrated_prediction_step_s']:.4g} s (measured {out['measured_step_s']:.4g} s)"
        )
    if out.get("replaced"):
        console().print(
            f"replaced the stored run{'s' if len(out['replaced']) > 1 else ''} of the same "
            f"request: {', '.join(out['replaced'])}"
        )
    if len(out.get("runs") or []) > 1:
        table = Table("run", "model", "layout", "size factor", "measured s", "predicted s", "error")
        for r in out["runs"]:
            err = r.get("error_pct")
            table.add_row(
                r["id"],
                r.get("model") or "",
                r.get("layout") or "",
                f"{r['size_factor']:.3f}",
                _num(r.get("measured_step_s")),
                _num(r.get("predicted_step_s")),
                "" if err is None else f"{err:+.2f}%",
            )
        console().print(table)
    _render_stored(out)


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _render_stored(out: dict[str, Any]) -> None:
    console().print(
        f"run {out['id']}: base efficiency {out['efficiency']:.4f} (the GPU "
        f"type × precision, before the size factor; JSON base_efficiency) stored in "
        f"{out['file']}; estimate and plan now predict {out['calibrated_prediction_step_s']:.3f} "
        f"s/step for this run (measured {out['measured_step_s']:.3f} s, default model "
        f"{out['default_prediction_step_s']:.3f} s) at an effective efficiency of "
        f"{out['effective_efficiency']:.3f} (base × this layout's size factor; what estimate "
        f"reports as efficiency and effective_efficiency), {out['inter_node_gbps']:g} Gbit/s "
        "between instances"
    )


def _render_profile(out: dict[str, Any]) -> None:
    """A per-sample model's stored run: the prediction per GPU before and after."""
    samples_per_s, num_gpus = out["samples_per_s"], out["num_gpus"]
    words = f"{out['model']} on {out['gpu']} {out['precision']}: run stored in {out['file']}"
    before, after = out.get("before"), out.get("after")
    if before and after:  # the prediction is of one GPU: the measured run too, per GPU
        words += (
            f"; predicted {before['samples_per_s']:,.1f} samples/s per GPU before (band "
            f"{before['band'][0]:g}-{before['band'][1]:g}×), {after['samples_per_s']:,.1f} "
            f"now (band {after['band'][0]:g}-{after['band'][1]:g}×); measured "
            f"{samples_per_s / num_gpus:,.1f} per GPU ({samples_per_s:,.1f} over "
            f"{num_gpus} GPU{'s' if num_gpus != 1 else ''})"
        )
    console().print(words)


def _manage(config: dict[str, Any], list_runs: bool, remove: str | None, json_out: bool) -> None:
    """`--list` / `--remove`: the stored runs as a table (or JSON rows)."""
    with user_errors():
        given = sorted(k for k, v in config.items() if v is not None)
        if list_runs and remove is not None:
            raise ConfigError("--list and --remove: give one of them")
        if given:
            flag = "--list" if list_runs else "--remove"
            raise ConfigError(f"{flag}: takes no run options (given: {', '.join(given)})")
        rows = api.calibration_list() if list_runs else api.calibration_remove(str(remove))
    if json_out:
        print_json(rows)
        return
    if not rows:
        console().print("no stored runs (ccopt calibrate stores one)")
        return
    table = Table(
        "id",
        "kind",
        "GPU",
        "precision",
        "stack",
        "model",
        "layout",
        "measured",
        "fitted",
        "when",
        title="removed" if remove is not None else None,
    )
    for r in rows:
        memory = r.get("kind") == "memory"
        table.add_row(
            r["id"],
            r.get("kind") or "speed",
            r["gpu"],
            r["precision"],
            r["stack"],
            r.get("model") or "",
            r.get("layout") or "",
            f"{r['measured_peak_gib']:.2f} GiB {r['memory_kind']}"
            if memory
            else (f"{_num(r['measured_step_s'])} s/step" if r.get("measured_step_s") else ""),
            f"activations ×{r['activation_factor']:.3f}" if memory else f"efficiency {r['efficiency']:.4f}",
            r.get("when") or "(old entry)",
        )
    console().print(table)
    console().print(f"file: {rows[0]['file']}")


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
