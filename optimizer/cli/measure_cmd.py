"""`ccopt measure`: a few training steps on the local device, written as a calibration point."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from optimizer import api
from optimizer.api import check_number
from optimizer.cli.common import ForceOpt, JsonOpt, WarmupStepsOpt, console, print_json, user_errors
from optimizer.cli.progress import Progress
from optimizer.errors import ConfigError

__all__ = ["register"]


OutputOpt = Annotated[
    Path, typer.Option("--output", "-o", help="Where to write the calibration point (JSON)")
]
HfConfigOpt = Annotated[
    str | None, typer.Option(help="A Hugging Face causal-LM config.json (random weights, no download)")
]
ModuleOpt = Annotated[
    str | None,
    typer.Option(help="package.module:function returning a torch.nn.Module (or (module, make_batch))"),
]
NameOpt = Annotated[
    str | None, typer.Option(help="Model name to calibrate under (--module; default: the function's name)")
]
InputShapeOpt = Annotated[
    str | None, typer.Option(help="--module without make_batch: one sample's shape, e.g. 3,224,224")
]
MicroBatchOpt = Annotated[int, typer.Option(help="Samples per step")]
SeqLenOpt = Annotated[int, typer.Option(help="--hf-config: tokens per sample")]
StepsOpt = Annotated[int, typer.Option(help="Steps averaged")]
PrecisionOpt = Annotated[str, typer.Option(help="fp32 | bf16 | fp16 (autocast)")]
OptimizerOpt = Annotated[str, typer.Option(help="adamw | sgd")]
DeviceOpt = Annotated[str, typer.Option(help="auto | cpu | cuda")]


def measure(
    output: OutputOpt,
    hf_config: HfConfigOpt = None,
    module: ModuleOpt = None,
    name: NameOpt = None,
    input_shape: InputShapeOpt = None,
    micro_batch: MicroBatchOpt = 2,
    seq_len: SeqLenOpt = 128,
    steps: StepsOpt = 10,
    warmup_steps: WarmupStepsOpt = 3,
    precision: PrecisionOpt = "fp32",
    optimizer: OptimizerOpt = "adamw",
    device: DeviceOpt = "auto",
    json_out: JsonOpt = False,
    force: ForceOpt = False,
) -> None:
    """Train a few steps of a model on this machine (PyTorch, extra `[measure]`) and write the
    calibration point `ccopt calibrate --from FILE` reads: samples/s (warm-up excluded) and
    peak memory (CUDA: max_memory_allocated/reserved; CPU: said so, peak RSS growth)."""
    from optimizer.api.measure import measure as run  # lazy: the command alone imports torch
    from optimizer.api.measure import write_point

    with user_errors():
        out = api.output_file(output, "--output", force=force, inputs={"the --hf-config file": hf_config})
        check_number(micro_batch, "--micro-batch", gt=0, le=2**20)
        check_number(seq_len, "--seq-len", gt=0, le=2**22)
        check_number(steps, "--steps", gt=0, le=10**6)
        check_number(warmup_steps, "--warmup-steps", ge=0, le=10**6)
        shape = _input_shape(input_shape)
        with Progress("loading PyTorch and the model…") as progress:
            point = run(
                hf_config=hf_config,
                module=module,
                name=name,
                input_shape=shape,
                micro_batch=micro_batch,
                seq_len=seq_len,
                steps=steps,
                warmup_steps=warmup_steps,
                precision=precision,
                optimizer=optimizer,
                device=device,
                on_step=lambda done, total: progress.say(
                    f"training step {done} of {total} (warm-up {warmup_steps})"
                ),
            )
        path = write_point(point, out)
    if json_out:
        print_json(point)
    else:
        _render_point(point, path, steps, warmup_steps)


def _input_shape(text: str | None) -> tuple[int, ...] | None:
    """--input-shape as sizes ("3,224,224" -> (3, 224, 224)); not given: None.

    Raises:
        ConfigError: not comma-separated integers, or a size <= 0.
    """
    if not text:
        return None
    try:
        shape = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(
            f"--input-shape: {text!r} is not allowed; allowed: "
            "comma-separated positive integers, e.g. 3,224,224"
        ) from None
    if not shape or min(shape) <= 0:
        raise ConfigError(f"--input-shape: {text!r}: sizes must be > 0")
    return shape


def _render_point(point: dict[str, Any], path: Path, steps: int, warmup_steps: int) -> None:
    """The measured point in one line, with the command that feeds it back."""
    mem = (
        f"peak {point['peak_memory_gib']:.2f} GiB allocated"
        if point["peak_memory_gib"] is not None
        else point["note"]
    )
    console().print(
        f"{point['model']} on {point['device']}: {point['samples_per_s']:,.2f} "
        f"samples/s ({point['step_time_s']:.4f} s/step over {steps} steps after "
        f"{warmup_steps} warm-up); {mem}; written to {path} — feed it back with "
        f"`ccopt calibrate --from {path}" + (" --gpu GPU`" if point.get("gpu") is None else "`")
    )


def register(app: typer.Typer) -> None:
    app.command("measure")(measure)
