"""Default fabric of a GPU when no instance says: inter-node bandwidth per node.

The figure and the network it assumes are columns of the GPU tables (pricing_data/gpus.csv
`default_inter_node_gbps`, `fabric`, with their sources in `fabric_source`): SXM/OAM boards
(NVLink, xGMI, NVLink-C2C) ship in nodes with one RDMA NIC per GPU (DGX H100: 8 × 400 Gbit/s;
DGX A100: 8 × 200; DGX-1: 4 × 100), PCIe cards sit in commodity servers (100 Gbit/s Ethernet,
a GUESS). `--inter-node-gbps` or `--instance` override it.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.model.hardware import GpuSpec

__all__ = ["FabricDefault", "default_fabric", "default_inter_node_gbps"]


@dataclass(frozen=True)
class FabricDefault:
    """The assumed inter-node bandwidth of a GPU and the sentence saying so."""

    inter_node_gbps: float
    gpu_class: str  # "hgx" (SXM/OAM boards) | "pcie" (by the GPU's intra-node link)
    assumption: str


def default_fabric(gpu: GpuSpec) -> FabricDefault:
    """Inter-node bandwidth assumed for `gpu` when no instance or flag gives one (the GPU table's
    default_inter_node_gbps and fabric)."""
    gbps = gpu.default_inter_node_gbps
    if gpu.intra_node_link == "pcie":
        return FabricDefault(
            gbps,
            "pcie",
            f"assumed {gbps:g} Gbit/s {gpu.fabric} between nodes "
            f"(PCIe {gpu.gpu_id} servers; pass --inter-node-gbps or --instance)",
        )
    return FabricDefault(
        gbps,
        "hgx",
        f"assumed {gbps:g} Gbit/s per node: {gpu.fabric}; "
        f"pass --inter-node-gbps or --instance for your network",
    )


def default_inter_node_gbps(gpu: GpuSpec) -> float:
    """Gbit/s per node assumed for `gpu` (see `default_fabric`)."""
    return gpu.default_inter_node_gbps
