"""The validation set (benchmarks/validation/*.csv) follows benchmarks/validation/SCHEMA.md.

Allowed values are read from SCHEMA.md itself (not from load.py), so the test checks the data
against the written schema.
"""

from __future__ import annotations

import csv
import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

VALIDATION = Path(__file__).resolve().parents[2] / "benchmarks" / "validation"
SCHEMA_TEXT = (VALIDATION / "SCHEMA.md").read_text(encoding="utf-8")
NOT_MEASUREMENTS = {"model_profiles_source.csv"}
CSV_FILES = sorted(p for p in VALIDATION.glob("*.csv") if p.name not in NOT_MEASUREMENTS)


def _load_module():
    spec = importlib.util.spec_from_file_location("validation_load", VALIDATION / "load.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


load = _load_module()


def _table_rows() -> dict[str, str]:
    """SCHEMA.md's column table: first cell (column names) → second cell (meaning)."""
    rows: dict[str, str] = {}
    for line in SCHEMA_TEXT.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 4 or cells[1] in ("column", "") or set(cells[1]) <= {"-", ":"}:
            continue
        rows[cells[1]] = "|".join(cells[2:-1])
    return rows


TABLE = _table_rows()


def _schema_columns() -> list[str]:
    names: list[str] = []
    for cell in TABLE:
        for name in cell.strip("`").split(","):
            name = name.strip().strip("`")
            if name not in names:
                names.append(name)
    return names


def _backticked(column: str) -> set[str]:
    return set(re.findall(r"`([^`]+)`", TABLE[column]))


def _listed(column: str) -> set[str]:
    """Values of a meaning cell written as a comma list (after an optional 'one of:')."""
    text = TABLE[column].split("one of:", 1)[-1]
    text = text.split("(", 1)[0]
    return {v.strip().strip("`").strip() for v in text.split(",") if v.strip()}


SCHEMA_COLUMNS = _schema_columns()
#: the trailing columns SCHEMA.md's table marks optional (a file may leave them out as a whole)
OPTIONAL = [c for c in SCHEMA_COLUMNS if TABLE.get(c, "").strip().startswith("optional trailing column")]
KINDS = _backticked("kind")
METRICS = _listed("metric")
STACKS = _listed("stack")


@pytest.fixture(scope="module")
def rows() -> list:
    return load.load_rows()


def test_schema_lists_are_read() -> None:
    assert SCHEMA_COLUMNS[:5] == ["case_id", "source_id", "source_url", "source_where", "kind"]
    assert len(SCHEMA_COLUMNS) == len(set(SCHEMA_COLUMNS)) > 40
    assert KINDS == {"train_throughput", "train_memory", "serve_throughput", "serve_latency"}
    assert {"tokens_per_s_per_gpu", "ttft_ms", "peak_memory_gb"} <= METRICS
    assert {"megatron-core", "vllm", "other"} <= STACKS


def test_loader_columns_match_schema() -> None:
    assert list(load.schema_columns()) == SCHEMA_COLUMNS


@pytest.mark.parametrize("path", CSV_FILES, ids=lambda p: p.name)
def test_file_parses_with_schema_header(path: Path) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh))
    assert header in (SCHEMA_COLUMNS, SCHEMA_COLUMNS[: len(SCHEMA_COLUMNS) - len(OPTIONAL)])
    parsed = load.load_file(path)
    assert parsed, f"{path.name} has no rows"
    assert {r.source_id for r in parsed} == {path.stem}


def test_every_file_is_loaded(rows: list) -> None:
    assert {r.file for r in rows} == {p.name for p in CSV_FILES}
    assert len(CSV_FILES) >= 20


def test_case_ids_unique_across_files(rows: list) -> None:
    counts = Counter(r.case_id for r in rows)
    duplicates = {c: n for c, n in counts.items() if n > 1}
    assert not duplicates


def test_num_gpus_is_product_of_parallel_degrees(rows: list) -> None:
    bad = [
        (r.case_id, r.num_gpus, r.tp, r.pp, r.cp, r.dp)
        for r in rows
        if None not in (r.num_gpus, r.tp, r.pp, r.cp, r.dp) and r.num_gpus != r.tp * r.pp * r.cp * r.dp
    ]
    assert not bad


def test_kinds_metrics_stacks_from_schema(rows: list) -> None:
    assert not {(r.case_id, r.kind) for r in rows if r.kind not in KINDS}
    assert not {(r.case_id, r.metric) for r in rows if r.metric not in METRICS}
    assert not {(r.case_id, r.stack) for r in rows if r.stack not in STACKS}


def test_values_typed(rows: list) -> None:
    for r in rows:
        assert isinstance(r.value, float)
        assert r.num_gpus is None or isinstance(r.num_gpus, int)
        assert r.sequence_parallel in (None, True, False)


def test_head_dim_is_an_optional_trailing_column(tmp_path: Path) -> None:
    """A file may carry head_dim (Qwen3-4B: hidden 2560 but 32 heads × 128 = 4,096 wide attention,
    its config.json) or leave the column out; a file without it reads head_dim as empty."""
    assert OPTIONAL == ["head_dim"] and SCHEMA_COLUMNS[-1] == "head_dim"
    source = next(p for p in CSV_FILES if p.name.startswith("torchtitan"))
    with source.open(encoding="utf-8", newline="") as fh:
        header, first = list(csv.reader(fh))[:2]
    assert "head_dim" not in header
    assert load.load_file(source)[0].head_dim is None
    widened = tmp_path / source.name
    with widened.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([[*header, "head_dim"], [*first, "128"]])
    (row,) = load.load_file(widened)
    assert row.head_dim == 128 and row.case_id == first[0]
    with widened.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([[*header[:-1], "head_dim"], [*first[:-1], "128"]])
    with pytest.raises(load.ValidationError, match="header differs"):
        load.load_file(widened)
