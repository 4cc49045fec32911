"""The intra-node path between two GPUs of a box: NVLink/xGMI, PCIe peer-to-peer, or PCIe
staged through host memory when the GPUs cannot address each other (GeForce cards)."""

from __future__ import annotations

from optimizer.model.cluster import Cluster
from optimizer.model.hardware import GpuSpec
from optimizer.model.setup import PerfAssumptions

__all__ = [
    "pcie_link_gb_s",
    "intra_node_path",
    "intra_node_bw_gb_s",
    "dp_bus_bandwidth_gb_s",
    "p2p_bandwidth_gb_s",
    "PCIE_GT_PER_S",
]

#: transfer rate per lane (GT/s) by PCIe generation (PCI-SIG base specifications 1.0-5.0)
PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}


def pcie_link_gb_s(gen: int, lanes: int) -> float:
    """One direction of a PCIe link in GB/s: GT/s × lanes × encoding / 8 bits (PCI-SIG: 8b/10b
    up to gen 2, 128b/130b from gen 3). Raises KeyError for an unknown generation."""
    encoding = 8 / 10 if gen <= 2 else 128 / 130
    return PCIE_GT_PER_S[gen] * lanes * encoding / 8


def intra_node_path(gpu: GpuSpec) -> str:
    """ "host" when PCIe GPUs cannot talk peer-to-peer (traffic staged through host memory),
    "p2p" for PCIe peer-to-peer, else the GPU's own link (nvlink, xgmi, nvlink-c2c)."""
    if gpu.intra_node_link != "pcie":
        return gpu.intra_node_link
    return "host" if gpu.peer_to_peer is False else "p2p"


def intra_node_bw_gb_s(gpu: GpuSpec, a: PerfAssumptions) -> float:
    """Achieved one-direction bandwidth between two GPUs of a box for collectives (GB/s).

    Peer-to-peer (NVLink or PCIe): the link × link_efficiency. Without P2P, NCCL moves data
    through host memory (device → pinned host buffer → device): the PCIe link (the GPU's
    gen × lanes, or the instance's figure if lower) × host_staged_fraction, measured.
    """
    if intra_node_path(gpu) != "host":
        return gpu.intra_node_bw_gb_s * a.link_efficiency
    link = gpu.intra_node_bw_gb_s
    if gpu.pcie_gen in PCIE_GT_PER_S and gpu.pcie_lanes:
        link = min(link, pcie_link_gb_s(gpu.pcie_gen, gpu.pcie_lanes))
    return link * a.host_staged_fraction


def dp_bus_bandwidth_gb_s(cluster: Cluster, group_spans_nodes: bool, a: PerfAssumptions) -> float:
    """Bus bandwidth of the data-parallel ring in GB/s: NVLink/PCIe inside a node (through host
    memory without peer-to-peer, model.pcie); across nodes the node's NIC (Gbit/s / 8) bounds
    every ring, shared by nothing else (NCCL busBW model)."""
    intra = intra_node_bw_gb_s(cluster.gpu, a)
    if not group_spans_nodes:
        return intra
    return min(intra, cluster.inter_node_gbps / 8.0 * a.link_efficiency)


def p2p_bandwidth_gb_s(cluster: Cluster, spans_nodes: bool, a: PerfAssumptions) -> float:
    """One GPU's point-to-point bandwidth: its NVLink/PCIe share inside a node, its rail (the
    node's NIC bandwidth / GPUs per node, one NIC per GPU on HGX nodes) across nodes."""
    if not spans_nodes:
        return intra_node_bw_gb_s(cluster.gpu, a)
    return cluster.inter_node_gbps / 8.0 / cluster.gpus_per_node * a.link_efficiency
