"""What the serving planner returns: deployments of replica options, and the whole result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from optimizer.errors import Status
from optimizer.inputs.jobs.serve import Bucket, ServeConstraints, ServeWorkload
from optimizer.model.spec import ModelSpec
from optimizer.solve.serve.options import BucketPerf, ReplicaOption
from optimizer.units import DAYS_PER_MONTH

__all__ = ["Deployment", "ServeResult", "ServeComparison"]


@dataclass(frozen=True)
class Deployment:
    """Instances of one replica option in the plan."""

    option: ReplicaOption
    instances: int
    assigned_rps: tuple[float, ...]  # per bucket, at the load (with headroom)
    capacity_rps: float  # this deployment's share at the fleet's maximum uniform load

    @property
    def replicas(self) -> int:
        return self.instances * self.option.replicas_per_instance

    @property
    def gpus(self) -> int:
        return self.instances * self.option.offering.gpus_per_instance

    @property
    def usd_per_hour(self) -> float:
        return self.instances * self.option.usd_per_instance_hour

    def busy_replicas(self) -> float:
        """Replicas kept busy by the assigned load (Σ_b rps_b ÷ rate of one replica)."""
        return sum(
            r / p.requests_per_s
            for p, r in zip(self.option.perf, self.assigned_rps, strict=True)
            if p and r > 0
        )

    def spare_instances(self) -> int:
        """Instances that may fail (each taking all its replicas) with the load still carried."""
        busy_instances = self.busy_replicas() / self.option.replicas_per_instance
        return max(0, math.floor(self.instances - busy_instances + 1e-9))

    def served(self) -> list[BucketPerf]:
        """Performance on the buckets this deployment is assigned (all it can serve if none)."""
        got = [p for p, r in zip(self.option.perf, self.assigned_rps, strict=True) if p and r > 0]
        return got or [p for p in self.option.perf if p]

    @property
    def requests_per_s(self) -> float:
        """The load assigned to this deployment, all buckets."""
        return sum(self.assigned_rps)

    @property
    def peak_memory(self) -> BucketPerf:
        """The served bucket that needs the most memory per GPU (what the GPUs must hold)."""
        return max(self.served(), key=lambda p: p.memory_gib)

    @property
    def ttft_s(self) -> float:
        """Time to first token of the slowest served bucket."""
        return max(p.ttft_s for p in self.served())

    @property
    def tpot_s(self) -> float:
        """Time per output token of the slowest served bucket."""
        return max(p.tpot_s for p in self.served())

    @property
    def e2e_s(self) -> float:
        """End-to-end latency of the slowest served bucket."""
        return max(p.e2e_s for p in self.served())


@dataclass(frozen=True)
class ServeResult:
    """Outcome of plan_serving; optimizer.report.serve.serve_json renders the JSON contract."""

    status: Status
    name: str
    model: ModelSpec
    workload: ServeWorkload
    constraints: ServeConstraints
    deployments: tuple[Deployment, ...] = ()
    load_rps: float = 0.0
    capacity_rps: float = 0.0
    explanation: str | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    options: int = 0
    rejected: tuple[str, ...] = ()
    binding: str | None = None  # infeasible: latency | memory | capacity | filters
    #: infeasible: the nearest fixes, [{change, requirement, usd_per_hour}] (USD per served
    #: hour of the plan after the change where it was re-solved, else None)
    fixes: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    catalog: dict[str, Any] | None = None  # source, as_of, age_days, path of the price tables

    @property
    def usd_per_hour(self) -> float:
        return sum(d.usd_per_hour for d in self.deployments)

    @property
    def instance_failures_survived(self) -> int:
        """Instance failures the plan survives, wherever they hit: the fewest spare instances
        of any deployment (each deployment carries its own share of the load)."""
        return min((d.spare_instances() for d in self.deployments), default=0)

    @property
    def params(self) -> float:
        """Parameters of the served model."""
        return self.model.params()

    @property
    def buckets(self) -> tuple[Bucket, ...]:
        """The request buckets the load was split into (workload.request_buckets())."""
        return self.workload.request_buckets()

    @property
    def headroom(self) -> float | None:
        """Capacity over the load, minus 1 (None without load)."""
        return self.capacity_rps / self.load_rps - 1 if self.load_rps else None

    @property
    def replicas(self) -> int:
        return sum(d.replicas for d in self.deployments)

    @property
    def ttft_s(self) -> float:
        """Time to first token of the slowest deployment's slowest bucket."""
        return max(d.ttft_s for d in self.deployments)

    @property
    def tpot_s(self) -> float:
        return max(d.tpot_s for d in self.deployments)

    @property
    def e2e_s(self) -> float:
        return max(d.e2e_s for d in self.deployments)

    @property
    def gpus(self) -> int:
        return sum(d.gpus for d in self.deployments)

    @property
    def spare_replicas(self) -> int:
        """Replicas kept spare: constraints.spare_replicas instances' worth per deployment."""
        return sum(self.constraints.spare_replicas * d.option.replicas_per_instance for d in self.deployments)

    @property
    def usd_per_month(self) -> float:
        """USD per month: USD per served hour × hours_per_day × DAYS_PER_MONTH."""
        return self.usd_per_hour * self.workload.hours_per_day * DAYS_PER_MONTH


@dataclass(frozen=True)
class ServeComparison:
    """Outcome of compare_serving: the best mix over all GPU types, and each type alone."""

    best: ServeResult
    per_gpu: dict[str, ServeResult]
