"""N+k redundancy counts instances: a box that fails takes all its replicas with it."""

from __future__ import annotations

import json

import pytest

from optimizer.cli import main

JOB = """[model]
preset = "mistral-7b"
[workload]
kind = "serve"
precision = "fp16"
requests_per_s = 0.5
prompt_tokens = 512
output_tokens = 256
[constraints]
ttft_s = 2.0
tpot_ms = 200
gpu_types = ["RTX3090"]
{redundancy}
"""


def _serve(tmp_path, capsys, redundancy: str) -> dict:
    job = tmp_path / "serve.toml"
    job.write_text(JOB.format(redundancy=redundancy))
    with pytest.raises(SystemExit) as exit_:
        main(["serve", str(job), "--json", "--offline"])
        raise SystemExit(0)
    assert exit_.value.code == 0
    return json.loads(capsys.readouterr().out)["plan"]


def _spare_instances(dep: dict) -> float:
    """Instances beyond those the assigned load keeps busy (by hand from the plan's rates)."""
    busy = sum(
        r / rate
        for r, rate in zip(dep["bucket_requests_per_s"], dep["requests_per_s_per_replica"], strict=True)
        if r
    )
    return dep["instances"] - busy / (dep["replicas"] / dep["instances"])


@pytest.mark.parametrize("k", [1, 2])
def test_n_plus_k_survives_k_instance_failures(tmp_path, capsys, k) -> None:
    plan = _serve(tmp_path, capsys, f'redundancy = "n+{k}"')
    for dep in plan["deployments"]:
        assert dep["replicas"] > dep["instances"]  # several replicas share one box here
        assert dep["instances"] >= k + 1  # two replicas on one box would not survive its loss
        assert _spare_instances(dep) >= k - 1e-9
    assert plan["instance_failures_survived"] >= k
    assert plan["spare_replicas"] == sum(k * d["replicas"] // d["instances"] for d in plan["deployments"])


def test_without_redundancy_the_survivable_failures_are_stated(tmp_path, capsys) -> None:
    plan = _serve(tmp_path, capsys, "")
    spare = min(int(_spare_instances(d) + 1e-9) for d in plan["deployments"])
    assert plan["instance_failures_survived"] == spare
