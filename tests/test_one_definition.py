"""Each fact lives once: the tree (optimizer/) defines the TP degrees and the fp8 GEMM factor in
exactly one place (issue 24: serving had its own TP list and fp8 factor)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "optimizer"
#: a name about tensor parallelism bound to a literal tuple of degrees: `TP_DEGREES = (1, 2, ...`
TP_LIST = re.compile(r"^\s*(\w*(?:TP|tp|TENSOR|tensor)\w*)\s*(?::[^=\n]*)?=\s*\(\s*1\s*,\s*2\b", re.M)
#: a name about the fp8 factor bound to a number: `FP8_FACTOR = 0.8`, `fp8_gemm_factor: float = 0.8`
FP8_FACTOR = re.compile(r"^\s*(\w*fp8\w*factor\w*)\s*(?::[^=\n]*)?=\s*[\d.]", re.M | re.I)


def _definitions(pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(ROOT.parent)), m.group(1))
        for path in sorted(ROOT.rglob("*.py"))
        for m in pattern.finditer(path.read_text(encoding="utf-8"))
    ]


def test_one_definition_of_the_tp_degrees() -> None:
    assert _definitions(TP_LIST) == [("optimizer/model/layout.py", "TP_DEGREES")]


def test_one_definition_of_the_fp8_factor() -> None:
    assert _definitions(FP8_FACTOR) == [("optimizer/model/setup.py", "fp8_gemm_factor")]


def test_the_patterns_catch_the_old_copies() -> None:
    # the two copies this test guards against (solve/serve/options.py, model/efficiency.py)
    assert TP_LIST.search("TP_DEGREES = (1, 2, 4, 8)\n")
    assert FP8_FACTOR.search("FP8_FACTOR = 0.8  # GUESS\n")
