"""The one builder of a configuration request: the model spec, the hardware (GPU, instance,
Cluster), and for training the TrainingSetup and Layout — what `estimate` evaluates and what
`calibrate` fits, so both see exactly the same configuration. Every layout rule is the layout
rulebook's (model/layout.py::parallel_problems), raised under the request field's flag."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.models import load_model
from optimizer.inputs.request import (
    DEFAULT_SEQ_LEN,
    DEFAULT_TRAIN_PRECISION,
    SERVE_DEFAULT_PRECISION,
    ConfigRequest,
    flag_of,
)
from optimizer.inputs.request_layout import request_gpus, request_layout
from optimizer.model.fabric import default_fabric
from optimizer.model.hardware import GpuSpec
from optimizer.model.layout import parallel_problems
from optimizer.model.profile import is_profile
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.spec import LINEAR_MODULES, ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.model.step_time import Cluster
from optimizer.pricing.catalog import load_catalog_rows
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import catalog_rows_named, cloud_offering

__all__ = [
    "Built",
    "build_configuration",
    "resolve_model",
    "instance_offering",
    "request_offering",
    "default_seq_len",
    "check_seq_len",
    "serve_default_precision",
    "DEFAULT_TRAIN_PRECISION",
    "DEFAULT_SEQ_LEN",
]


@dataclass(frozen=True)
class Built:
    """A request built: the model, the hardware, and (mode train) the setup and layout."""

    request: ConfigRequest
    spec: ModelSpec
    gpu: GpuSpec
    num_gpus: int
    cluster: Cluster
    stack: str
    precision: str
    seq_len: int
    #: hardware as the output states it (instance, network and whether it is a default)
    where: dict[str, Any]
    setup: TrainingSetup | None = None
    layout: Layout | None = None


def resolve_model(model: str | ModelSpec) -> ModelSpec:
    """A ModelSpec, a preset name or a path to a Hugging Face config.json."""
    if isinstance(model, ModelSpec):
        return model
    return load_model(model)


def serve_default_precision() -> str:
    """The weight format of a serving job file that names none (inputs/jobs/serve.py)."""
    return SERVE_DEFAULT_PRECISION


def default_seq_len(spec: ModelSpec) -> int:
    """The sequence length of a run that gives none: 1 for a per-sample profile (it counts
    samples), else the model's sample length (ViT: 197), else 2048."""
    return 1 if is_profile(spec) else (spec.sample_tokens or DEFAULT_SEQ_LEN)


def check_seq_len(spec: ModelSpec, seq_len: int | None) -> None:
    """A per-sample model takes no sequence length (as the job loader: workload.seq_len).

    Raises:
        ConfigError: "--seq-len: resnet50 is counted per image; allowed: leave --seq-len out".
    """
    if is_profile(spec) and seq_len is not None and seq_len != 1:
        unit = getattr(spec, "sample_unit", "sample")
        raise ConfigError(
            f"--seq-len: {spec.name} is a per-sample model (counted per {unit}); allowed: leave --seq-len out"
        )


def instance_offering(
    instance: str, prices: str | Path | None = None, offline: bool | None = None
) -> Offering:
    """The catalog offering named "PROVIDER:INSTANCE" (its GPUs, links and network).

    Raises:
        ConfigError: malformed, or no such instance in the catalog (with the provider's list).
    """
    provider, sep, name = instance.partition(":")
    if not sep or not provider or not name:
        raise ConfigError(f"--instance: {instance!r} must be PROVIDER:INSTANCE, e.g. aws:p5.48xlarge")
    rows = load_catalog_rows(prices, offline=offline).rows
    match = catalog_rows_named(rows, provider, name, "--instance", "--instance")
    match.sort(key=lambda r: (r.pricing_model != "on_demand", r.region))
    return cloud_offering(match[0], catalog_rows=rows)


def request_offering(req: ConfigRequest, prices: str | Path | None, offline: bool | None) -> Offering | None:
    """The catalog offering of the request's --instance (None without one), whose GPU must be
    the request's --gpu when both are given.

    Raises:
        ConfigError: as instance_offering, or "--gpu: A100-80GB differs from the GPUs of
            aws:p5.48xlarge (H100-80GB)".
    """
    if req.instance is None:
        return None
    offering = instance_offering(req.instance, prices, offline)
    if req.gpu is not None and get_gpu(req.gpu, "--gpu").gpu_id != offering.gpu_id:
        raise ConfigError(f"--gpu: {req.gpu} differs from the GPUs of {req.instance} ({offering.gpu_id})")
    return offering


def _check_layout(spec: ModelSpec, req: ConfigRequest, num_gpus: int, per_instance: int) -> None:
    """The rulebook's first objection, under the flag of the field it concerns. A serving
    replica is tp GPUs (no pipeline or context split; replicas need not fill instances); a
    training layout must also be one its stack runs (stacks.toml tensor_parallel, ...)."""
    train = req.mode == "train"
    problems = parallel_problems(
        spec,
        num_gpus=num_gpus,
        gpus_per_instance=per_instance,
        tp=req.tp,
        pp=req.pp if train else 1,
        cp=req.context_parallel if train else 1,
        vp=req.virtual_stages if train else 1,
        zero_stage=req.zero_stage,
        offload_params=req.offload_params if train else False,
        whole_instances=train,
        stack=get_stack(req.stack, "--stack") if train else None,
    )
    if problems:
        raise ConfigError(f"{flag_of(problems[0].field)}: {problems[0].message}")
    ep = req.expert_parallel if train else 1
    if ep > 1:
        dp_cp = num_gpus // (req.tp * req.pp)
        if not spec.is_moe or spec.moe_experts % ep:
            raise ConfigError(
                f"--expert-parallel: {ep} must divide the experts of an MoE model "
                f"({spec.name} has {spec.moe_experts if spec.is_moe else 'none'})"
            )
        if dp_cp % ep:
            raise ConfigError(f"--expert-parallel: {ep} must divide dp × cp = {dp_cp}")


def _hardware(
    req: ConfigRequest, prices: str | Path | None, offline: bool | None
) -> tuple[GpuSpec, Offering | None, int, int]:
    """(GPU, catalog offering or None, GPUs, GPUs per instance) of the request."""
    offering = request_offering(req, prices, offline) if req.instance else None
    if offering is None and req.gpu is None:
        raise ConfigError("--gpu: give a GPU type or --instance PROVIDER:INSTANCE")
    g = offering.gpu if offering else get_gpu(str(req.gpu), "--gpu")
    gpn = offering.gpus_per_instance if offering else None
    if offering and req.gpus_per_instance is not None and req.gpus_per_instance != gpn:
        raise ConfigError(f"--gpus-per-instance: {req.instance} has {gpn} GPUs per instance")
    return (g, offering, *request_gpus(req, gpn))


def build_configuration(
    req: ConfigRequest, prices: str | Path | None = None, offline: bool | None = None
) -> Built:
    """The configuration `req` describes, checked (the one builder of estimate and calibrate).

    Raises:
        ConfigError: a value out of range or a layout the rulebook refuses (names the flag).
    """
    spec = resolve_model(req.model)
    if req.head is not None and not is_profile(spec):
        spec = spec.with_head("task" if req.head == "task" else "lm")
    check_seq_len(spec, req.seq_len)
    seq_len = req.seq_len if req.seq_len is not None else default_seq_len(spec)
    if is_profile(spec) and req.mode == "serve":
        raise ConfigError(
            f"--mode: {spec.name} is a per-sample profile; allowed: train (serving plans decoder LMs)"
        )
    precision = req.precision or (
        serve_default_precision() if req.mode == "serve" else DEFAULT_TRAIN_PRECISION
    )
    g, offering, n_gpus, gpn = _hardware(req, prices, offline)
    stack = get_stack(req.stack, "--stack").name
    _check_layout(spec, req, n_gpus, gpn)
    nodes = max(1, n_gpus // gpn)
    fabric = default_fabric(g)
    if req.inter_node_gbps is not None:
        cluster = Cluster(g, gpn, nodes, req.inter_node_gbps)
    else:
        cluster = offering.cluster(nodes) if offering else Cluster(g, gpn, nodes, fabric.inter_node_gbps)
    # a documented default, not a published or given figure: the GPU class's (no instance) or
    # the catalog row's own guess (e.g. lambda B200), exactly as plan's inter_node_is_default
    guessed = req.inter_node_gbps is None and (offering is None or offering.inter_node_is_default)
    where: dict[str, Any] = {
        "gpus_per_node": gpn,
        "gpus_per_instance": gpn,
        "inter_node_gbps": cluster.inter_node_gbps,
        "inter_node_assumed": guessed,
        "inter_node_is_default": guessed,
        "instance": f"{offering.provider}:{offering.instance}" if offering else None,
        "provider": offering.provider if offering else None,
        "instance_type": offering.instance if offering else None,
        "stack": stack,
    }
    if offering is None and req.inter_node_gbps is None and nodes > 1:
        where["note"] = fabric.assumption
    built = Built(req, spec, g, n_gpus, cluster, stack, precision, seq_len, where)
    if req.mode == "serve":
        return built
    setup, layout = _training(req, spec, n_gpus, stack, precision, seq_len)
    return Built(req, spec, g, n_gpus, cluster, stack, precision, seq_len, where, setup, layout)


def _training(
    req: ConfigRequest, spec: ModelSpec, n_gpus: int, stack: str, precision: str, seq_len: int
) -> tuple[TrainingSetup, Layout]:
    """The TrainingSetup and Layout of a training request (its layout already checked)."""
    setup = TrainingSetup(
        seq_len=seq_len,
        precision=precision,
        optimizer=req.optimizer,
        method=req.method,
        lora_rank=req.lora_rank,
        attention=req.attention,
        sequence_parallel=req.sequence_parallel,
        stack=stack,
        offload_optimizer=req.offload_optimizer,
        offload_params=req.offload_params,
        fused_kernels=req.fused_kernels,
        loss_kernel="liger" if req.fused_kernels else None,
        lora_targets=req.lora_targets or LINEAR_MODULES,
    )
    return setup, request_layout(req, n_gpus)
