"""The fourth kept-aside collection (benchmarks/validation/aside4/*.csv) follows SCHEMA.md and
stays out of the fitting folder's glob.

aside4 holds sources collected for issue 44 item 5 (B200/H200/H100 prime-rl SFT runs, RTX 4090
LLMQ and LLaMA-Factory runs, InternEvo A100/A800, llm_TII B200, swiss-ai GH200); they are scored
once at the end, never fitted.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
from collections import Counter
from pathlib import Path

import pytest

VALIDATION = Path(__file__).resolve().parents[2] / "benchmarks" / "validation"
ASIDE4 = VALIDATION / "aside4"
ASIDE4_FILES = sorted(ASIDE4.glob("*.csv"))


def _load_module():
    spec = importlib.util.spec_from_file_location("validation_load_aside4", VALIDATION / "load.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


load = _load_module()


def test_aside4_has_three_sources() -> None:
    assert len(ASIDE4_FILES) >= 3


@pytest.mark.parametrize("path", ASIDE4_FILES, ids=lambda p: p.name)
def test_aside4_file_loads_with_schema_header(path: Path) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh))
    assert tuple(header) in load.accepted_headers()
    rows = load.load_file(path)
    assert rows
    assert {r.source_id for r in rows} == {path.stem}
    assert all(r.source_url and r.source_url.startswith("https://") for r in rows)
    assert all("2026-12-05" in r.source_where for r in rows)  # the date each number was read
    assert all(r.num_gpus is None or r.tp is None or r.num_gpus == r.tp * r.pp * r.cp * r.dp for r in rows)


def test_aside4_not_in_fitting_glob() -> None:
    fitted = {p.name for p in load.csv_files()}
    assert not fitted & {p.name for p in ASIDE4_FILES}
    assert all(p.parent == VALIDATION for p in load.csv_files())


def test_aside4_sources_new_to_every_collection() -> None:
    """No source URL of aside4 (its repository or page) appears in any other validation file."""
    urls = {r.source_url.split("/blob/")[0].split(" ")[0] for p in ASIDE4_FILES for r in load.load_file(p)}
    seen: set[str] = set()
    for p in VALIDATION.rglob("*.csv"):  # every folder, whatever its schema (rl/ has its own)
        if p.parent != ASIDE4:
            with p.open(encoding="utf-8", newline="") as fh:
                seen |= {row.get("source_url") or "" for row in csv.DictReader(fh)}
    assert not {u for u in urls if any(u in s for s in seen)}


def test_case_ids_unique_across_all_collections() -> None:
    rows = load.load_rows()
    for folder in ("aside", "aside2", "aside3", "aside4"):
        rows += [r for p in sorted((VALIDATION / folder).glob("*.csv")) for r in load.load_file(p)]
    counts = Counter(r.case_id for r in rows)
    assert not {c: n for c, n in counts.items() if n > 1}
