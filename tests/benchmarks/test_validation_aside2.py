"""The second kept-aside collection (benchmarks/validation/aside2/*.csv) follows SCHEMA.md and
stays out of the fitting folder's glob.

aside2 holds sources collected for issue 44 item 3 (GB200 step times, A800/H800/H100 FlagPerf runs,
an RTX 4090 nanoGPT run); they are scored once at the end, never fitted.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

VALIDATION = Path(__file__).resolve().parents[2] / "benchmarks" / "validation"
ASIDE2 = VALIDATION / "aside2"
ASIDE2_FILES = sorted(ASIDE2.glob("*.csv"))


def _load_module():
    spec = importlib.util.spec_from_file_location("validation_load_aside2", VALIDATION / "load.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


load = _load_module()


def test_aside2_has_three_sources() -> None:
    assert len(ASIDE2_FILES) >= 3


@pytest.mark.parametrize("path", ASIDE2_FILES, ids=lambda p: p.name)
def test_aside2_file_loads_with_schema_header(path: Path) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh))
    assert tuple(header) in load.accepted_headers()
    rows = load.load_file(path)
    assert rows
    assert {r.source_id for r in rows} == {path.stem}
    assert all(r.source_url and r.source_url.startswith("https://") for r in rows)
    assert all(r.num_gpus is None or r.tp is None or r.num_gpus == r.tp * r.pp * r.cp * r.dp for r in rows)


def test_aside2_not_in_fitting_glob() -> None:
    fitted = {p.name for p in load.csv_files()}
    assert not fitted & {p.name for p in ASIDE2_FILES}
    assert all(p.parent == VALIDATION for p in load.csv_files())


def test_case_ids_unique_across_all_collections() -> None:
    rows = load.load_rows()
    for folder in ("aside", "aside2"):
        rows += [r for p in sorted((VALIDATION / folder).glob("*.csv")) for r in load.load_file(p)]
    counts = Counter(r.case_id for r in rows)
    assert not {c: n for c, n in counts.items() if n > 1}
