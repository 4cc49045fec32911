"""Why a plan on GPUs without peer-to-peer keeps tensor parallelism off: the counterfactual
tp 2 step through host memory and over peer-to-peer, named in the plan and in its JSON."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from optimizer.model.pcie import intra_node_bw_gb_s, intra_node_path
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import training_step_time
from optimizer.solve.train.enumerate import Candidate

__all__ = ["tp_avoided", "tp_avoided_text", "host_path_warning"]


def tp_avoided(
    c: Candidate, model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions
) -> dict[str, Any] | None:
    """When `c` runs tp 1 on a box whose GPUs cannot talk peer-to-peer, and tp 2 (dp halved,
    grad-accum doubled, same micro-batch: never more memory per GPU) would beat tp 1 were the
    GPUs peers but not through host memory: the step times and bandwidths; else None.
    """
    gpu, lay = c.offering.gpu, c.layout
    if intra_node_path(gpu) != "host" or lay.tp != 1 or lay.dp % 2 or c.offering.gpus_per_instance < 2:
        return None
    cluster = c.offering.cluster(c.instances)
    peer = replace(cluster, gpu=replace(gpu, peer_to_peer=True))
    tp2 = replace(lay, tp=2, dp=lay.dp // 2, grad_accum=lay.grad_accum * 2)
    plan_s = training_step_time(model, setup, lay, cluster, a).time_s
    host_s = training_step_time(model, setup, tp2, cluster, a).time_s
    p2p_s = training_step_time(model, setup, tp2, peer, a).time_s
    p2p_tp1_s = training_step_time(model, setup, lay, peer, a).time_s
    if not (p2p_s < p2p_tp1_s and plan_s <= host_s):
        return None
    return {
        "reason": "no_peer_to_peer",
        "gpu": gpu.gpu_id,
        "tp": 2,
        "host_bw_gb_s": round(intra_node_bw_gb_s(gpu, a), 2),
        "p2p_bw_gb_s": round(intra_node_bw_gb_s(peer.gpu, a), 2),
        "step_time_s": round(plan_s, 3),
        "step_time_s_tp_host": round(host_s, 3),
        "step_time_s_tp_p2p": round(p2p_s, 3),
        "step_time_s_p2p": round(p2p_tp1_s, 3),
    }


def tp_avoided_text(d: dict[str, Any]) -> str:
    """The note a plan prints for `tp_avoided(...)`."""
    return (
        f"tensor parallelism avoided: {d['gpu']} has no peer-to-peer, so TP all-reduces go "
        f"through host memory at {d['host_bw_gb_s']:g} GB/s per direction "
        f"({d['p2p_bw_gb_s']:g} GB/s peer-to-peer); tp {d['tp']} would take "
        f"{d['step_time_s_tp_host']:g} s/step against {d['step_time_s']:g} s for tp 1 "
        f"(were they peers: tp {d['tp']} {d['step_time_s_tp_p2p']:g} s, tp 1 "
        f"{d['step_time_s_p2p']:g} s)"
    )


def host_path_warning(c: Candidate, a: PerfAssumptions) -> list[str]:
    """A plan that does split over GPUs without peer-to-peer says its traffic path."""
    gpu, lay = c.offering.gpu, c.layout
    if intra_node_path(gpu) != "host" or c.offering.gpus_per_instance < 2 or lay.gpus < 2:
        return []
    what = f"tp {lay.tp} all-reduces" if lay.tp > 1 else "gradient all-reduces inside a box"
    return [
        f"{gpu.gpu_id} has no peer-to-peer: {what} go through host memory at "
        f"{intra_node_bw_gb_s(gpu, a):g} GB/s per direction (PCIe, measured host-staged "
        "fraction; assumptions.host_staged_fraction)"
    ]
