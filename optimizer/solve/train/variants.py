"""The options a job lets the planner choose (`[search]`): each combination is a variant of
the job's training setup, enumerated like the job itself; CP-SAT then picks among all rows."""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from typing import Any

from optimizer.inputs.jobs.train import Job
from optimizer.model.setup import TrainingSetup

__all__ = ["Variant", "search_variants", "options_of", "AUTO_PRECISIONS", "AUTO_OPTIMIZERS"]

#: "auto" precision: bf16, and fp8 on GPUs that have it (GEMMs in fp8, bf16 master weights)
AUTO_PRECISIONS = ("bf16", "fp8")
#: "auto" optimizer: AdamW, or 8-bit AdamW (bitsandbytes; Dettmers et al. 2022) to save memory
AUTO_OPTIMIZERS = ("adamw", "adam-8bit")


@dataclass(frozen=True)
class Variant:
    """One combination of searched options: the setup and the virtual pipeline stages."""

    setup: TrainingSetup
    virtual_stages: int = 1
    offload: str = "none"  # none | optimizer | params (params: ZeRO-3 only)


def _expand(values: tuple[Any, ...] | None, default: Any, auto: tuple[Any, ...]) -> list[Any]:
    if values is None:
        return [default]
    out: list[Any] = []
    for v in values:
        for x in auto if v == "auto" else (v,):
            if x not in out:
                out.append(x)
    return out


def search_variants(job: Job) -> list[Variant]:
    """Every combination the job's `[search]` table allows (just the job's setup without one)."""
    base: TrainingSetup = job.workload.setup()
    search = getattr(job, "search", None)
    if search is None:
        return [Variant(base)]
    out = []
    for precision, optimizer, offload, sp, vp in product(
        _expand(search.precision, base.precision, AUTO_PRECISIONS),
        _expand(search.optimizer, base.optimizer, AUTO_OPTIMIZERS),
        search.offload,
        _expand(search.sequence_parallel, base.sequence_parallel, ()),
        search.virtual_stages,
    ):
        setup = replace(
            base,
            precision=precision,
            optimizer=optimizer,
            sequence_parallel=sp,
            offload_optimizer=base.offload_optimizer or offload != "none",
            offload_params=base.offload_params or offload == "params",
        )
        out.append(Variant(setup, vp, offload))
    return out


def options_of(setup: TrainingSetup, virtual_stages: int = 1) -> dict[str, Any]:
    """The searched options of a plan, as the JSON contract shows them."""
    offload = "params" if setup.offload_params else "optimizer" if setup.offload_optimizer else "none"
    return {
        "precision": setup.precision,
        "optimizer": setup.optimizer,
        "offload": offload,
        "sequence_parallel": setup.sequence_parallel,
        "virtual_stages": virtual_stages,
    }
