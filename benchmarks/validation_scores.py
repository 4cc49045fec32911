"""Score the CURRENT (un-fitted) performance model against the validation set.

Run: python benchmarks/validation_scores.py [--markdown] [--csv out.csv]

Every row of benchmarks/validation/*.csv (schema: benchmarks/validation/SCHEMA.md) that can be
mapped onto one `optimizer.api.estimate` call is predicted in the row's own metric; rows that
cannot be mapped are skipped and counted per reason. No constant of the model is tuned here:
`estimate` runs with its default assumptions. The mapping conventions (printed with the tables):

- context parallelism (cp) is modelled as extra data parallelism over the same tokens
  (estimate has no cp), grad accumulation = global_batch / (num_gpus/(tp·pp) · micro_batch),
  rounded to the nearest integer >= 1 when that does not divide;
- interleaved pipeline schedules (vp > 1) are not modelled (the bubble is over-estimated);
- inter-node bandwidth: the row's inter_node_gbps when given, else 400 Gbit/s per A100 node,
  3200 Gbit/s per H100/H200/B200/B300 node, else estimate's default (100 Gbit/s);
- empty zero_stage → 0, empty activation_checkpointing → none, empty optimizer → adamw,
  empty lora_rank → 16, LoRA targets `mlp` → gate,up,down, `qkv` → q,k,v, `all` → every
  linear module; the LM head (`head`/`output`) is not a LoRA target of the model and dropped;
- non-preset models: shape columns, ffn_kind plain → LayerNorm (GPT/BERT-style), gated → RMSNorm;
- memory: `allocated`/`active` figures are compared with total − overhead (no CUDA context, no
  allocator cache), reserved / nvidia-smi / unstated figures with the total; GB → GiB ×1e9/2³⁰;
- tflops_per_gpu: "model" FLOPs → model FLOPs per token (6N + attention, no recompute) ×
  tokens/s/GPU; "hardware ... recompute" → FLOPs including the recompute; else skipped;
- mfu: model FLOPs per token × tokens/s/GPU / the dense bf16 peak when the row names that peak
  (312 / 989 / bf16), else estimate's mfu;
- samples_per_s (LM rows) = predicted tokens/s of the whole job / seq_len;
- serving: the KV-cache dtype is not an estimate input (fp16 KV cache everywhere); offline /
  all-requests-at-once rows without serve_batch use the largest batch that fits the model's
  memory at context = input + output (capped by the stated number of requests and 8192);
  single-stream decode rates are compared with 1000 / tpot_ms.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "validation"))
sys.path.insert(0, str(HERE.parent))

from load import Row, load_rows  # noqa: E402

from optimizer import api  # noqa: E402
from optimizer.errors import ConfigError  # noqa: E402
from optimizer.inputs.gpus import get_gpu  # noqa: E402
from optimizer.model.flops import model_flops_per_token, training_flops_per_token  # noqa: E402
from optimizer.model.presets import PRESETS  # noqa: E402
from optimizer.model.setup import TrainingSetup  # noqa: E402
from optimizer.model.spec import LINEAR_MODULES, ModelSpec  # noqa: E402

GIB = 2**30
BANDS = {"train_throughput": 0.15, "train_memory": 0.15, "serve_throughput": 0.20, "serve_latency": 0.20}
KINDS = tuple(BANDS)
#: per-node inter-node bandwidth (Gbit/s) when the row does not state it
NODE_GBPS_DEFAULT = {"A100": 400.0, "H100": 3200.0, "H200": 3200.0, "B200": 3200.0, "B300": 3200.0}
API_DEFAULT_GBPS = 100.0
MAX_FIT_BATCH_CAP = 8192


class Skip(Exception):
    """The row cannot be mapped onto an estimate call; the message is the reason."""


@dataclass
class Result:
    row: Row
    predicted: float | None = None
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    #: the measured value in the unit of `predicted` (GB rows are converted to GiB)
    measured: float | None = None

    def __post_init__(self) -> None:
        if self.measured is None:
            self.measured = self.row.value

    @property
    def scored(self) -> bool:
        return self.predicted is not None

    @property
    def error(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return self.predicted / self.measured - 1


# ---- cached estimate ----------------------------------------------------------------------


@cache
def _estimate(model: str | ModelSpec, gpu: str, items: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    return api.estimate(model, gpu, **dict(items))


def estimate(model: str | ModelSpec, gpu: str, **kwargs: Any) -> dict[str, Any]:
    """api.estimate, cached on its arguments; ConfigError → Skip."""
    try:
        return _estimate(model, gpu, tuple(sorted(kwargs.items())))
    except ConfigError as exc:
        raise Skip(f"ConfigError: {_config_reason(str(exc))}") from None


def _config_reason(message: str) -> str:
    """The ConfigError message without the case-specific numbers (for counting)."""
    flag = message.split(":", 1)[0]
    text = message.split(":", 1)[1] if ":" in message else message
    if "must divide the attention heads" in text:
        return f"{flag} does not divide the heads / KV heads"
    if "exceeds GPUs per node" in text:
        return f"{flag} exceeds GPUs per node"
    if "not a multiple" in text or "must be a multiple" in text:
        return f"{flag} not a multiple"
    return re.sub(r"\d+", "N", message)[:80]


# ---- mapping of a row ---------------------------------------------------------------------


def _gpu_id(row: Row) -> str:
    if not row.gpu:
        raise Skip("unknown GPU id (gpu empty)")
    try:
        return get_gpu(row.gpu).gpu_id
    except ConfigError:
        raise Skip(f"unknown GPU id ({row.gpu})") from None
    except Exception:  # noqa: BLE001 - catalogue lookups raise their own error type
        raise Skip(f"unknown GPU id ({row.gpu})") from None


def _spec(row: Row) -> str | ModelSpec:
    if row.model in PRESETS:
        return row.model
    if "encoder-decoder" in row.model.lower():
        raise Skip("encoder-decoder model (not modelled)")
    layers, hidden, heads, ffn, vocab = row.layers, row.hidden, row.heads, row.ffn, row.vocab
    shape = (layers, hidden, heads, ffn, vocab)
    if all(v is None for v in shape):
        if row.metric == "samples_per_s":
            raise Skip("samples_per_s of a non-LM model")
        raise Skip("model shape not given")
    if layers is None or hidden is None or heads is None or ffn is None or vocab is None:
        raise Skip("model shape incomplete (layers/hidden/heads/ffn/vocab)")
    plain = (row.ffn_kind or "gated") == "plain"
    try:
        return ModelSpec(
            name=row.model[:60],
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=row.kv_heads,
            ffn=ffn,
            vocab=vocab,
            ffn_kind="plain" if plain else "gated",
            norm="layernorm" if plain else "rmsnorm",
            moe_experts=row.moe_experts or 0,
            moe_active=row.moe_active or 0,
        )
    except ValueError as exc:
        raise Skip(f"model shape invalid ({str(exc).splitlines()[0][:60]})") from None


def _is_moe(row: Row, model: str | ModelSpec) -> bool:
    spec = PRESETS[model] if isinstance(model, str) else model
    return spec.is_moe or bool(row.moe_experts and row.moe_experts > 1)


def _node_gbps(row: Row, gpu_id: str) -> tuple[float, str]:
    if row.inter_node_gbps:
        return row.inter_node_gbps, "row"
    for prefix, gbps in NODE_GBPS_DEFAULT.items():
        if gpu_id.startswith(prefix):
            return gbps, "default"
    return API_DEFAULT_GBPS, "api-default"


def _targets(raw: str | None) -> tuple[str, ...] | None:
    if not raw:
        return None
    names: list[str] = []
    for t in raw.replace(";", ",").split(","):
        t = t.strip().lower()
        if t == "all":
            return LINEAR_MODULES
        names += {"mlp": ["gate", "up", "down"], "qkv": ["q", "k", "v"]}.get(t, [t])
    kept = tuple(dict.fromkeys(n for n in names if n in LINEAR_MODULES))
    return kept or None


def _lower(meaning: str | None) -> str:
    return (meaning or "").lower()


def train_prediction(row: Row, res: Result) -> float:
    gpu_id = _gpu_id(row)
    model = _spec(row)
    if _is_moe(row, model) and (row.ep or 1) > 1:
        raise Skip("MoE with expert parallelism (ep > 1)")
    tp, pp, mb, gpus = row.tp, row.pp, row.micro_batch, row.num_gpus
    missing = [n for n, v in (("tp", tp), ("pp", pp), ("micro_batch", mb)) if v is None]
    if missing or tp is None or pp is None or mb is None:
        raise Skip(f"missing {'/'.join(missing)}")
    if row.seq_len is None or gpus is None:
        raise Skip("missing seq_len/num_gpus")
    meaning = _lower(row.metric_meaning)
    metric = row.metric
    if metric == "peak_memory_gb" and "not a measured peak" in meaning:
        raise Skip("memory row is a fit boundary, not a measurement")
    if metric == "tflops_per_gpu" and not (
        "model" in meaning or ("hardware" in meaning and "recompute" in meaning)
    ):
        raise Skip("tflops_per_gpu: FLOP convention unclear")
    if metric not in (
        "tokens_per_s_per_gpu",
        "tflops_per_gpu",
        "mfu",
        "step_time_s",
        "samples_per_s",
        "peak_memory_gib",
        "peak_memory_gb",
    ):
        raise Skip(f"metric {metric} not comparable for training")

    if (row.cp or 1) > 1:
        res.notes.append(f"cp={row.cp} as data parallelism")
    if (row.vp or 1) > 1:
        res.notes.append(f"vp={row.vp} not modelled")
    dp_api = gpus // (tp * pp) if gpus % (tp * pp) == 0 else None
    global_batch = None
    if row.global_batch is not None and dp_api:
        ga_exact = row.global_batch / (dp_api * mb)
        ga = max(1, round(ga_exact))
        if not math.isclose(ga, ga_exact):
            res.notes.append(f"grad_accum {ga_exact:.2f} rounded to {ga}")
        global_batch = dp_api * mb * ga
    gbps, origin = _node_gbps(row, gpu_id)
    if origin != "row" and gpus > (row.gpus_per_node or min(gpus, 8)):
        res.notes.append(f"inter_node_gbps {gbps:g} ({origin})")
    kwargs: dict[str, Any] = dict(
        num_gpus=gpus,
        gpus_per_instance=row.gpus_per_node,
        tp=tp,
        pp=pp,
        zero_stage=row.zero_stage or 0,
        activation_checkpointing=row.activation_checkpointing or "none",
        micro_batch=mb,
        global_batch=global_batch,
        seq_len=row.seq_len,
        precision=row.precision or "bf16",
        optimizer=row.optimizer or "adamw",
        method=row.method or "full",
        lora_rank=row.lora_rank or 16,
        lora_targets=_targets(row.lora_targets),
        inter_node_gbps=gbps,
        mode="train",
    )
    out = estimate(model, gpu_id, **kwargs)

    if metric in ("peak_memory_gib", "peak_memory_gb"):
        mem = out["memory_gib"]
        if meaning.startswith(("reserved", "nvidia-smi")):
            allocated = False
        elif "does not say" in meaning or "not stated" in meaning:
            allocated = False
            res.notes.append("memory type unstated: total")
        else:
            allocated = "allocated" in meaning or "active" in meaning
        if allocated:
            res.notes.append("allocated: total - overhead")
        if metric == "peak_memory_gb":
            res.measured = row.value * 1e9 / GIB
            res.notes.append("GB -> GiB")
        return mem["total"] - mem["overhead"] if allocated else mem["total"]

    if out.get("step") is None:
        raise Skip(f"GPU has no {kwargs['precision']} tensor path")
    tps_gpu = out["tokens_per_s_per_gpu"]
    if metric == "tokens_per_s_per_gpu":
        return tps_gpu
    if metric == "step_time_s":
        return out["step"]["time_s"]
    if metric == "samples_per_s":
        return out["tokens_per_s"] / row.seq_len

    spec = api.resolve_model(model)
    setup = TrainingSetup(
        seq_len=row.seq_len,
        precision=kwargs["precision"],
        optimizer=kwargs["optimizer"],
        method=kwargs["method"],
        lora_rank=kwargs["lora_rank"],
        lora_targets=kwargs["lora_targets"] or LINEAR_MODULES,
    )
    if metric == "tflops_per_gpu":
        if "hardware" in meaning and "recompute" in meaning:
            flops = training_flops_per_token(spec, setup, kwargs["activation_checkpointing"])
        else:
            flops = model_flops_per_token(spec, setup)
        return flops * tps_gpu / 1e12
    # mfu
    if any(s in meaning for s in ("312", "989", "bf16")):
        peak = get_gpu(gpu_id).bf16_tflops
        if peak:
            return model_flops_per_token(spec, setup) * tps_gpu / (peak * 1e12)
    return out["mfu"]


def _request_cap(row: Row) -> int:
    text = f"{row.metric_meaning or ''} {row.assumptions or ''}"
    counts = [int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) (?:synthetic )?requests", text)]
    counts += [int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) prompts", text)]
    return min([MAX_FIT_BATCH_CAP] + [c for c in counts if c > 0])


def _all_at_once(row: Row) -> bool:
    text = _lower(row.metric_meaning)
    return any(
        s in text
        for s in ("max-throughput", "offline", "at once", "qps inf", "infinite rate", "infinite request rate")
    )


def serve_prediction(row: Row, res: Result) -> float:
    gpu_id = _gpu_id(row)
    model = _spec(row)
    if _is_moe(row, model) and (row.ep or 1) > 1:
        raise Skip("MoE with expert parallelism (ep > 1)")
    if row.tp is None:
        raise Skip("missing tp")
    if (row.pp or 1) > 1:
        raise Skip("serving with pp > 1 (not modelled)")
    meaning = _lower(row.metric_meaning)
    metric = row.metric
    if "ambiguous" in meaning:
        raise Skip("serving metric ambiguous (total vs per GPU)")
    single_stream = "single-stream" in meaning
    if row.output_tokens is None:
        raise Skip("missing input/output tokens")
    if row.input_tokens is None and not single_stream:
        raise Skip("missing input/output tokens")
    prompt = row.input_tokens or 1
    if single_stream and row.input_tokens is None:
        res.notes.append("prompt length not stated (decode rate only)")
    gpus = row.num_gpus or row.tp
    quant = (row.weight_precision or row.precision or "fp16").lower()
    context = prompt + row.output_tokens
    base: dict[str, Any] = dict(
        num_gpus=gpus,
        gpus_per_instance=row.gpus_per_node or min(gpus, 8),
        tp=row.tp,
        mode="serve",
        context=context,
        precision=quant,
        prompt_tokens=prompt,
        output_tokens=row.output_tokens,
    )
    if base["gpus_per_instance"] > gpus:
        base["gpus_per_instance"] = gpus
    batch = row.serve_batch
    if batch is None:
        if single_stream:
            batch = 1
        elif _all_at_once(row):
            batch = _max_fit_batch(model, gpu_id, base, _request_cap(row))
            res.notes.append(f"batch {batch} = max fit")
        else:
            raise Skip("serve batch / concurrency not stated (arrival-rate run)")
    out = estimate(model, gpu_id, batch=batch, **base)
    if single_stream:
        return 1000.0 / out["tpot_ms"]
    if metric == "output_tokens_per_s":
        return out["output_tokens_per_s"]
    if metric == "output_tokens_per_s_per_gpu":
        return out["output_tokens_per_s"] / gpus
    if metric == "ttft_ms":
        return out["ttft_s"] * 1e3
    if metric == "tpot_ms":
        return out["tpot_ms"]
    if metric == "requests_per_s":
        return out["requests_per_s"]
    if metric == "e2e_latency_s":
        return out["ttft_s"] + (row.output_tokens - 1) * out["tpot_ms"] / 1e3
    raise Skip(f"metric {metric} not comparable for serving")


def _max_fit_batch(model: str | ModelSpec, gpu_id: str, base: dict[str, Any], cap: int) -> int:
    """Largest batch in [1, cap] whose estimate fits the GPU memory (1 if none fits)."""
    if estimate(model, gpu_id, batch=cap, **base)["fits"]:
        return cap
    lo, hi = 1, cap  # invariant: hi does not fit
    if not estimate(model, gpu_id, batch=1, **base)["fits"]:
        return 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if estimate(model, gpu_id, batch=mid, **base)["fits"]:
            lo = mid
        else:
            hi = mid
    return lo


def score(row: Row) -> Result:
    res = Result(row)
    try:
        if row.kind.startswith("train"):
            res.predicted = train_prediction(row, res)
        elif row.kind.startswith("serve"):
            res.predicted = serve_prediction(row, res)
        else:
            raise Skip(f"unknown kind {row.kind}")
        if res.predicted is not None and not (res.predicted > 0 and math.isfinite(res.predicted)):
            raise Skip("prediction not positive / finite")
    except Skip as exc:
        res.predicted, res.reason = None, str(exc)
    return res


# ---- reporting ----------------------------------------------------------------------------


def _summary(results: list[Result]) -> dict[str, Any]:
    scored = [r for r in results if r.scored]
    errors = [abs(r.error) for r in scored if r.error is not None]
    within = [abs(r.error) <= BANDS[r.row.kind] + 1e-12 for r in scored if r.error is not None]
    signed = [r.error for r in scored if r.error is not None]
    return {
        "rows": len(results),
        "scored": len(scored),
        "skipped": len(results) - len(scored),
        "median": statistics.median(errors) if errors else None,
        "bias": statistics.median(signed) if signed else None,
        "within": sum(within) / len(within) if within else None,
    }


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.0%}" if signed else f"{x:.0%}"


def _band_label(kinds: set[str]) -> str:
    bands = sorted({BANDS[k] for k in kinds})
    return "/".join(f"±{b:.0%}" for b in bands)


def _table(headers: list[str], rows: list[list[str]], markdown: bool, right: set[int]) -> str:
    if markdown:
        lines = [
            "| " + " | ".join(headers) + " |",
            "|" + "|".join("---:" if i in right else "---" for i in range(len(headers))) + "|",
        ]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    return "\n".join([fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def report(results: list[Result], markdown: bool, elapsed: float) -> str:
    out: list[str] = []
    h = "### " if markdown else ""
    out.append(
        f"{h}Validation scores: current (un-fitted) model, "
        f"{len(results)} rows from {len({r.row.source_id for r in results})} sources\n"
    )

    by_source: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_source[r.row.source_id].append(r)
    rows = []
    for source in sorted(by_source):
        group = by_source[source]
        s = _summary(group)
        kinds = {r.row.kind for r in group}
        rows.append(
            [
                source,
                ", ".join(k for k in KINDS if k in kinds),
                str(s["rows"]),
                str(s["scored"]),
                str(s["skipped"]),
                _pct(s["median"]),
                _pct(s["bias"], True),
                _pct(s["within"]),
                _band_label(kinds),
            ]
        )
    out.append(f"{h}Per source\n")
    out.append(
        _table(
            [
                "source",
                "kinds",
                "rows",
                "scored",
                "skipped",
                "median abs. error",
                "median error",
                "within band",
                "band",
            ],
            rows,
            markdown,
            {2, 3, 4, 5, 6, 7},
        )
    )

    out.append(f"\n{h}Per kind\n")
    rows = []
    for kind in KINDS:
        group = [r for r in results if r.row.kind == kind]
        s = _summary(group)
        hm = _summary([r for r in group if r.row.confidence in ("high", "medium")])
        rows.append(
            [
                kind,
                str(s["rows"]),
                str(s["scored"]),
                str(s["skipped"]),
                _pct(s["median"]),
                _pct(s["bias"], True),
                _pct(s["within"]),
                f"±{BANDS[kind]:.0%}",
                str(hm["scored"]),
                _pct(hm["median"]),
                _pct(hm["within"]),
            ]
        )
    s = _summary(results)
    rows.append(
        [
            "all",
            str(s["rows"]),
            str(s["scored"]),
            str(s["skipped"]),
            _pct(s["median"]),
            _pct(s["bias"], True),
            _pct(s["within"]),
            "±15%/±20%",
            "",
            "",
            "",
        ]
    )
    out.append(
        _table(
            [
                "kind",
                "rows",
                "scored",
                "skipped",
                "median abs. error",
                "median error",
                "within band",
                "band",
                "scored (high/med conf.)",
                "median abs. error (high/med)",
                "within band (high/med)",
            ],
            rows,
            markdown,
            {1, 2, 3, 4, 5, 6, 8, 9, 10},
        )
    )

    out.append(f"\n{h}Per metric\n")
    rows = []
    metrics = sorted(
        {(r.row.kind, r.row.metric) for r in results}, key=lambda km: (KINDS.index(km[0]), km[1])
    )
    for kind, metric in metrics:
        group = [r for r in results if r.row.kind == kind and r.row.metric == metric]
        s = _summary(group)
        rows.append(
            [
                kind,
                metric,
                str(s["rows"]),
                str(s["scored"]),
                _pct(s["median"]),
                _pct(s["bias"], True),
                _pct(s["within"]),
            ]
        )
    out.append(
        _table(
            ["kind", "metric", "rows", "scored", "median abs. error", "median error", "within band"],
            rows,
            markdown,
            {2, 3, 4, 5, 6},
        )
    )

    out.append(f"\n{h}Skipped rows by reason\n")
    reasons = Counter(r.reason or "" for r in results if not r.scored)
    out.append(_table(["reason", "rows"], [[k, str(v)] for k, v in reasons.most_common()], markdown, {1}))

    notes: Counter[str] = Counter()
    for r in results:
        if r.scored:
            for n in r.notes:
                notes[re.sub(r"\d+(\.\d+)?", "N", n)] += 1
    out.append(f"\n{h}Conventions applied to scored rows\n")
    out.append(_table(["convention", "rows"], [[k, str(v)] for k, v in notes.most_common()], markdown, {1}))
    out.append("")
    out.append("- error = predicted / measured − 1; median error is the signed median (bias).")
    out.append(
        "- inter_node_gbps: the row's value when given, else 400 Gbit/s per node for A100, "
        "3200 for H100/H200/B200/B300, else estimate's default 100 (multi-node rows only "
        "depend on it)."
    )
    out.append(
        "- no constant of the model is tuned: api.estimate with its default assumptions; "
        "ConfigError from estimate counts as a skip."
    )
    out.append(
        "- serving: estimate() has no KV-cache dtype input, so every row uses an fp16 KV "
        "cache; rows without serve_batch from offline / all-at-once runs use the largest "
        "batch that fits the model's memory (capped by the requests in the run and 8192)."
    )
    out.append(
        "- training: cp as data parallelism; vp (interleaving) not modelled; empty "
        "zero_stage → 0, activation_checkpointing → none, optimizer → adamw."
    )
    out.append(f"\nran in {elapsed:.2f} s ({_estimate.cache_info().currsize} distinct estimate calls)")
    return "\n".join(out)


def write_csv(results: list[Result], path: Path) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "case_id",
                "source_id",
                "kind",
                "metric",
                "unit",
                "model",
                "gpu",
                "num_gpus",
                "value",
                "measured",
                "predicted",
                "error",
                "within_band",
                "status",
                "skip_reason",
                "notes",
                "confidence",
            ]
        )
        for r in results:
            row, err = r.row, r.error
            unit = "GiB" if row.metric.startswith("peak_memory") else row.metric
            w.writerow(
                [
                    row.case_id,
                    row.source_id,
                    row.kind,
                    row.metric,
                    unit,
                    row.model,
                    row.gpu or "",
                    row.num_gpus or "",
                    row.value,
                    f"{r.measured:.6g}",
                    "" if r.predicted is None else f"{r.predicted:.6g}",
                    "" if err is None else f"{err:+.4f}",
                    "" if err is None else str(abs(err) <= BANDS[row.kind] + 1e-12).lower(),
                    "scored" if r.scored else "skipped",
                    r.reason or "",
                    "; ".join(r.notes),
                    row.confidence or "",
                ]
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--csv", type=Path, metavar="OUT", help="write per-case predictions")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results = [score(row) for row in load_rows()]
    elapsed = time.perf_counter() - start
    print(report(results, args.markdown, elapsed))
    if args.csv:
        write_csv(results, args.csv)
        print(f"per-case predictions written to {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
