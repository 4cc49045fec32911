"""The kept-aside collections (benchmarks/validation/aside2/ ... aside5/) follow SCHEMA.md and stay
out of the fitting folder's glob; the newest two (aside4: prime-rl, LLMQ/LLaMA-Factory, InternEvo,
llm_TII, swiss-ai; aside5: ms-swift, OLMo-core, Answer.AI fsdp_qlora, flash-attention, a LLaMA-7B
A800 gist, collected for issue 44 item 5) also hold sources new to every other collection. Each is
scored once, never fitted."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.validation import load

VALIDATION = Path(load.__file__).resolve().parent
# every kept-aside collection but the first (issue 26's, scored in earlier rounds, another era)
FOLDERS = tuple(folder for folder, _ in reversed(load.ASIDE_FOLDERS) if folder != "aside")
FILES = [p for folder in FOLDERS for p in sorted((VALIDATION / folder).glob("*.csv"))]
#: collections whose every number carries the date it was read (those of this round)
DATED = tuple(folder for folder in FOLDERS if folder != "aside2")


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_collection_has_three_sources_outside_the_fitting_glob(folder: str) -> None:
    files = sorted((VALIDATION / folder).glob("*.csv"))
    assert len(files) >= 3
    assert not {p.name for p in load.csv_files()} & {p.name for p in files}
    assert all(p.parent == VALIDATION for p in load.csv_files())


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_file_loads_with_schema_header(path: Path) -> None:
    with path.open(encoding="utf-8", newline="") as fh:
        header = next(csv.reader(fh))
    assert tuple(header) in load.accepted_headers()
    rows = load.load_file(path)
    assert rows
    assert {r.source_id for r in rows} == {path.stem}
    assert all(r.source_url and r.source_url.startswith("https://") for r in rows)
    if path.parent.name in DATED:
        assert all("2026-12-05" in r.source_where for r in rows)  # the date each number was read
    assert all(r.num_gpus is None or r.tp is None or r.num_gpus == r.tp * r.pp * r.cp * r.dp for r in rows)


@pytest.mark.parametrize("folder", [f for f in FOLDERS if f not in ("aside2", "aside3")])
def test_newest_sources_new_to_every_collection(folder: str) -> None:
    """No source URL of aside4 or aside5 (its repository or page) appears in any other validation file."""
    here = VALIDATION / folder
    urls = {
        r.source_url.split("/blob/")[0].split(" ")[0] for p in here.glob("*.csv") for r in load.load_file(p)
    }
    seen: set[str] = set()
    for p in VALIDATION.rglob("*.csv"):  # every folder, whatever its schema (rl/ has its own)
        if p.parent != here:
            with p.open(encoding="utf-8", newline="") as fh:
                seen |= {row.get("source_url") or "" for row in csv.DictReader(fh)}
    assert not {u for u in urls if any(u in s for s in seen)}


def test_case_ids_unique_across_all_collections() -> None:
    rows = load.load_rows()
    for folder in ("aside", *FOLDERS):
        rows += [r for p in sorted((VALIDATION / folder).glob("*.csv")) for r in load.load_file(p)]
    counts = Counter(r.case_id for r in rows)
    assert not {c: n for c, n in counts.items() if n > 1}
