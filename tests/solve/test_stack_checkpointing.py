"""A stack whose launcher checkpoints whole layers is never planned with selective recompute
(stacks.toml checkpointing_modes): its export could only run full checkpointing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from optimizer import api
from optimizer.inputs.jobs.train import job_from_dict
from optimizer.model.layout import stack_checkpointing
from optimizer.model.stacks import get_stack
from optimizer.solve.train.plan import plan_job

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


def test_the_mixed_cluster_search_keeps_to_the_stacks_levels_too(rows) -> None:
    """The H100 + A100 quota case (tests/solve/test_mix.py): 100e9 tokens, at most 2 p5 and 4
    p4de in aws, 230 h. The two-type search reads the job's checkpointing itself (mix/search.py
    balanced_split): selective for generic, full for torchtune, whose switch runs no selective."""
    cat = [r for r in rows if r.instance_type in ("p4de.24xlarge", "p5.48xlarge") and r.region == "us-east-1"]
    levels = {}
    for stack in ("torchtune", "generic"):
        job = job_from_dict(
            {
                "name": "mix",
                "model": {"preset": "llama-2-7b"},
                "workload": {"tokens": 100e9, "seq_len": 4096, "global_batch": 512, "stack": stack},
                "constraints": {
                    "deadline_hours": 230,
                    "activation_checkpointing": ["selective", "full"],
                    "availability": [
                        {"provider": "aws", "instance": "p5.48xlarge", "max_instances": 2},
                        {"provider": "aws", "instance": "p4de.24xlarge", "max_instances": 4},
                    ],
                },
            }
        )
        mix = plan_job(job, cat, alternatives=0).mix
        assert mix is not None and mix.best is not None, stack
        levels[stack] = {r.layout.checkpointing for r in mix.best.rows}
    assert levels == {"generic": {"selective"}, "torchtune": {"full"}}
