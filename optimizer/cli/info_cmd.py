"""`ccopt models` and `ccopt gpus`: what the tool knows."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich.table import Table

from optimizer.cli.common import console, print_json, user_errors
from optimizer.inputs.gpus import load_gpus
from optimizer.model.presets import PRESETS, PROFILE_PRESETS
from optimizer.model.stacks import get_stack, stack_names
from optimizer.report.contract.catalogs import GpusOutput, ModelsOutput, StacksOutput
from optimizer.report.contract.common import emit_list

__all__ = ["register"]


def models(json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False) -> None:
    """Preset model shapes with their parameter counts."""

    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "params": s.params(),
            "active_params": s.active_params(),
            "layers": s.layers,
            "hidden": s.hidden,
            "heads": s.heads,
            "kv_heads": s.n_kv_heads,
            "ffn": s.ffn,
            "ffn_kind": s.ffn_kind,
            "vocab": s.vocab,
            "moe_experts": s.moe_experts,
            "max_seq_len": s.max_seq_len,
            "sample_tokens": s.sample_tokens,
        }
        for s in PRESETS.values()
    ]
    profiles: list[dict[str, Any]] = [
        {
            "name": p.name,
            "kind": "profile",
            "params": p.params(),
            "active_params": p.params(),
            **dict.fromkeys(
                (
                    "layers",
                    "hidden",
                    "heads",
                    "kv_heads",
                    "ffn",
                    "ffn_kind",
                    "vocab",
                    "moe_experts",
                    "max_seq_len",
                )
            ),
            "sample_unit": p.sample_unit,
            "forward_gflops_per_sample": p.forward_gflops_per_sample,
            "measured_points": len(p.measured),
            "notes": p.notes,
        }
        for p in PROFILE_PRESETS.values()
    ]
    if json_out:
        print_json(emit_list(ModelsOutput, rows + profiles))
        return

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


def gpus(json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False) -> None:
    """The GPU catalog: memory, bandwidth, dense TFLOPS, links."""

    with user_errors():
        specs = load_gpus()
    if json_out:
        print_json(
            emit_list(
                GpusOutput,
                [dict(asdict(s), gpu=s.gpu_id, gpu_memory_gib=s.memory_gib) for s in specs.values()],
            )
        )
        return

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
    for s in specs.values():
        table.add_row(
            s.gpu_id,
            fmt(s.memory_gib),
            fmt(s.mem_bandwidth_gb_s),
            fmt(s.bf16_tflops),
            fmt(s.fp16_tflops),
            fmt(s.fp8_tflops),
            s.intra_node_link,
            fmt(s.intra_node_bw_gb_s),
            fmt(s.tdp_w),
            ", ".join(s.aliases),
            s.spec_confidence,
        )
    console().print(table)


def stacks(json_out: Annotated[bool, typer.Option("--json", help="JSON output")] = False) -> None:
    """Software-stack profiles (`--stack`, `stack = ...`): what each stack overlaps, shards and
    reserves, every value with its source or marked a guess."""
    rows = []
    for name in stack_names():
        prof = get_stack(name)
        rows.append(
            {
                "name": prof.name,
                "kind": prof.kind,
                "description": prof.description,
                "values": {
                    k: {
                        "value": list(v.value) if isinstance(v.value, tuple) else v.value,
                        "guess": v.guess,
                        "source": v.source,
                    }
                    for k, v in sorted(prof.provenance.items())
                },
            }
        )
    if json_out:
        print_json(emit_list(StacksOutput, rows))
        return
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
