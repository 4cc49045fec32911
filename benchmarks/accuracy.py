"""Accuracy report: predictions of the performance model against published measurements.

Run: python benchmarks/accuracy.py [--markdown]
Cases and their primary sources live in benchmarks/published_cases.py. Defaults are never
tuned per case: one efficiency per GPU type and precision (optimizer/model/efficiency.py).
Approximations made here, per case kind, are printed with the table:
- context parallelism (cp) is modelled as extra data parallelism over the same tokens;
- interleaved pipeline schedules (virtual_pp) are not modelled (bubble over-estimated);
- inter-node bandwidth for multi-node runs: 1600 Gbit/s per A100 node (8×200 HDR IB),
  3200 Gbit/s per H100 node (8×400 NDR IB) — the reference clusters' fabrics.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from published_cases import MEMORY_CASES, SERVING_CASES, TRAINING_CASES  # noqa: E402

from optimizer.inputs.gpus import get_gpu  # noqa: E402
from optimizer.model.flops import model_flops_per_token  # noqa: E402
from optimizer.model.memory import GIB, training_memory  # noqa: E402
from optimizer.model.presets import PRESETS  # noqa: E402
from optimizer.model.serving import serving_perf  # noqa: E402
from optimizer.model.setup import Layout, ServeSetup, TrainingSetup  # noqa: E402
from optimizer.model.spec import LINEAR_MODULES, ModelSpec  # noqa: E402
from optimizer.model.step_time import Cluster, training_step_time  # noqa: E402

NODE_GBPS = {"A100-80GB": 1600.0, "A100-40GB": 1600.0, "H100-80GB": 3200.0}


def spec_of(model: Any) -> ModelSpec:
    if isinstance(model, str):
        return PRESETS[model]
    kind = model.get("ffn_kind", "swiglu")
    plain = kind in ("gelu", "plain")
    return ModelSpec(name="case", layers=model["layers"], hidden=model["hidden"],
                     heads=model["heads"], kv_heads=model.get("kv_heads"), ffn=model["ffn"],
                     vocab=model["vocab"], ffn_kind="plain" if plain else "gated",
                     norm="layernorm" if plain else "rmsnorm")


def targets_of(case: dict[str, Any]) -> tuple[str, ...]:
    raw = case.get("lora_targets") or "q,v"
    names: list[str] = []
    for t in str(raw).split(","):
        t = t.strip()
        names += ["gate", "up", "down"] if t == "mlp" else [t]
    return tuple(n for n in names if n in LINEAR_MODULES)


def setup_layout(case: dict[str, Any]) -> tuple[TrainingSetup, Layout]:
    cp = case.get("cp") or 1
    dp = case["dp"] * cp  # context parallelism modelled as data parallelism (see docstring)
    mb = case["micro_batch"]
    ga = max(1, case["global_batch"] // (dp * mb))
    setup = TrainingSetup(seq_len=case["seq_len"], precision=case["precision"],
                          optimizer=case.get("optimizer") or "adamw",
                          method=case.get("method") or "full",
                          lora_rank=case.get("lora_rank") or 16, lora_targets=targets_of(case),
                          attention=case.get("attention", "flash"),
                          dropout=bool(case.get("dropout", False)))
    layout = Layout(dp=dp, tp=case["tp"], pp=case["pp"], zero_stage=case["zero_stage"],
                    checkpointing=case["checkpointing"], micro_batch=mb, grad_accum=ga)
    return setup, layout


def to_gib(value: float, unit: str) -> float:
    return {"GiB": value, "GB": value * 1e9 / GIB, "MiB": value / 1024}[unit]


def memory_rows() -> list[dict[str, Any]]:
    rows = []
    for case in MEMORY_CASES:
        spec = spec_of(case["model"])
        setup, layout = setup_layout(case)
        memory = training_memory(spec, setup, layout)
        # torch.cuda.max_memory_allocated excludes the CUDA context and the allocator's cache,
        # i.e. our overhead term; reserved / nvidia-smi figures include it
        allocated = "allocated" in str(case.get("what", ""))
        predicted = memory.total - memory.overhead if allocated else memory.total
        measured = to_gib(case["measured"], case["unit"])
        rows.append({"id": case["id"], "kind": "memory",
                     "unit": "GiB allocated" if allocated else "GiB", "measured": measured,
                     "predicted": predicted, "confidence": case.get("confidence", "")})
    return rows


def cluster_of(case: dict[str, Any]) -> Cluster:
    gpu = get_gpu(case["gpu"])
    nodes = case.get("nodes") or 1
    return Cluster(gpu, case["gpus"] // nodes, nodes, NODE_GBPS.get(gpu.gpu_id, 400.0))


def training_rows() -> list[dict[str, Any]]:
    rows = []
    for case in TRAINING_CASES:
        spec = spec_of(case["model"])
        setup, layout = setup_layout(case)
        step = training_step_time(spec, setup, layout, cluster_of(case))
        unit, measured = case["unit"], float(case["measured"])
        if unit == "tokens/s/gpu":
            predicted = step.tokens_per_s_per_gpu
        elif unit == "tflops/gpu":
            predicted = model_flops_per_token(spec, setup) * step.tokens_per_s_per_gpu / 1e12
        elif unit == "gpu_hours_total":
            predicted = case["tokens"] / step.tokens_per_s * case["gpus"] / 3600
        else:
            raise ValueError(f"unknown unit {unit}")
        rows.append({"id": case["id"], "kind": "training", "unit": unit, "measured": measured,
                     "predicted": predicted, "confidence": case.get("confidence", "")})
    return rows


def serving_rows() -> list[dict[str, Any]]:
    rows = []
    for case in SERVING_CASES:
        spec = spec_of(case["model"])
        gpu = get_gpu(case["gpu"])
        weights = {16: "fp16", 8: "fp8", 4: "int4"}[case.get("weight_bits") or 16]
        kv = "fp8" if case.get("kv_bits") == 8 else "fp16"
        batch = case.get("batch") or case.get("concurrency") or 1
        p, o = case["prompt_tokens"], case["output_tokens"]
        serve = ServeSetup(weight_precision=weights, kv_precision=kv, batch=batch, context=p + o)
        perf = serving_perf(spec, serve, gpu, case["tp"], p, o)
        unit = case["unit"]
        if unit == "output tokens/s":
            predicted = perf.output_tokens_per_s
        elif unit == "output tokens/s per GPU":
            predicted = perf.output_tokens_per_s / case["gpus"]
        elif unit == "ttft ms":
            predicted = perf.prefill_s * 1e3
        else:
            raise ValueError(f"unknown unit {unit}")
        rows.append({"id": case["id"], "kind": "serving", "unit": unit,
                     "measured": float(case["measured"]), "predicted": predicted,
                     "confidence": case.get("confidence", "")})
    return rows


def summary(rows: list[dict[str, Any]], band: float) -> dict[str, float]:
    errors = [abs(r["predicted"] / r["measured"] - 1) for r in rows]
    return {"cases": len(rows), "median_abs_error": statistics.median(errors),
            "within_band": sum(e <= band for e in errors) / len(errors), "band": band}


def main(markdown: bool = False) -> None:
    start = time.perf_counter()
    sections = [("Memory (peak per GPU)", memory_rows(), 0.15),
                ("Training throughput", training_rows(), 0.15),
                ("Serving throughput / latency", serving_rows(), 0.20)]
    for title, rows, band in sections:
        print(f"\n### {title}\n")
        print("| case | unit | measured | predicted | error | confidence |")
        print("|---|---|---:|---:|---:|---|")
        for r in rows:
            err = r["predicted"] / r["measured"] - 1
            print(f"| {r['id']} | {r['unit']} | {r['measured']:,.1f} | {r['predicted']:,.1f} | "
                  f"{err:+.0%} | {r['confidence']} |")
        s = summary(rows, band)
        print(f"\n{title}: {s['cases']} cases, median |error| {s['median_abs_error']:.1%}, "
              f"{s['within_band']:.0%} within ±{band:.0%}")
        for label, levels in (("high/medium-confidence", ("high", "medium")),
                              ("high-confidence", ("high",))):
            subset = [r for r in rows if r["confidence"] in levels]
            if subset and len(subset) != len(rows):
                h = summary(subset, band)
                print(f"  ({label} cases only: {h['cases']}, median {h['median_abs_error']:.1%}, "
                      f"{h['within_band']:.0%} within ±{band:.0%})")
    print(f"\nran in {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main("--markdown" in sys.argv)
