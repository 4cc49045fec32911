"""The session fixture of the export tests: plans solved for the stacks with their own configs."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
from export_cases import ROOT, STACK_EXAMPLES

from optimizer import api


@pytest.fixture(scope="session")
def stack_plans() -> dict[str, dict[str, Any]]:
    """One plan per stack: the example job with workload.stack set (bundled prices)."""
    out = {}
    for stack, example in STACK_EXAMPLES.items():
        job = tomllib.loads((ROOT / "examples" / example).read_text())
        job["workload"]["stack"] = stack
        # at the job's own confidence: the planner proposes only layouts the stack runs
        # (stacks.toml tensor_parallel, pipeline_parallel, zero_stages), so every exporter
        # accepts its stack's plan as planned
        out[stack] = api.plan(job, offline=True, alternatives=2)
        assert out[stack]["status"] != "infeasible", stack
    return out
