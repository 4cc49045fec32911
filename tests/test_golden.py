"""Every example's `--json` output: equal to its stored golden file (timings masked), valid
against `ccopt schema COMMAND` (checked by jsonschema, not by our own models), and identical
when solved again in another process with another hash seed (deterministic answers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

import jsonschema
import pytest

from optimizer.cli.schema_cmd import schema_of
from tests.golden.cases import CASES, ROOT, mask, path, run


@pytest.fixture(autouse=True)
def _at_root(isolated, monkeypatch):
    monkeypatch.chdir(ROOT)


@cache
def _output(name: str) -> tuple[int, Any]:
    return run(CASES[name])


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_json_matches_golden(name: str) -> None:
    expected = json.loads(path(name).read_text())
    code, doc = _output(name)
    assert code == expected["exit_code"]
    assert mask(doc) == expected["output"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_example_json_validates_against_its_schema(name: str) -> None:
    _code, doc = _output(name)
    schema = schema_of(CASES[name][0])
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(doc, schema, cls=jsonschema.Draft202012Validator)
    assert doc["schema_version"] == schema_of("plan")["properties"]["schema_version"]["default"]


def test_examples_solve_identically_in_another_process(tmp_path) -> None:
    """Solving every example again, in a fresh interpreter with a different hash seed (set and
    dict orders change), gives the golden JSON: ties are broken by a stated key, not by luck."""
    env = dict(
        os.environ,
        PYTHONHASHSEED="4242",
        CCOPT_OFFLINE="1",
        CCOPT_CALIBRATION=str(tmp_path / "c.json"),
        CCOPT_CACHE_DIR=str(tmp_path / "cache"),
    )
    script = (
        "import json; from tests.golden.cases import CASES, mask, run; "
        "print(json.dumps({n: [c, mask(d)] for n, (c, d) in "
        "((n, run(a)) for n, a in CASES.items())}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    again = json.loads(out.stdout)
    for name in CASES:
        expected = json.loads(path(name).read_text())
        assert again[name] == [expected["exit_code"], expected["output"]], name
