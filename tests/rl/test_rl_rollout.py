"""The rollout's mechanisms beyond the serving model (issue 46): the host's work per decode
iteration, eager decode, stated engine settings, waves, the spread of response lengths; the
P50 step of a plan and the fix named when a step is too small for any pool.

Numbers are derived on the page: the exponential's moments (E[L] = λ, E[L²] = 2λ²,
max_t t·e^(−t/λ) = λ/e), the constants' stated values, and counts of waves.
"""

from __future__ import annotations

import math

import pytest

from optimizer import api
from optimizer.errors import ConfigError
from optimizer.inputs.gpus import load_gpus
from optimizer.model.cluster import Cluster
from optimizer.model.presets import get_preset
from optimizer.model.rl.lengths import length_weighted_tokens, peak_kv_tokens, response_second_moment
from optimizer.model.rl.phases import generation_phase, rollout_step_s, sync_s
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.model.rl.step import gather_link_gb_s
from optimizer.model.setup import PerfAssumptions

H100 = load_gpus()["H100-80GB"]
A = PerfAssumptions()
RLA = RlAssumptions()


def test_a_decode_iteration_carries_the_host() -> None:
    graphs = RlSetup("grpo", 1, 1, 64, 64, 256, 1024)
    eager = RlSetup("grpo", 1, 1, 64, 64, 256, 1024, rollout_cuda_graphs=False)
    # graphs: the GPU's 5 ms + 1.2 ms of host work the GPU waits for
    assert rollout_step_s(5e-3, 28, graphs, RLA) == pytest.approx(6.2e-3)
    # eager, 28 layers × 0.3 ms = 8.4 ms of launches outlast the GPU's 2 ms: 8.4 + 1.2 ms
    assert rollout_step_s(2e-3, 28, eager, RLA) == pytest.approx(9.6e-3)
    # eager but GPU-bound (a 20 ms iteration): launches hide behind it
    assert rollout_step_s(20e-3, 28, eager, RLA) == pytest.approx(21.2e-3)


def test_eager_small_model_is_host_bound() -> None:
    # GPT-2 (12 layers, ~0.25 GB of weights: ~0.1 ms per iteration on an H100), one sequence per
    # replica: the step waits for the longest response, 1,024 iterations of 12 × 0.3 + 1.2 ms
    rl = RlSetup("grpo", 8, 1, 64, 64, 256, 1024, rollout_tp=1, rollout_cuda_graphs=False)
    gen = generation_phase(get_preset("gpt2"), rl, H100, 8, 8, A, rla=RLA)
    assert gen is not None and gen.tp == 1 and gen.replicas == 8
    assert gen.time_s == pytest.approx(1024 * (12 * 0.3e-3 + 1.2e-3), rel=1e-9)  # 4.92 s
    fast = generation_phase(
        get_preset("gpt2"), RlSetup("grpo", 8, 1, 64, 64, 256, 1024), H100, 8, 8, A, rla=RLA
    )
    assert fast is not None and fast.time_s < 1024 * 12 * 0.3e-3  # with graphs, below the launches alone


def test_waves_wait_for_each_other() -> None:
    # 64 sequences over 8 TP1 replicas = 8 each, in waves of 2: 4 waves, each one as long as
    # a step of 2 sequences per replica (16 sequences) without waves
    model = get_preset("qwen2.5-7b")
    waves = RlSetup("grpo", 64, 1, 128, 256, 512, 1024, rollout_tp=1, rollout_wave=2)
    one = RlSetup("grpo", 16, 1, 128, 256, 512, 1024, rollout_tp=1)
    gw, g1 = generation_phase(model, waves, H100, 8, 8, A), generation_phase(model, one, H100, 8, 8, A)
    assert gw is not None and g1 is not None and gw.waves == 4 and g1.waves == 1
    assert gw.time_s == pytest.approx(4 * g1.time_s, rel=1e-9)


def test_stated_engine_settings_are_kept() -> None:
    model = get_preset("qwen2.5-7b")
    rl = RlSetup("grpo", 64, 8, 128, 256, 512, 1024, rollout_tp=2, rollout_memory_utilization=0.5)
    gen = generation_phase(model, rl, H100, 8, 8, A)
    assert gen is not None and (gen.tp, gen.replicas) == (2, 4)
    assert gen.memory_utilization == pytest.approx(0.5)  # the engine's share of the card


def test_length_moments_of_the_exponential() -> None:
    # a cap far above the mean leaves the exponential: E[L²] = 2 λ², λ = the mean
    assert response_second_moment(100.0, 10**7) == pytest.approx(2 * 100.0**2, rel=1e-4)
    assert response_second_moment(1000.0, 1000) == pytest.approx(1000.0**2)  # all at the cap
    free = RlSetup("grpo", 1, 1, 0.0, 1, 1000.0, 10**7)
    # no prompt: E[T²] / E[T] = 2 λ; the batch's KV peaks at max_t t e^(−t/λ) = λ / e
    assert length_weighted_tokens(free) == pytest.approx(2000.0, rel=1e-4)
    assert peak_kv_tokens(free) == pytest.approx(1000.0 / math.e, rel=1e-4)


def _job(prompts: int) -> dict:
    rl = {
        "prompts_per_step": prompts,
        "samples_per_prompt": 1,
        "prompt_tokens_mean": 256,
        "prompt_tokens_max": 512,
        "response_tokens_mean": 512,
        "response_tokens_max": 1024,
        "steps": 10,
    }
    # on H100s (80 GB) no single GPU holds a 7B model's AdamW update (16 B per parameter)
    on = {"gpu_types": ["H100-80GB"]}
    return {"model": {"preset": "qwen2.5-7b"}, "workload": {"kind": "grpo"}, "rl": rl, "constraints": on}


def test_a_one_sequence_step_names_the_fix_that_helps() -> None:
    with pytest.raises(ConfigError) as err:
        api.rl(_job(1), offline=True)
    text = str(err.value)
    assert text.startswith("rl.prompts_per_step:") and "max_gpus_per_pool" not in text
    # the fix it names: ceil(GPUs of the smallest pool holding the update / 1.5) prompts
    need = int(text.rsplit("prompts_per_step ≥ ", 1)[1].rstrip(")"))
    gpus = int(text.split("update are ", 1)[1].split(" ", 1)[0])
    assert need == math.ceil(gpus / 1.5)
    data = api.rl(_job(need), offline=True)
    assert data["status"] != "infeasible" and data["plan"] is not None  # the fix helps


def test_plan_reports_the_step_at_p50() -> None:
    data = api.rl(_job(64), offline=True)
    step, p50, m = data["plan"]["step"], data["plan"]["step_p50"], RLA.step_band[1]
    assert p50["generation_s"] == pytest.approx(step["generation_s"] * m, abs=2e-3)
    # colocated: phases × the band's median, the weight sync unbanded
    busy = step["generation_s"] + step["logprob_s"] + step["update_s"]
    assert p50["time_s"] == pytest.approx(busy * m + step["sync_s"], abs=5e-3)


def test_colocated_reshard_gathers_the_full_model() -> None:
    # 8 nodes x 8 H100 at 3,200 Gbit/s: each GPU's share of its node's network is
    # 3200 / 8 / 8 = 50 GB/s; a 70e9-parameter model in bf16 is 140 GB per GPU, at efficiency
    # 0.5: 140 / 25 = 5.6 s, plus the 2 s phase switch
    wide = Cluster(H100, 8, 8, 3200.0)
    assert gather_link_gb_s(wide) == pytest.approx(50.0)
    assert sync_s(70e9, 0.0, RLA, gather_link_gb_s(wide)) == pytest.approx(5.6 + 2.0)
    # one node: over NVLink (the GPU's intra-node bandwidth)
    assert gather_link_gb_s(Cluster(H100, 8, 1, 3200.0)) == H100.intra_node_bw_gb_s
