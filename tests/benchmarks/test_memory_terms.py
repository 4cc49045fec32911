"""The memory fit's terms need rows from two sources (benchmarks/fitting.py MEMORY_TERM_SOURCES):
a stack measured by one source keeps the model's own activation count."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from fitting import MEMORY_TERM_SOURCES, backed_by_two_sources  # noqa: E402

from optimizer.model.fitted import load_fitted  # noqa: E402


def test_a_term_one_source_backs_is_not_fitted() -> None:
    rows = [
        (["stack:deepspeed"], 0.5, -1.0, 0.7),  # peft-readme's two rows, one source
        (["stack:deepspeed"], 0.4, -1.0, 0.7),
        (["stack:hf-trainer"], 0.1, -1.0, 1.0),
        (["stack:hf-trainer"], -0.1, -1.0, 1.0),
    ]
    kept = backed_by_two_sources(rows, ["peft", "peft", "hf-docs", "litgpt"])
    assert MEMORY_TERM_SOURCES == 2
    assert [feats for feats, *_ in kept] == [["stack:hf-trainer"], ["stack:hf-trainer"]]


def test_a_row_keeps_the_terms_two_sources_back() -> None:
    rows = [(["stack:a", "method:lora"], 0.2, -1.0, 1.0), (["stack:b", "method:lora"], 0.1, -1.0, 1.0)]
    kept = backed_by_two_sources(rows, ["s1", "s2"])
    assert [feats for feats, *_ in kept] == [["method:lora"], ["method:lora"]]


def test_the_packaged_fit_has_no_deepspeed_memory_term() -> None:
    # DeepSpeed's memory rows in the fitting folder come from one source (peft-readme)
    assert "stack:deepspeed" not in load_fitted().memory
