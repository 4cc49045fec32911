"""`[search]`: the planner chooses precision, optimizer, offload, sequence parallelism and
virtual pipeline stages where the job allows, and the plan says what it chose."""

from __future__ import annotations

import tomllib
from pathlib import Path

from optimizer import api
from optimizer.inputs.jobs.train import job_from_dict
from optimizer.solve.train.variants import search_variants

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str, **search) -> dict:
    data = tomllib.loads((EXAMPLES / f"{name}.toml").read_text())
    if search:
        data["search"] = search
    return data


def test_auto_expands_to_the_documented_values():
    job = job_from_dict(
        _example(
            "finetune_8b_4090_vs_cloud", precision=["auto"], optimizer=["auto"], offload=["none", "optimizer"]
        )
    )
    combos = {(v.setup.precision, v.setup.optimizer, v.offload) for v in search_variants(job)}
    assert combos == {
        (p, o, off) for p in ("bf16", "fp8") for o in ("adamw", "adam-8bit") for off in ("none", "optimizer")
    }
    assert len(search_variants(job_from_dict(_example("finetune_8b_4090_vs_cloud")))) == 1


def test_searching_the_optimizer_never_costs_more_and_reports_the_choice(no_user_state):
    base = api.plan(job_from_dict(_example("finetune_8b_4090_vs_cloud")), offline=True, alternatives=0)
    wide = api.plan(
        job_from_dict(_example("finetune_8b_4090_vs_cloud", optimizer=["auto"], precision=["auto"])),
        offline=True,
        alternatives=0,
    )
    assert wide["plan"]["cost_usd"] <= base["plan"]["cost_usd"] + 0.01
    chosen = wide["plan"]["options"]
    assert chosen["optimizer"] in ("adamw", "adam-8bit") and chosen["precision"] in ("bf16", "fp8")
    assert base["plan"]["options"] == {
        "precision": "bf16",
        "optimizer": "adamw",
        "offload": "none",
        "sequence_parallel": None,
        "virtual_stages": 1,
    }


def test_virtual_stages_only_on_pipelined_layouts(no_user_state):
    data = api.plan(
        job_from_dict(_example("lora_70b_budget", virtual_stages=[1, 2])), offline=True, alternatives=3
    )
    for plan in [data["plan"], *data["alternatives"]]:
        vp = plan["options"]["virtual_stages"]
        assert vp == plan["layout"].get("vp", 1)
        assert vp == 1 or plan["layout"]["pp"] > 1


def test_marketplace_hosts_scale_out_over_the_internet_only_when_allowed(no_user_state):
    base = _example("lora_70b_budget")
    base["constraints"]["gpu_types"] = ["RTX4090"]
    base["constraints"]["providers"] = ["vast"]
    # 12 days: RTX 4090s all-reduce through host memory (no peer-to-peer), so the example's
    # 5 days are out of reach on 4090s; 2 hosts meet 12 days for about $1,500 (11.3 days), one
    # host needs 22 days. Budget $1,600: the 2-host plan sits at the example's $1,500 edge (the
    # 2026-12-05 refit put it $0.50 over), which is not what this test is about
    base["constraints"]["deadline_days"] = 12
    base["constraints"]["budget_usd"] = 1600
    base["constraints"]["confidence"] = 0.5  # the scenario of the comment above: at the median
    one = api.plan(job_from_dict(base), offline=True, alternatives=0)
    assert one["status"] == "infeasible" or one["plan"]["instances"] == 1
    base["constraints"]["allow_internet_multi_node"] = True
    many = api.plan(job_from_dict(base), offline=True, alternatives=0)
    assert many["status"] == "optimal" and many["plan"]["instances"] > 1
    assert many["plan"]["inter_node_kind"] == "internet"
    assert any("relies on the public internet" in n for n in many["notes"])
