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
        if stack == "megatron-core":  # Megatron-LM shards optimizer state (ZeRO-1) or all (FSDP)
            job["constraints"]["zero_stages"] = [0, 1]
        # at the median: the P80 plans of some examples pipeline a stack that cannot (the
        # planner does not yet know each stack's parallelisms; the exporters refuse those)
        out[stack] = api.plan(job, offline=True, alternatives=0, confidence=0.5)
        assert out[stack]["status"] != "infeasible", stack
    return out
