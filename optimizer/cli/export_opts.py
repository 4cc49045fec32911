"""`--export FORMAT [-o DIR]` of plan, serve and batch: the files that launch the chosen plan."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from optimizer import api
from optimizer.cli.common import user_errors
from optimizer.errors import ConfigError

__all__ = ["ExportOpt", "ExportDirOpt", "TrainScriptOpt", "check_export", "exported"]

ExportOpt = Annotated[
    str | None,
    typer.Option(
        "--export",
        help="Write the plan for the tools that run it: skypilot, deepspeed, torchrun, accelerate, "
        "megatron, nemo, torchtitan, torchtune, llm-foundry, slurm, or all (every one that applies)",
        metavar="FORMAT",
        show_default=False,
    ),
]
ExportDirOpt = Annotated[
    Path | None,
    typer.Option(
        "-o",
        "--output-dir",
        help="With --export: write the files into this folder (created if missing) and print the "
        "answer as usual; without it the files go to stdout",
        metavar="DIR",
        show_default=False,
    ),
]

TrainScriptOpt = Annotated[
    str | None,
    typer.Option(
        "--train-script",
        help="With --export: your training script, which the launch lines start (generic, "
        "DeepSpeed, HF Trainer and FSDP stacks); without it the scripts stop and ask for "
        "TRAIN_SCRIPT",
        metavar="PATH",
        show_default=False,
    ),
]


def check_export(
    fmt: str | None, out_dir: Path | None, json_out: bool, train_script: str | None = None
) -> None:
    """Check the export options before any solving (raises ConfigError: exit 2)."""
    if fmt is None:
        if out_dir is not None:
            raise ConfigError("-o/--output-dir: only with --export FORMAT")
        if train_script is not None:
            raise ConfigError("--train-script: only with --export FORMAT")
        return
    if fmt not in api.EXPORT_FORMATS:
        api.export({"jobs": []}, fmt)  # the one message of an unknown format (names the allowed)
    if out_dir is None and json_out:
        raise ConfigError("--export without -o DIR prints the files to stdout; with --json give -o DIR")
    if out_dir is not None and not out_dir.is_dir():
        what = "exists and is not a folder" if out_dir.exists() else "no such folder"
        raise ConfigError(
            f"-o {out_dir}: {what}; allowed: an existing folder (ccopt creates no folder for an output)"
        )


def exported(
    data: dict[str, Any],
    fmt: str | None,
    out_dir: Path | None,
    *,
    force: bool = False,
    inputs: dict[str, Path | None] | None = None,
    train_script: str | None = None,
) -> bool:
    """Export `data` as `fmt`; True when the files were the output (stdout), so the caller
    prints nothing else. An infeasible answer exports nothing (the caller says why, exit 1)."""
    if fmt is None:
        return False
    if data.get("status") == "infeasible":
        sys.stderr.write("nothing exported: no feasible plan\n")
        return False
    with user_errors():
        result = api.export(data, fmt, train_script)
        if out_dir is not None:  # an existing folder (check_export): ccopt creates none
            # every file through the one output check: never over an input or a store, an
            # earlier export (its header line) replaced, anything else only with --force
            outs = [api.output_file(out_dir / f.name, "-o", force=force, inputs=inputs) for f in result.files]
            for out, f in zip(outs, result.files, strict=True):
                out.write(f.text)
    for reason in result.skipped:
        sys.stderr.write(f"not exported: {reason}\n")
    if out_dir is not None:
        for f in result.files:
            sys.stderr.write(f"exported {f.format} of job {f.job!r}: {out_dir / f.name}\n")
        return False
    for i, f in enumerate(result.files):
        if len(result.files) > 1:
            sys.stdout.write(f"{'' if i == 0 else chr(10)}==> {f.name} <==\n")
        sys.stdout.write(f.text)
    return True
