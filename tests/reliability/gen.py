"""Hypothesis strategies for the fuzz tests: job files (train, batch, serve), option values,
calibration stores and price tables — valid and invalid — and a TOML writer that can spell
nan, inf and wrong types (what a careless user writes)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "toml",
    "bad_value",
    "number",
    "train_job",
    "serve_job",
    "batch_file",
    "flag_value",
    "TINY_MODEL",
    "CHEAP_GPUS",
]

#: a tiny explicit model shape: every plan of it is cheap to enumerate
TINY_MODEL = {"layers": 2, "hidden": 256, "heads": 4, "ffn": 1024, "vocab": 1000}
CHEAP_GPUS = ["L4", "A10G", "RTX4090", "H100-80GB"]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def toml(doc: dict[str, Any]) -> str:
    """TOML text of `doc`: scalars first, then [tables], then [[arrays of tables]]."""
    lines: list[str] = []

    def table(prefix: str, d: dict[str, Any]) -> None:
        subs = []
        for k, v in d.items():
            if isinstance(v, dict):
                subs.append((k, v))
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                subs.append((k, v))
            else:
                lines.append(f"{k} = {_value(v)}")
        for k, v in subs:
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                lines.append(f"[{name}]")
                table(name, v)
            else:
                for item in v:
                    lines.append(f"[[{name}]]")
                    table(name, item)

    table("", doc)
    return "\n".join(lines) + "\n"


#: values no numeric field accepts
bad_value = st.sampled_from(
    [math.nan, math.inf, -math.inf, -1, 0, 1e308, -1e-300, True, False, "inf", "12", [], [1.0], {"a": 1}]
)


def number(lo: float, hi: float, integer: bool = False) -> st.SearchStrategy[Any]:
    """A value in [lo, hi] (the field's stated range)."""
    if integer:
        return st.integers(int(math.ceil(lo)), int(hi))
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


def _maybe_break(draw: Any, doc: dict[str, Any], paths: list[tuple[str, ...]]) -> bool:
    """With probability ~1/2, replace one field (or add an unknown one) with a bad value."""
    if not draw(st.booleans()):
        return False
    path = draw(st.sampled_from([*paths, ("workload", "colour")]))
    node = doc
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = draw(bad_value)
    return True


@st.composite
def train_job(draw: Any) -> tuple[dict[str, Any], bool]:
    """(a training job table, whether it is meant to be valid)."""
    w: dict[str, Any] = {
        "kind": draw(st.sampled_from(["pretrain", "finetune", "lora"])),
        "tokens": draw(number(1e6, 1e10)),
        "seq_len": draw(st.sampled_from([128, 256, 512])),
        "global_batch": draw(number(1, 64, integer=True)),
    }
    c: dict[str, Any] = {
        "deadline_hours": draw(number(0.5, 500)),
        "gpu_types": [draw(st.sampled_from(CHEAP_GPUS))],
        "pricing": draw(
            st.lists(st.sampled_from(["on_demand", "spot"]), min_size=1, max_size=2, unique=True)
        ),
    }
    if draw(st.booleans()):
        c["budget_usd"] = draw(number(0.01, 1e5))
    if draw(st.booleans()):
        c["max_gpus"] = draw(number(1, 64, integer=True))
    doc = {"name": "fuzz", "model": dict(TINY_MODEL), "workload": w, "constraints": c}
    broken = _maybe_break(
        draw,
        doc,
        [
            ("workload", "tokens"),
            ("workload", "seq_len"),
            ("workload", "global_batch"),
            ("workload", "epochs"),
            ("constraints", "deadline_hours"),
            ("constraints", "budget_usd"),
            ("constraints", "max_gpus"),
            ("constraints", "pricing"),
            ("constraints", "gpu_types"),
            ("assumptions", "dp_overlap"),
            ("model", "layers"),
        ],
    )
    return doc, not broken


@st.composite
def serve_job(draw: Any) -> tuple[dict[str, Any], bool]:
    """(a serving job table, whether it is meant to be valid)."""
    w: dict[str, Any] = {
        "kind": "serve",
        "prompt_tokens": draw(number(16, 2048, integer=True)),
        "output_tokens": draw(number(16, 512, integer=True)),
    }
    if draw(st.booleans()):
        w["requests_per_s"] = draw(number(0.01, 50))
    else:
        w["concurrent_users"] = draw(number(1, 1000, integer=True))
        w["think_time_s"] = draw(number(0.5, 600))
    c: dict[str, Any] = {
        "ttft_s": draw(number(0.05, 10)),
        "tpot_ms": draw(number(5, 500)),
        "gpu_types": [draw(st.sampled_from(CHEAP_GPUS))],
        "redundancy": draw(st.sampled_from(["n", "n+1", "n+2", 0, 1])),
    }
    doc = {"model": dict(TINY_MODEL), "workload": w, "constraints": c}
    broken = _maybe_break(
        draw,
        doc,
        [
            ("workload", "requests_per_s"),
            ("workload", "think_time_s"),
            ("workload", "prompt_tokens"),
            ("workload", "hours_per_day"),
            ("constraints", "ttft_s"),
            ("constraints", "tpot_ms"),
            ("constraints", "redundancy"),
            ("constraints", "min_capacity_headroom_fraction"),
            ("constraints", "max_replicas"),
        ],
    )
    return doc, not broken


@st.composite
def batch_file(draw: Any) -> tuple[dict[str, Any], bool]:
    """(a batch table with 1-3 small jobs, whether it is meant to be valid)."""
    horizon = draw(number(1, 30))
    jobs = []
    for i in range(draw(st.integers(1, 3))):
        job: dict[str, Any] = {
            "name": f"j{i}",
            "model": dict(TINY_MODEL),
            "workload": {
                "kind": "pretrain",
                "tokens": draw(number(1e6, 1e9)),
                "seq_len": 256,
                "global_batch": 8,
            },
            "constraints": {
                "deadline_days": draw(number(0.1, horizon)),
                "gpu_types": [draw(st.sampled_from(CHEAP_GPUS))],
            },
        }
        if draw(st.booleans()):
            job["droppable"], job["value_usd"] = True, draw(number(0.01, 1e6))
        jobs.append(job)
    capacity: dict[str, Any] = {"horizon_days": horizon}
    if draw(st.booleans()):
        capacity["owned"] = [{"gpu": "RTX4090", "num_boxes": draw(number(1, 3, integer=True))}]
    doc = {"name": "fuzz", "capacity": capacity, "job": jobs}
    broken = _maybe_break(
        draw,
        doc,
        [("capacity", "horizon_days"), ("capacity", "quota_only"), ("name",), ("capacity", "horizon_hours")],
    )
    if not broken and draw(st.integers(0, 3)) == 0:  # break a job field instead
        jobs[0]["constraints"]["deadline_days"] = draw(bad_value)
        broken = True
    return doc, not broken


#: what a user may type for a numeric flag
flag_value = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e308", "1e-300", "abc", "", "2", "8", "0.5", "100"]),
    st.integers(-5, 5000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
