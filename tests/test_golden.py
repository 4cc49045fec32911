"""Every example's `--json` output equals its stored golden file (timings masked).

The golden files were produced before the architecture refactor (issue 12) and pin behaviour:
a change that alters any number or field of an example's output fails here.
"""

from __future__ import annotations

import json

import pytest

from tests.golden.cases import CASES, ROOT, mask, path, run


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_json_matches_golden(name: str) -> None:
    expected = json.loads(path(name).read_text())
    code, doc = run(CASES[name])
    assert code == expected["exit_code"]
    assert mask(doc) == expected["output"]
