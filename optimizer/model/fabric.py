"""Default fabric of a GPU class when no instance says: inter-node bandwidth per node.

SXM/HGX/OAM boards (NVLink, xGMI, NVLink-C2C) ship in nodes with one RDMA NIC per GPU:
- Hopper/Blackwell HGX and DGX: 8 × 400 Gbit/s ConnectX-7 = 3200 Gbit/s per node (NVIDIA DGX
  H100 user guide, "Networking": eight single-port OSFP 400 Gb/s; DGX B200 the same; AWS p5
  3200 Gbps EFA).
- A100 HGX/DGX: 8 × 200 Gbit/s HDR = 1600 Gbit/s (DGX A100 user guide: eight ConnectX-6
  200 Gb/s; AWS p4d 400 Gbps EFA is the low end of this class).
- V100 SXM (DGX-1/DGX-2 era): 4 × 100 Gbit/s EDR = 400 Gbit/s (DGX-1 data sheet).
- AMD MI300X/MI355X OAM platforms: 8 × 400 Gbit/s (AMD Instinct MI300X platform guide).
PCIe cards (L4, L40S, A10, RTX, PCIe A100/H100) sit in commodity servers: 100 Gbit/s Ethernet
is the default (a GUESS of the common cloud/colo NIC; `--inter-node-gbps` overrides).
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.model.hardware import GpuSpec

__all__ = [
    "FabricDefault",
    "default_fabric",
    "default_inter_node_gbps",
    "PCIE_DEFAULT_GBPS",
    "HGX_DEFAULT_GBPS",
]

HGX_DEFAULT_GBPS = 3200.0  # 8 × 400 Gbit/s, DGX H100 / B200 (see module docstring)
A100_HGX_GBPS = 1600.0  # 8 × 200 Gbit/s HDR, DGX A100
V100_SXM_GBPS = 400.0  # 4 × 100 Gbit/s EDR, DGX-1
PCIE_DEFAULT_GBPS = 100.0  # GUESS: commodity 100 GbE in PCIe-card servers


@dataclass(frozen=True)
class FabricDefault:
    """The assumed inter-node bandwidth of a GPU class and the sentence saying so."""

    inter_node_gbps: float
    gpu_class: str  # "hgx" (SXM/OAM boards) | "pcie"
    assumption: str


def default_fabric(gpu: GpuSpec) -> FabricDefault:
    """Inter-node bandwidth assumed for `gpu` when no instance or flag gives one."""
    if gpu.intra_node_link == "pcie":
        return FabricDefault(
            PCIE_DEFAULT_GBPS,
            "pcie",
            f"assumed {PCIE_DEFAULT_GBPS:g} Gbit/s Ethernet between nodes "
            f"(PCIe {gpu.gpu_id} servers; pass --inter-node-gbps or --instance)",
        )
    gid = gpu.gpu_id.upper()
    if gid.startswith("A100"):
        gbps, what = A100_HGX_GBPS, "8 × 200 Gbit/s HDR InfiniBand (DGX A100 class)"
    elif gid.startswith("V100"):
        gbps, what = V100_SXM_GBPS, "4 × 100 Gbit/s EDR InfiniBand (DGX-1 class)"
    else:
        gbps, what = HGX_DEFAULT_GBPS, "8 × 400 Gbit/s (DGX/HGX H100-B200 class)"
    return FabricDefault(
        gbps,
        "hgx",
        f"assumed {gbps:g} Gbit/s per node: {what}; pass --inter-node-gbps or --instance for your network",
    )


def default_inter_node_gbps(gpu: GpuSpec) -> float:
    """Gbit/s per node assumed for `gpu` (see `default_fabric`)."""
    return default_fabric(gpu).inter_node_gbps
