"""The host as a constraint of a training candidate: loader rate, host RAM, local NVMe.

An offering whose free vCPUs load fewer samples/s than its GPUs consume is slowed to its
loader rate (the step cannot end before its batch is loaded); one with no free vCPU, or
without room on local NVMe for a dataset that must be local, is excluded; a layout whose
offloaded states, pinned buffers and loader workers exceed the host RAM does not fit. Unknown
host figures are not checked and the plan says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.inputs.jobs.data import DataSpec
from optimizer.model.host import (
    host_ram_gib,
    loader_bound_step,
    loader_samples_per_s,
    loader_vcpus,
    loader_workers,
    offloaded_gib_per_gpu,
    samples_per_s_per_vcpu,
)
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering

__all__ = [
    "HostRule",
    "HostCheck",
    "NO_HOST_RULE",
    "host_rule_of",
    "offering_rejection",
    "host_need_gib",
    "check_host",
    "unit_of",
]


@dataclass(frozen=True)
class HostRule:
    """What the job asks of the host (from [data] and PerfAssumptions)."""

    per_vcpu: float | None = None  # samples/s one vCPU loads; None: no [data], not checked
    rate_is_guess: bool = True
    kind: str = "text"
    local_dataset_gb: float | None = None  # access = local: each instance holds the dataset


NO_HOST_RULE = HostRule()


@dataclass(frozen=True)
class HostCheck:
    """The host figures of one candidate (per instance unless named total)."""

    vcpus: float | None
    ram_gib: float | None
    local_nvme_gb: float | None
    ram_needed_gib: float
    offloaded_gib_per_gpu: float
    gpu_samples_per_s: float  # total the GPUs consume at their own speed
    loader_samples_per_s: float | None  # total the loaders deliver (None: not checked)
    slowdown: float = 1.0  # step time / GPU step time (≥ 1: loader-bound)
    notes: tuple[str, ...] = ()


def unit_of(kind: str) -> str:
    return "img/s" if kind == "image" else "samples/s"


def host_rule_of(data: DataSpec | None, assumptions: PerfAssumptions) -> HostRule:
    """The rule of a job's [data] section, or none."""
    if data is None:
        return NO_HOST_RULE
    guess = samples_per_s_per_vcpu(data.kind, assumptions)
    return HostRule(
        per_vcpu=data.rate_per_vcpu(guess),
        rate_is_guess=data.rate_is_guess,
        kind=data.kind,
        local_dataset_gb=data.dataset_gb if data.access == "local" else None,
    )


def offering_rejection(off: Offering, rule: HostRule, a: PerfAssumptions) -> str | None:
    """Why an offering cannot run the job at all (None: it may)."""
    if (
        rule.local_dataset_gb is not None
        and off.local_nvme_gb is not None
        and off.local_nvme_gb < rule.local_dataset_gb
    ):
        disk = (
            f"has {off.local_nvme_gb:,.0f} GB local NVMe/SSD"
            if off.local_nvme_gb
            else "has no local NVMe/SSD (network disks only)"
        )
        return (
            f"excluded: the dataset must be local ({rule.local_dataset_gb:,.0f} GB) and the "
            f"instance {disk}; fix: an instance with more local disk, or data.access = "
            f'"stream" from object storage'
        )
    if (
        rule.per_vcpu is not None
        and off.vcpus is not None
        and loader_vcpus(off.vcpus, off.gpus_per_instance, a.loader_reserve_vcpus_per_gpu) <= 0
    ):
        return (
            f"excluded: {off.vcpus:g} vCPUs leave none for data loading after "
            f"{a.loader_reserve_vcpus_per_gpu:g} per GPU process × {off.gpus_per_instance} "
            f"GPUs; fix: an instance with more vCPUs, or preprocess offline"
        )
    return None


def host_need_gib(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    off: Offering,
    step: StepTime,
    rule: HostRule,
    a: PerfAssumptions,
) -> tuple[float, float]:
    """(host RAM one instance needs, GiB offloaded per GPU) for a layout at its GPU speed."""
    off_gib = offloaded_gib_per_gpu(model, setup, layout, a)
    workers = 0.0
    if rule.per_vcpu is not None:
        instances = max(1, layout.gpus // off.gpus_per_instance)
        need = layout.global_batch / step.time_s / instances
        free = (
            loader_vcpus(off.vcpus, off.gpus_per_instance, a.loader_reserve_vcpus_per_gpu)
            if off.vcpus is not None
            else float("inf")
        )
        workers = loader_workers(need, rule.per_vcpu, free)
    return host_ram_gib(off_gib, off.gpus_per_instance, workers, a), off_gib


def check_host(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    off: Offering,
    instances: int,
    step: StepTime,
    rule: HostRule,
    a: PerfAssumptions,
) -> tuple[StepTime, HostCheck]:
    """The candidate's step with the loader bound applied, and its host figures."""
    ram_need, off_gib = host_need_gib(model, setup, layout, off, step, rule, a)
    gpu_rate = layout.global_batch / step.time_s
    notes: list[str] = []
    loader_total: float | None = None
    out = step
    if rule.per_vcpu is not None:
        if off.vcpus is None:
            notes.append("vCPUs of this instance unknown: the data loader is not checked")
        else:
            loader_total = instances * loader_samples_per_s(
                off.vcpus, off.gpus_per_instance, rule.per_vcpu, a.loader_reserve_vcpus_per_gpu
            )
            out = loader_bound_step(step, layout.global_batch, loader_total)
        if rule.local_dataset_gb is not None and off.local_nvme_gb is None:
            notes.append("local NVMe of this instance unknown: room for the local dataset not checked")
    if off.ram_gib is None and off_gib > 0:
        notes.append(
            f"host RAM of this instance unknown: the plan offloads {off_gib:,.1f} GiB "
            f"per GPU ({off_gib * off.gpus_per_instance:,.0f} GiB per instance) to CPU "
            f"RAM — confirm the host has it"
        )
    return out, HostCheck(
        off.vcpus,
        off.ram_gib,
        off.local_nvme_gb,
        ram_need,
        off_gib,
        gpu_rate,
        loader_total,
        out.time_s / step.time_s,
        tuple(notes),
    )


def loader_words(check: HostCheck, off: Offering, instances: int, rule_kind: str) -> str:
    """ "16 vCPUs decode 1,900 img/s, 8 GPUs need 5,200" for a loader-bound candidate."""
    unit = unit_of(rule_kind)
    gpus = instances * off.gpus_per_instance
    vcpus = (check.vcpus or 0) * instances
    where = f" on {instances} instances" if instances > 1 else ""
    return (
        f"{vcpus:,.0f} vCPUs load {check.loader_samples_per_s or 0:,.0f} {unit}, {gpus} GPUs "
        f"need {check.gpu_samples_per_s:,.0f}{where}"
    )
