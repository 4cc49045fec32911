"""`MemoryBreakdown`: peak memory of one GPU by term (allocated, reserved, device)."""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.units import GIB

__all__ = ["MemoryBreakdown", "MEMORY_KINDS"]


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak memory of one GPU by term, in GiB.

    `total` is the peak allocated (torch.cuda.max_memory_allocated: the terms + allocated
    workspaces in `overhead`); `reserved` adds what the caching allocator holds beyond it
    (max_memory_reserved); `device` adds memory outside the allocator (CUDA context, cuBLAS,
    NCCL): what nvidia-smi shows (PyTorch docs, "CUDA semantics / Memory management").
    """

    weights: float
    gradients: float
    optimizer: float
    activations: float
    kv_cache: float
    overhead: float
    cache: float = 0.0  # reserved − allocated (allocator cache, fragmentation)
    context: float = 0.0  # CUDA context + library workspaces outside the allocator
    #: optimizer state in CUDA managed memory (bitsandbytes paged optimizers): outside the
    #: PyTorch allocator, so not in allocated/reserved, and not in device either: managed pages
    #: are evicted to CPU RAM when the card fills (bitsandbytes docs "Paged optimizers": "page
    #: to CPU RAM when GPU runs out of memory"; CUDA C++ Programming Guide, Unified Memory
    #: oversubscription), so they never make a run not fit
    managed: float = 0.0
    #: the factor a measured peak (`ccopt calibrate --peak-memory-gib`) put on `activations`
    #: for this model × stack; None: the model's own activation count (not calibrated)
    activation_factor: float | None = None

    @classmethod
    def from_bytes(
        cls,
        weights_bytes: float,
        gradients_bytes: float,
        optimizer_bytes: float,
        activations_bytes: float,
        kv_cache_bytes: float,
        overhead_bytes: float,
        *,
        cache_bytes: float,
        context_gib: float,
        managed_bytes: float = 0.0,
        activation_factor: float | None = None,
    ) -> MemoryBreakdown:
        """The breakdown of per-GPU byte counts (the CUDA context comes in GiB already)."""
        return cls(
            weights_bytes / GIB,
            gradients_bytes / GIB,
            optimizer_bytes / GIB,
            activations_bytes / GIB,
            kv_cache_bytes / GIB,
            overhead_bytes / GIB,
            cache=cache_bytes / GIB,
            context=context_gib,
            managed=managed_bytes / GIB,
            activation_factor=activation_factor,
        )

    @property
    def calibrated(self) -> bool:
        """Whether a measured peak of this model × stack calibrated the activation term."""
        return self.activation_factor is not None

    @property
    def total(self) -> float:
        return (
            self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache + self.overhead
        )

    @property
    def allocated(self) -> float:
        return self.total

    @property
    def reserved(self) -> float:
        return self.total + self.cache

    @property
    def device(self) -> float:
        return self.reserved + self.context

    def fits(self, capacity_gib: float) -> bool:
        """Whether the device-level peak (nvidia-smi) fits the card."""
        return self.device <= capacity_gib

    def as_dict(self, digits: int = 3) -> dict[str, float]:
        return {
            k: round(v, digits)
            for k, v in (
                ("weights", self.weights),
                ("gradients", self.gradients),
                ("optimizer", self.optimizer),
                ("activations", self.activations),
                ("kv_cache", self.kv_cache),
                ("overhead", self.overhead),
                ("total", self.total),
                ("reserved", self.reserved),
                ("device", self.device),
            )
        }

    def metric(self, kind: str) -> float:
        """The figure a framework reports: one of MEMORY_KINDS ("nvidia-smi" = "device")."""
        return {
            "allocated": self.total,
            "reserved": self.reserved,
            "device": self.device,
            "nvidia-smi": self.device,
        }[kind]

    @property
    def states(self) -> float:
        """Weights + gradients + optimizer states: exact byte counts of the model and layout."""
        return self.weights + self.gradients + self.optimizer


#: what a measured peak memory may be (MemoryBreakdown.metric): torch.cuda.max_memory_allocated,
#: max_memory_reserved, or the device as nvidia-smi shows it ("device" is the same figure)
MEMORY_KINDS = ("allocated", "reserved", "nvidia-smi", "device")
