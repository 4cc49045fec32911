"""The planner proposes only layouts the job's software stack can run (stacks.toml
tensor_parallel, pipeline_parallel, zero_stages; model/layout.py reads them), `estimate`
refuses the others with one exit-2 line, and a job the stack's limits make infeasible says so
with the nearest fix."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.model.layout import BatchRule, parallel_problems, training_layouts
from optimizer.model.presets import get_preset
from optimizer.model.stacks import get_stack, train_stack_names

ROOT = Path(__file__).resolve().parents[2]
#: what each stack runs, read from the file itself (not through StackProfile)
ROWS = tomllib.loads((ROOT / "optimizer/model/data/stacks.toml").read_text())


def _can(stack: str, key: str) -> Any:
    row = ROWS[stack] if key in ROWS[stack] else ROWS["generic"]
    return row[key]["value"]


def _layouts(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["layout"] for p in [result["plan"], *(result.get("alternatives") or [])] if p]


def _assert_runnable(stack: str, result: dict[str, Any]) -> None:
    assert result["status"] != "infeasible", (stack, result.get("explanation"))
    for lay in _layouts(result):
        if not _can(stack, "tensor_parallel"):
            assert lay["tp"] == 1, (stack, lay)
        if not _can(stack, "pipeline_parallel"):
            assert lay["pp"] == 1, (stack, lay)
        if lay["dp"] > 1:
            assert lay["zero_stage"] in _can(stack, "zero_stages"), (stack, lay)


def test_the_file_says_what_every_training_stack_runs() -> None:
    # every training row states its own four fields, with a source (generic: unrestricted)
    for name in train_stack_names():
        for key in ("tensor_parallel", "pipeline_parallel", "context_parallel", "zero_stages"):
            assert key in ROWS[name], (name, key)
            assert ROWS[name][key]["source"], (name, key)
    assert _can("generic", "zero_stages") == [0, 1, 2, 3]
    # the cases: llm-foundry is FSDP only, torchtune has no pipeline stages, hf-trainer
    # neither tp nor pp, Megatron-LM has no ZeRO-2 (distributed optimizer = 1, FSDP2 = 3)
    assert not _can("llm-foundry", "pipeline_parallel") and not _can("llm-foundry", "tensor_parallel")
    assert _can("torchtune", "tensor_parallel") and not _can("torchtune", "pipeline_parallel")
    assert not _can("hf-trainer", "tensor_parallel") and not _can("hf-trainer", "pipeline_parallel")
    assert _can("megatron-core", "zero_stages") == [0, 1, 3]


def test_the_rulebook_yields_only_what_the_stack_runs() -> None:
    spec = get_preset("llama-2-7b")
    every = training_layouts(spec, 64, 8, BatchRule(1024), (0, 1, 2, 3), (1, 2))
    assert {(lay.tp, lay.pp) for lay in every} >= {(2, 1), (1, 2), (8, 8)}  # the rules alone
    for name in train_stack_names():
        prof = get_stack(name)
        got = training_layouts(spec, 64, 8, BatchRule(1024), (0, 1, 2, 3), (1, 2), stack=prof)
        assert got, name
        assert all(prof.tensor_parallel or lay.tp == 1 for lay in got), name
        assert all(prof.pipeline_parallel or lay.pp == 1 for lay in got), name
        assert {lay.zero_stage for lay in got if lay.dp > 1} == set(_can(name, "zero_stages")), name
        # ... and nothing the stack runs is lost: the same as filtering the unrestricted list
        kept = [
            lay
            for lay in every
            if (prof.tensor_parallel or lay.tp == 1)
            and (prof.pipeline_parallel or lay.pp == 1)
            and (lay.dp == 1 or lay.zero_stage in prof.zero_stages)
            and (lay.dp == 1 or lay.pp == 1 or lay.zero_stage in prof.pipeline_zero_stages)
            # torchtitan splits tensors/layers only under FSDP (its DDP refuses > 1-D, and
            # without FSDP it trains tp/pp in fp32)
            and not (
                prof.splits_need_fsdp and (lay.tp > 1 or lay.pp > 1) and (lay.dp == 1 or lay.zero_stage < 2)
            )
        ]
        assert set(got) == set(kept), name
    titan = training_layouts(
        spec, 64, 8, BatchRule(1024), (0, 1, 2, 3), (1, 2), stack=get_stack("torchtitan")
    )
    assert any(lay.tp > 1 for lay in titan) and any(lay.pp > 1 for lay in titan)
    assert all(lay.dp > 1 and lay.zero_stage >= 2 for lay in titan if lay.tp > 1 or lay.pp > 1)
    # the launchers' own rules (stacks.toml pipeline_zero_stages, with their sources): Megatron-LM's
    # --use-torch-fsdp2 asserts pipeline size 1, DeepSpeed's PipelineEngine asserts ZeRO < 2
    for name in ("megatron-core", "megatron-deepspeed"):
        got = training_layouts(spec, 64, 8, BatchRule(1024), (0, 1, 2, 3), (1, 2), stack=get_stack(name))
        assert any(lay.pp > 1 for lay in got), name
        assert all(lay.zero_stage <= 1 for lay in got if lay.pp > 1 and lay.dp > 1), name


def test_parallel_problems_name_the_field_and_the_stacks_values() -> None:
    spec = get_preset("llama-2-7b")
    (p,) = parallel_problems(spec, num_gpus=16, gpus_per_instance=8, pp=2, stack=get_stack("llm-foundry"))
    assert (p.field, p.message) == ("pp", "2: stack llm-foundry runs no pipeline parallelism; allowed: 1")
    (z,) = parallel_problems(
        spec, num_gpus=16, gpus_per_instance=8, zero_stage=2, stack=get_stack("megatron")
    )
    assert z.field == "zero_stage" and z.message.endswith("allowed: 0, 1, 3")
    # one replica shards nothing: any stage is accepted there
    assert not parallel_problems(spec, num_gpus=8, gpus_per_instance=8, tp=8, stack=get_stack("torchtune"))


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--stack", "llm-foundry", "--pp", "2"], "error: --pp: 2: stack llm-foundry runs no pipeline"),
        (["--stack", "hf-trainer", "--tp", "2"], "error: --tp: 2: stack hf-trainer runs no tensor"),
        (
            ["--stack", "torchtune", "--context-parallel", "2"],
            "error: --context-parallel: 2: stack torchtune",
        ),
        (
            ["--stack", "megatron-core", "--zero-stage", "2"],
            "error: --zero-stage: 2: stack megatron-core does not run ZeRO-2; allowed: 0, 1, 3",
        ),
    ],
)
def test_estimate_refuses_a_layout_the_stack_cannot_run(args: list[str], line: str) -> None:
    base = ["estimate", "--model", "llama-2-7b", "--gpu", "H100-80GB", "--num-gpus", "16"]
    res = CliRunner().invoke(app, base + args)
    assert res.exit_code == 2, res.output
    (out,) = [x for x in res.output.splitlines() if x.strip()]
    assert out.startswith(line), out


def _job(example: str, stack: str) -> dict[str, Any]:
    job = tomllib.loads((ROOT / "examples" / example).read_text())
    job["workload"]["stack"] = stack
    return job


@pytest.mark.parametrize("stack", [n for n in train_stack_names() if n != "generic"])
def test_a_job_that_would_pipeline_plans_within_each_stack(stack: str) -> None:
    # on L40S (PCIe boxes) or B200 the generic stack pipelines this job (on L40S); B200 has
    # the memory a stack without tensor, pipeline or ZeRO-3 sharding needs (unsloth)
    # (on L40S alone: since issue 44 L40S and B200 in bf16 share the pooled band and B200 wins)
    generic = _pipelining(_job("llama7b_10days.toml", "generic"))
    generic["constraints"]["gpu_types"] = ["L40S"]
    assert _layouts(api.plan(generic, offline=True))[0]["pp"] > 1
    _assert_runnable(
        stack, api.plan(_pipelining(_job("llama7b_10days.toml", stack)), offline=True, alternatives=3)
    )


def _pipelining(job: dict[str, Any]) -> dict[str, Any]:
    job.setdefault("constraints", {})["gpu_types"] = ["L40S", "B200"]
    # the cheapest plan (which pipelines on L40S), not the fewer-GPUs rule's pick within 2%
    job.setdefault("assumptions", {})["fewer_gpus_within_share"] = 0.0
    return job


@pytest.mark.parametrize(
    "example",
    [
        "llama3_8b_torchtitan.toml",
        "llama7b_llm_foundry.toml",
        "lora_8b_torchtune.toml",
        "lora_70b_budget.toml",
    ],
)
def test_the_examples_plan_within_their_stack(example: str) -> None:
    job = tomllib.loads((ROOT / "examples" / example).read_text())
    stack = get_stack(job["workload"].get("stack")).name
    _assert_runnable(stack, api.plan(job, offline=True, alternatives=3))


def test_no_layout_the_stack_runs_is_infeasible_with_the_stacks_fix() -> None:
    job = _job("llama7b_10days.toml", "llm-foundry")
    job["model"] = {"preset": "llama-2-70b"}
    job["constraints"]["zero_stages"] = [0, 1, 2]
    job["constraints"]["gpu_types"] = ["L40S"]
    out = api.plan(job, offline=True)
    assert out["status"] == "infeasible"
    text = out["explanation"]["text"]
    assert text.startswith("llm-foundry runs no tensor or pipeline parallelism"), text
    fix = out["explanation"]["fixes"][0]
    assert fix["requirement"] == "stack"
    assert fix["change"].startswith("allow ZeRO-3 (constraints.zero_stages) or choose a stack with")
    assert "megatron-core" in fix["change"] and "llm-foundry" not in fix["change"]
    # the fix works: with ZeRO-3 allowed the same job plans (as FSDP FULL_SHARD), at its point
    # (the L40S's pooled band puts its P80 just past the 10 days)
    job["constraints"]["zero_stages"] = [0, 1, 2, 3]
    job["constraints"]["confidence"] = 0.5
    _assert_runnable("llm-foundry", api.plan(job, offline=True))


def test_a_stack_that_shards_none_of_the_allowed_stages_is_named_as_the_cause() -> None:
    # torchtune shards every multi-GPU run (ZeRO-2/3): with only ZeRO 0/1 allowed a 70B model
    # can train on one tp=8 replica alone, far past the deadline
    job = _job("llama7b_10days.toml", "torchtune")
    job["model"] = {"preset": "llama-2-70b"}
    job["constraints"].update(zero_stages=[0, 1], gpu_types=["H100-80GB"])
    out = api.plan(job, offline=True)
    assert out["status"] == "infeasible"
    text = out["explanation"]["text"]
    assert text.startswith(
        "torchtune runs no pipeline parallelism and runs ZeRO stages 2, 3 only, so of "
        "constraints.zero_stages [0, 1] it plans with none"
    ), text
    assert out["explanation"]["fixes"][0]["change"].startswith("allow ZeRO-3")


def test_a_deadline_binds_first_and_the_stack_is_named_after_it() -> None:
    job = _job("llama7b_10days.toml", "llm-foundry")
    job["constraints"].update(deadline_days=0.2, max_gpus=64)
    out = api.plan(job, offline=True)
    assert out["status"] == "infeasible" and out["binding_constraint"] == "deadline"
    text = out["explanation"]["text"]
    assert text.startswith("the deadline (0.2 days) binds"), text
    assert text.endswith("the stack narrows the search: llm-foundry runs no tensor or pipeline parallelism")
    assert out["explanation"]["fixes"][-1]["requirement"] == "stack"
    # the generic stack narrows nothing: no such sentence
    job["workload"]["stack"] = "generic"
    assert "stack" not in api.plan(job, offline=True)["explanation"]["text"]
