"""A stack whose launcher checkpoints whole layers is never planned with selective recompute
(stacks.toml checkpointing_modes): its export could only run full checkpointing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from optimizer import api
from optimizer.model.layout import stack_checkpointing
from optimizer.model.stacks import get_stack

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stack", ["torchtune", "hf-trainer", "llm-foundry"])
def test_whole_layer_stacks_run_no_selective_recompute(stack: str) -> None:
    assert stack_checkpointing(get_stack(stack), ("none", "selective", "full")) == ("none", "full")
    # a job that allows only selective keeps its own choice (nothing else to plan)
    assert stack_checkpointing(get_stack(stack), ("selective",)) == ("selective",)


def test_torchtune_plan_takes_full_where_generic_takes_selective() -> None:
    job = tomllib.loads((ROOT / "examples" / "lora_8b_torchtune.toml").read_text())
    job.setdefault("constraints", {})["activation_checkpointing"] = ["selective", "full"]
    chosen = {}
    for stack in ("torchtune", "generic"):
        job["workload"]["stack"] = stack
        data = api.plan(job, offline=True, alternatives=3)
        layouts = [data["plan"]["layout"]] + [a["layout"] for a in data.get("alternatives", [])]
        chosen[stack] = {lay["activation_checkpointing"] for lay in layouts}
    # the least recompute that fits is selective where the stack can run it (generic) ...
    assert chosen["generic"] == {"selective"}
    # ... and full where its switch checkpoints whole layers (torchtune recipes)
    assert chosen["torchtune"] == {"full"}
