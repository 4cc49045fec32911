"""Scarce on-demand capacity (solve/train/capacity_note.py, issue 43): many on-demand
instances of a Hopper or Blackwell type at once raise a line; clusters, reservations, other
generations and small plans do not."""

from __future__ import annotations

from dataclasses import replace

from optimizer.inputs.gpus import load_gpus
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.setup import Layout, PerfAssumptions
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering
from optimizer.pricing.terms import OfferingTerms
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.capacity_note import capacity_note

GPUS = load_gpus()
A = PerfAssumptions()  # more than 4 instances raise the line (GUESS)


def _plan(
    gpu: str, instances: int, pricing: str = "on_demand", terms: OfferingTerms | None = None
) -> Candidate:
    off = Offering(
        key="k",
        kind="cloud",
        provider="aws",
        instance="p5.48xlarge",
        region="us-east-1",
        pricing=pricing,
        gpu=GPUS[gpu],
        gpus_per_instance=8,
        inter_node_gbps=3200.0,
        usd_per_hour=50.0,
    )
    if terms is not None:
        off = replace(off, terms=terms)
    step = StepTime(2.0, 2.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5, 0.5, False)
    return Candidate(
        off, instances, Layout(dp=8 * instances), MemoryBreakdown(10, 10, 20, 5, 0, 1), step, 1, 1.0, 1.0
    )


def test_sixteen_on_demand_h100_instances_need_a_reservation() -> None:
    line = capacity_note(_plan("H100-80GB", 16), A)
    assert line is not None
    assert line.startswith("capacity: 16 on-demand p5.48xlarge (H100-80GB)")
    assert "capacity reservation" in line


def test_no_line_at_or_below_the_threshold_or_off_the_scarce_generations() -> None:
    assert capacity_note(_plan("H100-80GB", 4), A) is None  # 4 is not more than 4
    assert capacity_note(_plan("B200", 5), A) is not None  # Blackwell is scarce too
    assert capacity_note(_plan("A100-80GB", 64), A) is None  # Ampere: not flagged
    assert capacity_note(_plan("H100-80GB", 16, pricing="reserved_1y"), A) is None
    assert capacity_note(None, A) is None


def test_a_cluster_row_is_sold_as_a_cluster() -> None:
    cluster = OfferingTerms(min_nodes=2, source="https://example.invalid/clusters (clusters.csv)")
    assert capacity_note(_plan("H100-80GB", 16, terms=cluster), A) is None


def test_the_threshold_is_overridable() -> None:
    assert capacity_note(_plan("H100-80GB", 3), replace(A, scarce_on_demand_instances=2)) is not None
    assert capacity_note(_plan("H100-80GB", 16), replace(A, scarce_on_demand_instances=16)) is None
