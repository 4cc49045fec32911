"""`ccopt calibrate`: fit a GPU type's compute efficiency to one measured run (or store a
per-sample model's run). Its configuration options are the request's (cli/request_options.py),
the same as `ccopt estimate`'s, so every configuration estimate can express can be calibrated;
the measurement (--tokens-per-s, --step-time-s, --samples-per-s, --peak-memory-gib,
--memory-metric, --from) is calibrate's own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from optimizer import api
from optimizer.cli.common import (
    JsonOpt,
    OfflineOpt,
    PricesOpt,
    console,
    print_json,
    user_errors,
)
from optimizer.cli.request_options import SERVE_ONLY, with_request_options

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
)


@with_request_options(exclude=SERVE_ONLY)
def calibrate(
    config: dict[str, Any] | None = None,
    tokens_per_s: Annotated[
        float | None, Opt(help="Measured tokens/s of the whole run (calibrate only)")
    ] = None,
    step_time_s: Annotated[
        float | None, Opt(help="Measured seconds per optimizer step (calibrate only)")
    ] = None,
    samples_per_s: Annotated[
        float | None, Opt(help="Per-sample models: measured samples/s of the whole run (calibrate only)")
    ] = None,
    peak_memory_gib: Annotated[
        float | None, Opt(help="Per-sample models: measured peak memory per GPU (calibrate only)")
    ] = None,
    memory_metric: Annotated[
        str, Opt(help="allocated | reserved | device (nvidia-smi) (calibrate only)")
    ] = "device",
    from_file: Annotated[
        Path | None,
        Opt("--from", help="A calibration point written by `ccopt measure` (calibrate only)"),
    ] = None,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Fit the compute efficiency of a GPU type to one measured run and store it for later
    estimates and plans (file: $CCOPT_CALIBRATION or ~/.config/ccopt/calibration.json).

    The run is described with estimate's configuration options (the serving ones aside: a
    calibration is of a training run); calibrate only: --tokens-per-s, --step-time-s,
    --samples-per-s, --peak-memory-gib, --memory-metric, --from."""
    with user_errors():
        out = api.calibrate_run(
            config or {},
            tokens_per_s=tokens_per_s,
            step_time_s=step_time_s,
            samples_per_s=samples_per_s,
            peak_memory_gib=peak_memory_gib,
            memory_metric=memory_metric,
            from_file=from_file,
            prices=prices,
            offline=True if offline else None,
        )
    if json_out:
        print_json(out)
    elif out.get("kind") == "profile_point":
        _render_profile(out)
    else:
        console().print(
            f"{out['gpu']} {out['precision']}: base efficiency {out['efficiency']:.4f} (the GPU "
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


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
