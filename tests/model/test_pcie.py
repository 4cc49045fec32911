"""GPUs without peer-to-peer: PCIe link rates, the host-staged path and what tensor parallelism
costs over it, derived by hand from the PCI-SIG rates and the measured host-staged copy."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimizer import api
from optimizer.inputs.gpus import get_gpu
from optimizer.model.pcie import intra_node_bw_gb_s, intra_node_path, pcie_link_gb_s
from optimizer.model.presets import get_preset
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.step_time import Cluster, microbatch_times_s


def test_pcie_link_rates_per_direction():
    # PCI-SIG: gen 3 8 GT/s, gen 4 16, gen 5 32, 128b/130b; gen 2 5 GT/s, 8b/10b; ÷ 8 bits
    assert pcie_link_gb_s(4, 16) == pytest.approx(16 * 16 * 128 / 130 / 8)  # 31.51 GB/s
    assert pcie_link_gb_s(3, 16) == pytest.approx(15.754, abs=1e-3)
    assert pcie_link_gb_s(5, 8) == pytest.approx(31.508, abs=1e-3)
    assert pcie_link_gb_s(2, 16) == pytest.approx(8.0)


def test_catalog_says_who_talks_peer_to_peer():
    rtx = get_gpu("RTX4090")
    assert (rtx.peer_to_peer, rtx.pcie_gen, rtx.pcie_lanes) == (False, 4, 16)
    assert intra_node_path(rtx) == "host"
    assert get_gpu("RTX3090").peer_to_peer is False
    assert intra_node_path(get_gpu("H100-80GB")) == "nvlink"
    assert get_gpu("L4").peer_to_peer is None and intra_node_path(get_gpu("L4")) == "p2p"


def test_host_staged_bandwidth_by_hand():
    a = PerfAssumptions()
    rtx = get_gpu("RTX4090")
    # measured: 25.8 GB/s bidirectional with P2P disabled on gen 4 x16 → 12.9 per direction,
    # 0.41 of 31.5; the catalog link is 31 GB/s (below 31.51), so 31 × 0.41
    assert intra_node_bw_gb_s(rtx, a) == pytest.approx(31 * 0.41)
    # an instance wiring the card at x8 (15.75 GB/s) halves it
    assert intra_node_bw_gb_s(replace(rtx, intra_node_bw_gb_s=15.75), a) == pytest.approx(15.75 * 0.41)
    # were the cards peers: the link × link_efficiency 0.8
    assert intra_node_bw_gb_s(replace(rtx, peer_to_peer=True), a) == pytest.approx(31 * 0.8)
    assert intra_node_bw_gb_s(rtx, PerfAssumptions(host_staged_fraction=0.2)) == pytest.approx(6.2)


def test_tensor_parallel_all_reduce_through_host_memory_by_hand():
    # Llama-2-7B, 2,048 tokens per micro-batch, tp 2, no recompute: 4 all-reduces of
    # 2048 × 4096 × 2 bytes per layer, 32 layers, ring 2(n-1)/n = 1, at 31 × 0.41 GB/s
    model = get_preset("llama-2-7b")
    setup = TrainingSetup(seq_len=2048)
    a = PerfAssumptions(small_message_latency_s=0.0, tp_overlap=0.0)
    lay = Layout(dp=1, tp=2, micro_batch=1, grad_accum=1)
    host = microbatch_times_s(model, setup, lay, Cluster(get_gpu("RTX4090"), 2), a)[1]
    nbytes = 2048 * 4096 * 2
    assert host == pytest.approx(32 * 4 * nbytes / (31 * 0.41 * 1e9), rel=1e-9)  # 0.1689 s
    peer = microbatch_times_s(
        model, setup, lay, Cluster(replace(get_gpu("RTX4090"), peer_to_peer=True), 2), a
    )[1]
    assert host / peer == pytest.approx(0.8 / 0.41)


MISTRAL = {
    "name": "m",
    "model": {"preset": "mistral-7b"},
    "workload": {"kind": "finetune", "tokens": 1e9, "seq_len": 2048, "global_batch": 16},
    "constraints": {"gpu_types": ["RTX4090"], "deadline_days": 60},
}


def test_plan_on_geforce_names_the_host_path(no_user_state):
    data = api.plan(MISTRAL, offline=True, alternatives=0)
    p = data["plan"]
    assert p["intra_node_path"] == "host" and p["intra_node_bw_gb_s"] == pytest.approx(12.71)
    assert any("no peer-to-peer" in w and "12.71 GB/s" in w for w in p["warnings"])
    assert p["tensor_parallel_avoided"] is None  # the model finds no tp 2 win over P2P here
    # a host path as fast as peer-to-peer makes the same plan faster
    fast = api.plan({**MISTRAL, "assumptions": {"host_staged_fraction": 0.8}}, offline=True, alternatives=0)[
        "plan"
    ]
    assert fast["step_time_s"] < p["step_time_s"]


def test_plan_says_when_it_avoided_tp_for_want_of_peer_to_peer(no_user_state, monkeypatch):
    # the rule, with step times set by hand: tp 2 beats tp 1 over peer-to-peer (2.4 < 2.6 s)
    # but not through host memory (3.6 > 3.0 s) → the plan names it, in text and JSON
    import optimizer.solve.train.pcie_note as note

    times = {(1, False): 3.0, (2, False): 3.6, (1, True): 2.6, (2, True): 2.4}

    class _Step:
        def __init__(self, t: float) -> None:
            self.time_s = t

    monkeypatch.setattr(
        note,
        "training_step_time",
        lambda model, setup, lay, cluster, a: _Step(times[(lay.tp, bool(cluster.gpu.peer_to_peer))]),
    )
    lora = {**MISTRAL, "workload": {**MISTRAL["workload"], "kind": "lora"}}
    data = api.plan(lora, offline=True, alternatives=0)
    assert data["plan"]["layout"]["tp"] == 1 and data["plan"]["layout"]["dp"] % 2 == 0
    d = data["plan"]["tensor_parallel_avoided"]
    assert d == {
        "reason": "no_peer_to_peer",
        "gpu": "RTX4090",
        "tp": 2,
        "host_bw_gb_s": 12.71,
        "p2p_bw_gb_s": 24.8,
        "step_time_s": 3.0,
        "step_time_s_tp_host": 3.6,
        "step_time_s_tp_p2p": 2.4,
        "step_time_s_p2p": 2.6,
    }
    assert any(n.startswith("tensor parallelism avoided: RTX4090 has no peer-to-peer") for n in data["notes"])
    # and not when tp 2 would lose over peer-to-peer too
    times[(2, True)] = 2.7
    assert api.plan(lora, offline=True, alternatives=0)["plan"]["tensor_parallel_avoided"] is None
