"""Every plan the planner proposes for a stack (the chosen one and its alternatives, at the
job's own confidence) exports to that stack's own formats: the planner keeps to what the stack
runs (stacks.toml), so no exporter has to refuse it."""

from __future__ import annotations

from typing import Any

import pytest
from export_cases import STACK_EXAMPLES

from optimizer import api

#: the formats that carry each stack's own launch configuration
OWN_FORMATS = {
    "megatron-core": ("megatron", "nemo", "torchrun"),
    "megatron-deepspeed": ("megatron", "deepspeed", "torchrun"),
    "deepspeed": ("deepspeed", "torchrun"),
    "hf-trainer": ("deepspeed", "accelerate", "torchrun"),
    "torchtitan": ("torchtitan", "torchrun"),
    "torchtune": ("torchtune", "torchrun"),
    "llm-foundry": ("llm-foundry", "torchrun"),
}


def test_every_stack_with_an_example_has_its_formats(stack_plans: dict[str, Any]) -> None:
    assert set(OWN_FORMATS) == set(STACK_EXAMPLES)
    # alternatives are exported too: most stacks have some (a budget may leave one plan)
    assert sum(bool(r.get("alternatives")) for r in stack_plans.values()) >= 5


@pytest.mark.parametrize("stack", sorted(OWN_FORMATS))
def test_every_plan_of_a_stack_exports_to_its_formats(stack: str, stack_plans: dict[str, Any]) -> None:
    result = stack_plans[stack]
    plans = [result["plan"], *(result.get("alternatives") or [])]
    for plan in plans:
        one = {**result, "plan": plan, "alternatives": []}
        for fmt in OWN_FORMATS[stack]:
            out = api.export(one, fmt)
            assert out.files and not out.skipped, (stack, fmt, plan["layout"], out.skipped)
        # the torchrun script warns when the launcher cannot split tp × pp itself: never here
        (script,) = api.export(one, "torchrun").files
        assert "# warning: the plan splits" not in script.text, (stack, plan["layout"])
