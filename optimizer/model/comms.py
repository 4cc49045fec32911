"""Collective-communication times (seconds) from message size and link bandwidth.

Ring algorithms (Patarasuk & Yuan 2009; NCCL docs "performance.md" bus-bandwidth definition):
all-reduce moves 2(n−1)/n × bytes per GPU, reduce-scatter and all-gather (n−1)/n × bytes each.
"""

from __future__ import annotations

from optimizer.units import GB

__all__ = ["ring_allreduce_s", "ring_allgather_s", "ring_reduce_scatter_s", "p2p_s", "all_to_all_s"]


def ring_allreduce_s(nbytes: float, n: int, bus_bw_gb_s: float, latency_s: float = 0.0) -> float:
    """Ring all-reduce of `nbytes` over `n` GPUs at bus bandwidth `bus_bw_gb_s` (GB/s)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    # 2(n−1) steps of α + bytes/n·β each (Thakur, Rabenseifner & Gropp 2005, MPICH ring all-reduce)
    return 2.0 * (n - 1) / n * nbytes / (bus_bw_gb_s * GB) + 2 * (n - 1) * latency_s


def ring_allgather_s(nbytes: float, n: int, bus_bw_gb_s: float, latency_s: float = 0.0) -> float:
    """Ring all-gather producing `nbytes` (the full tensor) on each of `n` GPUs."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    return (n - 1) / n * nbytes / (bus_bw_gb_s * GB) + (n - 1) * latency_s


def ring_reduce_scatter_s(nbytes: float, n: int, bus_bw_gb_s: float, latency_s: float = 0.0) -> float:
    """Ring reduce-scatter of an `nbytes` tensor over `n` GPUs (same volume as all-gather)."""
    return ring_allgather_s(nbytes, n, bus_bw_gb_s, latency_s)


def p2p_s(nbytes: float, bw_gb_s: float, latency_s: float = 0.0) -> float:
    """Point-to-point send of `nbytes` over one link."""
    return nbytes / (bw_gb_s * GB) + latency_s if nbytes > 0 else 0.0


def all_to_all_s(
    nbytes: float, n: int, in_node: int, intra_bw_gb_s: float, rail_bw_gb_s: float, latency_s: float = 0.0
) -> float:
    """All-to-all of `nbytes` per GPU over `n` GPUs, `in_node` of them (itself included) in its
    node: nbytes/n goes to each peer as n−1 point-to-point sends (NCCL docs, "Point-to-point
    communication": all-to-all); the in-node share rides NVLink/PCIe, the rest the GPU's NIC
    rail, at once (the slower sets the time)."""
    if n <= 1 or nbytes <= 0:
        return 0.0
    in_node = max(1, min(in_node, n))
    intra = (in_node - 1) / n * nbytes / (intra_bw_gb_s * GB)
    inter = (n - in_node) / n * nbytes / (rail_bw_gb_s * GB) if n > in_node else 0.0
    return max(intra, inter) + (n - 1) * latency_s
