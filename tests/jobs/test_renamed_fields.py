"""Renamed job-file fields (one vocabulary: a count is num_*, a list of GPU types is gpu_types,
bounds say min_/max_): each old name still loads to the same value, warns exactly once per
process, and giving both names is a one-line error naming the file."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs import aliases
from optimizer.inputs.jobs.batch import batch_from_dict
from optimizer.inputs.jobs.serve import serve_job_from_dict
from optimizer.inputs.jobs.train import job_from_dict
from optimizer.model.setup import PerfAssumptions
from optimizer.pricing.offerings import hardware_offerings
from optimizer.solve.train.prepare import headroom_of

TRAIN = {
    "name": "t",
    "model": {"preset": "gpt2"},
    "workload": {"tokens": 1e8, "seq_len": 1024, "global_batch": 8},
    "constraints": {"deadline_days": 5},
}
SERVE = {
    "name": "s",
    "model": {"preset": "gpt2"},
    "workload": {"kind": "serve", "requests_per_s": 2.0, "prompt_tokens": 256, "output_tokens": 64},
    "constraints": {"ttft_s": 2.0},
}
BATCH = {
    "name": "b",
    "capacity": {"horizon_days": 30, "owned": [{"gpu": "RTX4090"}]},
    "job": [
        {
            "name": "j1",
            "model": {"preset": "gpt2"},
            "workload": {"tokens": 1e8, "seq_len": 1024, "global_batch": 8},
        }
    ],
}

LOADERS = {
    "job": (TRAIN, job_from_dict),
    "serve-job": (SERVE, serve_job_from_dict),
    "batch-job": (BATCH, batch_from_dict),
}

#: (kind, path of the table, table as warned, old, new, value, read back from the new name)
CASES = [
    ("job", ("workload",), "workload", "images", "samples", 2000.0, lambda j: j.workload.samples),
    (
        "job",
        ("constraints",),
        "constraints",
        "memory_headroom_gib",
        "min_memory_headroom_gib",
        3.5,
        lambda j: j.constraints.min_memory_headroom_gib,
    ),
    (
        "job",
        ("constraints",),
        "constraints",
        "memory_headroom_fraction",
        "min_memory_headroom_fraction",
        0.1,
        lambda j: j.constraints.min_memory_headroom_fraction,
    ),
    (
        "job",
        ("hardware", "owned", 0),
        "hardware.owned",
        "boxes",
        "num_boxes",
        3,
        lambda j: j.hardware.owned[0].num_boxes,
    ),
    (
        "job",
        ("hardware", "buy", 0),
        "hardware.buy",
        "max_count",
        "max_gpus",
        16,
        lambda j: j.hardware.buy[0].max_gpus,
    ),
    (
        "serve-job",
        ("workload",),
        "workload",
        "kv_precision",
        "kv_cache_precision",
        "fp8",
        lambda j: j.workload.kv_cache_precision,
    ),
    (
        "serve-job",
        ("workload",),
        "workload",
        "quantization",
        "precision",
        "int8",
        lambda j: j.workload.precision,
    ),
    (
        "serve-job",
        ("constraints",),
        "constraints",
        "headroom",
        "min_capacity_headroom_fraction",
        0.25,
        lambda j: j.constraints.min_capacity_headroom_fraction,
    ),
    (
        "serve-job",
        ("constraints",),
        "constraints",
        "tp",
        "tp_degrees",
        [2, 4],
        lambda j: j.constraints.tp_degrees,
    ),
    (
        "serve-job",
        ("hardware", "buy", 0),
        "hardware.buy",
        "max_count",
        "max_gpus",
        16,
        lambda j: j.hardware.buy[0].max_gpus,
    ),
    (
        "batch-job",
        ("capacity", "owned", 0),
        "capacity.owned",
        "boxes",
        "num_boxes",
        2,
        lambda b: b.capacity.owned[0].num_boxes,
    ),
]


def _doc(kind: str, path: tuple[Any, ...], fields: dict[str, Any]) -> dict[str, Any]:
    """The base document of `kind` with `fields` set in the table at `path` (a list index
    makes an entry of that list, a box of RTX 4090s)."""
    doc = copy.deepcopy(LOADERS[kind][0])
    if path[-1] == 0:
        table, key = path[0], path[1]
        entry = {"gpu": "RTX4090", **fields}
        doc.setdefault(table, {})[key] = [entry]
        return doc
    node = doc[path[0]]
    if {"images", "samples"} & set(fields):
        node.pop("tokens")  # give the amount in samples instead
    node.update(fields)
    return doc


def _load(kind: str, doc: dict[str, Any]) -> Any:
    return LOADERS[kind][1](doc, f"{kind}.toml")


def _renamed_warnings(caught: list[warnings.WarningMessage], old: str) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, aliases.DeprecatedName)
        and str(w.message).startswith(f"{old} is now called")
    ]


@pytest.mark.parametrize(
    ("kind", "path", "table", "old", "new", "value", "read"),
    CASES,
    ids=[f"{c[0]}:{c[2]}.{c[3]}" for c in CASES],
)
def test_old_name_loads_the_same_value_and_warns_once(kind, path, table, old, new, value, read) -> None:
    aliases._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        by_old = _load(kind, _doc(kind, path, {old: value}))
        again = _load(kind, _doc(kind, path, {old: value}))
    by_new = _load(kind, _doc(kind, path, {new: value}))
    expected = tuple(value) if isinstance(value, list) else value
    assert read(by_old) == expected and read(by_new) == expected
    assert by_old == by_new == again
    texts = _renamed_warnings(caught, f"{table}.{old}")
    assert texts == [
        f"{table}.{old} is now called {table}.{new}; the old name still works but "
        "will be removed in the next schema version"
    ]


@pytest.mark.parametrize(
    ("kind", "path", "table", "old", "new", "value", "read"),
    CASES,
    ids=[f"{c[0]}:{c[2]}.{c[3]}" for c in CASES],
)
def test_old_and_new_name_together_is_a_one_line_error(kind, path, table, old, new, value, read) -> None:
    with pytest.raises(ConfigError) as err:
        _load(kind, _doc(kind, path, {old: value, new: value}))
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{kind}.toml: ")
    assert f"give {new} or its old name {old}, not both" in text


def test_the_new_names_mean_what_they_say() -> None:
    # memory: 3.5 GiB + 10% of an 80 GiB card kept free -> 80 × 0.9 − 3.5 = 68.5 GiB usable
    job = _load(
        "job",
        _doc("job", ("constraints",), {"min_memory_headroom_gib": 3.5, "min_memory_headroom_fraction": 0.1}),
    )
    assert headroom_of(job.constraints, PerfAssumptions()).usable_gib(80.0) == pytest.approx(68.5)
    # boxes: 3 owned RTX 4090 boxes; buy at most 20 GPUs of 8 per box -> 2 whole boxes
    job = _load(
        "job",
        {
            **TRAIN,
            "hardware": {
                "owned": [{"gpu": "RTX4090", "num_boxes": 3}],
                "buy": [{"gpu": "RTX4090", "max_gpus": 20}],
            },
        },
    )
    owned, buy = hardware_offerings(job.hardware.owned, job.hardware.buy)
    assert (owned.max_instances, buy.max_instances) == (3, 2)
    assert owned.gpus_per_instance == buy.gpus_per_instance == 8
    serve = _load(
        "serve-job",
        _doc("serve-job", ("constraints",), {"min_capacity_headroom_fraction": 0.25, "tp_degrees": [1, 2]}),
    )
    assert serve.constraints.min_capacity_headroom_fraction == 0.25
    assert serve.constraints.tp_degrees == (1, 2)
    assert serve.workload.kv_cache_precision == "fp16"
    assert (job.hardware.owned[0].num_boxes, job.hardware.buy[0].max_gpus) == (3, 20)


def test_counts_belong_to_their_table() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^job\.toml: hardware: owned\[0\]: max_gpus is for "
        r"\[\[hardware\.buy\]\]; use num_boxes$",
    ):
        job_from_dict({**TRAIN, "hardware": {"owned": [{"gpu": "RTX4090", "max_gpus": 8}]}}, "job.toml")
    with pytest.raises(
        ConfigError,
        match=r"^job\.toml: hardware: buy\[0\]: num_boxes is for "
        r"\[\[hardware\.owned\]\]; use max_gpus$",
    ):
        job_from_dict({**TRAIN, "hardware": {"buy": [{"gpu": "RTX4090", "num_boxes": 1}]}}, "job.toml")


def test_quantization_is_a_serving_name_only() -> None:
    """A training job with workload.quantization is rejected the same way by plan and batch."""
    workload = {**TRAIN["workload"], "quantization": "bf16"}
    with pytest.raises(ConfigError) as single:
        job_from_dict({**TRAIN, "workload": workload}, "job.toml")
    batch = copy.deepcopy(BATCH)
    batch["capacity"]["owned"][0]["num_boxes"] = 1
    batch["job"][0]["workload"] = workload
    aliases._warned.clear()
    with warnings.catch_warnings(record=True) as caught, pytest.raises(ConfigError) as many:
        warnings.simplefilter("always")
        batch_from_dict(batch, "batch.toml")
    assert not [w for w in caught if issubclass(w.category, aliases.DeprecatedName)]
    one = str(single.value)
    assert one.startswith("job.toml: workload.quantization: unknown field; allowed: ")
    assert str(many.value) == one.replace("job.toml: ", "batch.toml: job[0] (j1).", 1)
    assert "\n" not in one


def test_unknown_field_of_a_capacity_box_names_the_file_and_the_entry() -> None:
    batch = copy.deepcopy(BATCH)
    batch["capacity"]["owned"] = [{"gpu": "RTX4090", "num_boxes": 1, "gpus_per_boxx": 4}]
    with pytest.raises(ConfigError) as err:
        batch_from_dict(batch, "batch.toml")
    text = str(err.value)
    assert text.startswith(
        "batch.toml: capacity.owned[0].gpus_per_boxx: unknown field; allowed: gpu, num_boxes, max_gpus, "
    )
    assert "gpus_per_box," in text and "\n" not in text


@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("gpus_per_box", 0, "an integer ≥ 1 and ≤ 16"),
        ("pue", 0.5, "a number ≥ 1 and ≤ 3"),
        ("resale_fraction", 1.0, "a number ≥ 0 and < 1"),
    ],
)
def test_box_overrides_are_checked_where_they_are_written(field, value, allowed) -> None:
    with pytest.raises(ConfigError) as err:
        job_from_dict({**TRAIN, "hardware": {"buy": [{"gpu": "RTX4090", field: value}]}}, "job.toml")
    assert str(err.value) == (
        f"job.toml: hardware.buy[0].{field}: {value!r} is not allowed; allowed: {allowed}"
    )
