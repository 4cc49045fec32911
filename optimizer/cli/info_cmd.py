"""`ccopt models` and `ccopt gpus`: what the tool knows."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from optimizer import api
from optimizer.cli.common import console, print_json, user_errors

__all__ = ["register"]

#: `--json` of the catalog listings (models, gpus, stacks)
CatalogJsonOpt = Annotated[bool, typer.Option("--json", help="JSON output")]


def models(json_out: CatalogJsonOpt = False) -> None:
    """Preset model shapes with their parameter counts."""

    if json_out:
        print_json(api.models_json())
        return
    rows, profiles = api.model_rows()

    table = Table(title="Model presets (or pass the path of a Hugging Face config.json)")
    for col in ("name", "params", "active", "layers", "hidden", "heads", "kv", "ffn", "vocab"):
        table.add_column(col, justify="left" if col == "name" else "right")
    for r in rows:
        table.add_row(
            r["name"],
            f"{r['params'] / 1e9:.2f}B",
            f"{r['active_params'] / 1e9:.2f}B",
            str(r["layers"]),
            str(r["hidden"]),
            str(r["heads"]),
            str(r["kv_heads"]),
            f"{r['ffn']} {r['ffn_kind']}",
            str(r["vocab"]),
        )
    console().print(table)
    ptable = Table(
        title="Per-sample presets (profiles: known by FLOPs, activations and measured "
        "runs per sample; \\[model.measured] adds your own)"
    )
    for col in ("name", "trained+frozen", "per", "fwd GFLOPs", "measured", "notes"):
        ptable.add_column(col, justify="right" if col in ("fwd GFLOPs", "measured") else "left")
    for r in profiles:
        gflops = r["forward_gflops_per_sample"]
        ptable.add_row(
            r["name"],
            f"{r['params'] / 1e9:.3f}B",
            r["sample_unit"],
            "unknown" if gflops is None else f"{gflops:.1f}",
            str(r["measured_points"]),
            r["notes"],
        )
    console().print(ptable)


def gpus(json_out: CatalogJsonOpt = False) -> None:
    """The GPU catalog: memory, bandwidth, dense TFLOPS, links."""

    with user_errors():
        if json_out:
            print_json(api.gpus_json())
            return
        specs = api.gpu_rows()

    table = Table(title="GPU catalog (dense peaks; pricing_data/gpus.csv + gpus_consumer.csv)")
    for col in (
        "id",
        "GiB",
        "GB/s",
        "bf16 TF",
        "fp16 TF",
        "fp8 TF",
        "link",
        "GB/s/dir",
        "TDP W",
        "aliases",
        "confidence",
    ):
        table.add_column(col, justify="left" if col in ("id", "link", "aliases", "confidence") else "right")
    fmt = lambda v: "–" if v is None else f"{v:g}"  # noqa: E731
    for s in specs:
        table.add_row(
            s["gpu_id"],
            fmt(s["memory_gib"]),
            fmt(s["mem_bandwidth_gb_s"]),
            fmt(s["bf16_tflops"]),
            fmt(s["fp16_tflops"]),
            fmt(s["fp8_tflops"]),
            s["intra_node_link"],
            fmt(s["intra_node_bw_gb_s"]),
            fmt(s["tdp_w"]),
            ", ".join(s["aliases"]),
            s["spec_confidence"],
        )
    console().print(table)


def stacks(json_out: CatalogJsonOpt = False) -> None:
    """Software-stack profiles (`--stack`, `stack = ...`): what each stack overlaps, shards and
    reserves, every value with its source or marked a guess."""
    if json_out:
        print_json(api.stacks_json())
        return
    rows = api.stack_rows()
    table = Table(title="Stack profiles (optimizer/model/data/stacks.toml; * = a guess)")
    for col in ("name", "kind", "description", "own values"):
        table.add_column(col)
    for r in rows:
        own = ", ".join(f"{k}={v['value']}{'*' if v['guess'] else ''}" for k, v in r["values"].items())
        table.add_row(r["name"], r["kind"], r["description"], own)
    console().print(table)


def register(app: typer.Typer) -> None:
    app.command("models")(models)
    app.command("gpus")(gpus)
    app.command("stacks")(stacks)
