"""`estimate`: memory and speed of one fixed configuration, through the same model calls, the
same defaults and (with `instance`) the same hardware as the planners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.inputs.aliases import warn_renamed
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.serve import ServeWorkload
from optimizer.inputs.models import load_model
from optimizer.inputs.validation import check_number
from optimizer.model.estimate_figures import serve_estimate_figures, train_estimate_figures
from optimizer.model.fabric import default_fabric
from optimizer.model.fitted import step_band
from optimizer.model.memory import serving_memory, training_memory
from optimizer.model.profile import is_profile
from optimizer.model.serving import serving_max_batch, serving_perf
from optimizer.model.setup import (
    ATTENTION_KERNELS,
    CHECKPOINTING,
    KV_PRECISIONS,
    METHODS,
    OPTIMIZERS,
    TRAIN_PRECISIONS,
    WEIGHT_PRECISIONS,
    Layout,
    PerfAssumptions,
    ServeSetup,
    TrainingSetup,
)
from optimizer.model.spec import LINEAR_MODULES, ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.model.step_time import Cluster, compute_efficiency, training_step_time
from optimizer.pricing.catalog import load_catalog_rows
from optimizer.pricing.offering import Offering
from optimizer.pricing.offerings import cloud_offering
from optimizer.report.estimate import serve_estimate_json, train_estimate_json

__all__ = [
    "estimate",
    "resolve_model",
    "instance_offering",
    "method_of_kind",
    "default_seq_len",
    "serve_default_precision",
    "DEFAULT_TRAIN_PRECISION",
    "KIND_METHODS",
    "check_seq_len",
]


#: sequence length of an LM estimate when neither the flag nor the model gives one
DEFAULT_SEQ_LEN = 2048
#: training precision when none is given (as a job file's workload.precision)
DEFAULT_TRAIN_PRECISION = "bf16"
#: a job file's workload.kind -> the training method it means (pretrain and finetune: full)
KIND_METHODS: dict[str, str] = {"pretrain": "full", "finetune": "full", "lora": "lora", "qlora": "qlora"}


def method_of_kind(kind: str, field: str = "--kind") -> str:
    """The training method (full | lora | qlora) of a workload kind (pretrain | finetune | lora
    | qlora, as in a job file).

    Raises:
        ConfigError: an unknown kind (names the allowed ones).
    """
    return KIND_METHODS[_choice(field, kind, tuple(KIND_METHODS))]


def serve_default_precision() -> str:
    """The weight format of a serving job file that names none (inputs/jobs/serve.py)."""
    return ServeWorkload.model_construct().weight_precision


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


def resolve_model(model: str | ModelSpec) -> ModelSpec:
    """A ModelSpec, a preset name or a path to a Hugging Face config.json."""
    if isinstance(model, ModelSpec):
        return model
    return load_model(model)


def _choice(field: str, value: str, allowed: tuple[str, ...] | list[str]) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise ConfigError(f"{field}: {value!r} is not allowed; allowed: {', '.join(allowed)}")
    return v


def _targets(targets: tuple[str, ...] | None) -> tuple[str, ...]:
    if not targets:
        return LINEAR_MODULES
    bad = [t for t in targets if t not in LINEAR_MODULES]
    if bad:
        raise ConfigError(
            f"--lora-targets: {', '.join(bad)} not allowed; allowed: {', '.join(LINEAR_MODULES)}"
        )
    return tuple(targets)


#: upper ends of the flags' ranges (each also > 0 and finite); far beyond any real run
_FLAG_MAX: dict[str, float] = {
    "--num-gpus": 10**6,
    "--tp": 1024,
    "--pp": 1024,
    "--context-parallel": 1024,
    "--virtual-stages": 64,
    "--micro-batch": 2**20,
    "--seq-len": 2**22,
    "--context": 2**22,
    "--global-batch": 2**24,
    "--lora-rank": 65_536,
    "--gpus-per-instance": 1024,
    "--inter-node-gbps": 100_000,
    "--output-tokens": 2**22,
    "--prompt-tokens": 2**22,
    "--batch": 2**20,
}
#: flags that take a real number (the others are counts)
_REAL_FLAGS = ("--inter-node-gbps",)


def _positive(field: str, value: int | float | None) -> None:
    """A flag's value: finite, > 0 and at most _FLAG_MAX (a count also whole).

    Raises:
        ConfigError: "--inter-node-gbps: nan is not allowed; allowed: a number > 0 and ≤ 100000".
    """
    check_number(value, field, gt=0, le=_FLAG_MAX.get(field), integer=field not in _REAL_FLAGS)


def _renamed(new: Any, old: Any, new_name: str, old_name: str, default: Any) -> Any:
    """A keyword with an old spelling (warns once; both given and different: bad input)."""
    if old is None:
        return default if new is None else new
    warn_renamed(old_name, new_name)
    if new is not None and new != old:
        raise ConfigError(f"{new_name} {new} and {old_name} {old} disagree; give only {new_name}")
    return old


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
    same = [r for r in rows if r.provider == provider.lower()]
    if not same:
        known = ", ".join(sorted({r.provider for r in rows}))
        raise ConfigError(f"--instance: provider {provider!r} is not in the catalog; allowed: {known}")
    match = [r for r in same if r.instance_type.lower() == name.lower()]
    if not match:
        names = ", ".join(sorted({r.instance_type for r in same})[:12])
        raise ConfigError(f"--instance: {name!r} is not a {provider} instance in the catalog; e.g. {names}")
    match.sort(key=lambda r: (r.pricing_model != "on_demand", r.region))
    return cloud_offering(match[0], catalog_rows=rows)


def estimate(
    model: str | ModelSpec,
    gpu: str | None = None,
    *,
    num_gpus: int | None = None,
    gpus_per_instance: int | None = None,
    instance: str | None = None,
    prices: str | Path | None = None,
    offline: bool | None = None,
    tp: int = 1,
    pp: int = 1,
    context_parallel: int = 1,
    virtual_stages: int = 1,
    zero_stage: int | None = None,
    activation_checkpointing: str | None = None,
    sequence_parallel: bool | None = None,
    micro_batch: int = 1,
    global_batch: int | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    optimizer: str = "adamw",
    method: str = "full",
    kind: str | None = None,
    lora_rank: int = 16,
    attention: str | None = None,
    inter_node_gbps: float | None = None,
    stack: str = "generic",
    mode: str = "train",
    batch: int | str = 1,
    context: int | None = None,
    prompt_tokens: int | None = None,
    output_tokens: int = 256,
    kv_cache_precision: str = "fp16",
    assumptions: PerfAssumptions | None = None,
    offload_optimizer: bool = False,
    offload_params: bool = False,
    lora_targets: tuple[str, ...] | None = None,
    gpus: int | None = None,
    zero: int | None = None,
    checkpointing: str | None = None,
    quantization: str | None = None,
    gpus_per_node: int | None = None,
) -> dict[str, Any]:
    """Memory and speed of one fixed configuration, as the `ccopt estimate --json` contract.

    `instance` ("aws:p5.48xlarge") takes the GPU, GPUs per instance, intra-node link and network
    from the catalog, exactly as the planners do; without it the network is the GPU class's
    default (model/fabric.py) and the output says it assumed it. Serving rates are those of a
    request of `prompt_tokens` + `output_tokens` (context = their sum), as `serve` computes per
    request bucket. `gpus`, `zero`, `checkpointing`, `quantization` and `gpus_per_node` are the
    old names of `num_gpus`, `zero_stage`, `activation_checkpointing`, `precision` (serve) and
    `gpus_per_instance`. `precision` None: bf16 to train, the serving job file's default
    (fp16) to serve. `kind` (pretrain | finetune | lora | qlora, as a job file's workload.kind)
    sets `method` (pretrain and finetune: full).

    Raises:
        ConfigError: a value out of range (names the flag and the allowed values).
    """
    spec = resolve_model(model)
    mode = _choice("--mode", mode, ("train", "serve"))
    check_seq_len(spec, seq_len)
    if seq_len is None:  # the model's own sample length (a profile counts samples), else 2048
        seq_len = default_seq_len(spec)
    if is_profile(spec) and mode == "serve":
        raise ConfigError(
            f"--mode: {spec.name} is a per-sample profile; allowed: train (serving plans decoder LMs)"
        )
    num_gpus = _renamed(num_gpus, gpus, "--num-gpus", "--gpus", None)
    zero_stage = _renamed(zero_stage, zero, "--zero-stage", "--zero", 0)
    ckpt_value = _renamed(
        activation_checkpointing, checkpointing, "--activation-checkpointing", "--checkpointing", "none"
    )
    gpus_per_instance = _renamed(
        gpus_per_instance, gpus_per_node, "--gpus-per-instance", "--gpus-per-node", None
    )
    precision = _renamed(precision, quantization, "--precision", "--quantization", None)
    if precision is None:
        precision = serve_default_precision() if mode == "serve" else DEFAULT_TRAIN_PRECISION
    if kind is not None:
        method = method_of_kind(kind)
    offering = instance_offering(instance, prices, offline) if instance else None
    if offering is None and gpu is None:
        raise ConfigError("--gpu: give a GPU type or --instance PROVIDER:INSTANCE")
    if offering is not None and gpu is not None and get_gpu(gpu, "--gpu").gpu_id != offering.gpu_id:
        raise ConfigError(f"--gpu: {gpu} differs from the GPUs of {instance} ({offering.gpu_id})")
    g = offering.gpu if offering else get_gpu(str(gpu), "--gpu")
    gpn = offering.gpus_per_instance if offering else None
    if offering and gpus_per_instance is not None and gpus_per_instance != gpn:
        raise ConfigError(f"--gpus-per-instance: {instance} has {gpn} GPUs per instance")
    n_gpus = num_gpus if num_gpus is not None else (gpn or 1)
    gpn = gpn or gpus_per_instance or min(n_gpus, 8)
    for name, value in (
        ("--num-gpus", n_gpus),
        ("--tp", tp),
        ("--pp", pp),
        ("--context-parallel", context_parallel),
        ("--virtual-stages", virtual_stages),
        ("--micro-batch", micro_batch),
        ("--seq-len", seq_len),
        ("--context", context),
        ("--global-batch", global_batch),
        ("--lora-rank", lora_rank),
        ("--gpus-per-instance", gpn),
        ("--inter-node-gbps", inter_node_gbps),
        ("--output-tokens", output_tokens),
        ("--prompt-tokens", prompt_tokens),
    ):
        _positive(name, value)
    if zero_stage not in (0, 1, 2, 3):
        raise ConfigError(f"--zero-stage: {zero_stage} is not allowed; allowed: 0, 1, 2, 3")
    stack_name = get_stack(stack, "--stack").name
    if spec.heads % tp or spec.n_kv_heads % tp:
        raise ConfigError(
            f"--tp: {tp} must divide the attention heads ({spec.heads}) and KV heads "
            f"({spec.n_kv_heads}) of {spec.name}"
        )
    a = assumptions or base_assumptions()
    if n_gpus % gpn and mode == "train":
        raise ConfigError(f"--num-gpus: {n_gpus} must be a multiple of the GPUs per instance ({gpn})")
    if tp > gpn:
        raise ConfigError(f"--tp: {tp} exceeds the GPUs per instance ({gpn}); TP stays within an instance")
    nodes = max(1, n_gpus // gpn)
    cluster = offering.cluster(nodes) if offering else None
    fabric = default_fabric(g)
    if inter_node_gbps is not None:
        cluster = Cluster(g, gpn, nodes, inter_node_gbps)
    elif cluster is None:
        cluster = Cluster(g, gpn, nodes, fabric.inter_node_gbps)
    # a documented default, not a published or given figure: the GPU class's (no instance) or
    # the catalog row's own guess (e.g. lambda B200), exactly as plan's inter_node_is_default
    guessed = inter_node_gbps is None and (offering is None or offering.inter_node_is_default)
    where = {
        "gpus_per_node": gpn,
        "gpus_per_instance": gpn,
        "inter_node_gbps": cluster.inter_node_gbps,
        "inter_node_assumed": guessed,
        "inter_node_is_default": guessed,
        "instance": f"{offering.provider}:{offering.instance}" if offering else None,
        "provider": offering.provider if offering else None,
        "instance_type": offering.instance if offering else None,
        "stack": stack_name,
    }
    if offering is None and inter_node_gbps is None and nodes > 1:
        where["note"] = fabric.assumption
    if mode == "serve":
        return _serve(
            spec,
            g,
            n_gpus,
            tp,
            precision,
            batch,
            context,
            prompt_tokens,
            output_tokens,
            kv_cache_precision,
            stack_name,
            a,
            where,
        )
    return _train(
        spec,
        g,
        n_gpus,
        cluster,
        a,
        where,
        tp=tp,
        pp=pp,
        cp=context_parallel,
        vp=virtual_stages,
        zero_stage=zero_stage,
        ckpt=ckpt_value,
        sequence_parallel=sequence_parallel,
        micro_batch=micro_batch,
        global_batch=global_batch,
        seq_len=seq_len,
        precision=precision,
        optimizer=optimizer,
        method=method,
        lora_rank=lora_rank,
        attention=attention,
        stack=stack_name,
        offload_optimizer=offload_optimizer,
        offload_params=offload_params,
        lora_targets=lora_targets,
    )


def _serve(
    spec: ModelSpec,
    g: Any,
    n_gpus: int,
    tp: int,
    precision: str,
    batch: int | str,
    context: int | None,
    prompt_tokens: int | None,
    output_tokens: int,
    kv: str,
    stack: str,
    a: PerfAssumptions,
    where: dict[str, Any],
) -> dict[str, Any]:
    quant = _choice("--precision", precision, list(WEIGHT_PRECISIONS))
    kv = _choice("--kv-cache-precision", kv, KV_PRECISIONS)
    if n_gpus % tp:
        raise ConfigError(f"--num-gpus: {n_gpus} must be a multiple of --tp ({tp})")
    prompt = prompt_tokens or (context - output_tokens if context and context > output_tokens else 1024)
    ctx = context or prompt + output_tokens
    setup = ServeSetup(
        weight_precision=quant,
        kv_precision=kv,
        batch=1,
        context=ctx,
        stack=stack,
        output_tokens=output_tokens,
    )
    if isinstance(batch, str):
        if batch.strip().lower() != "max":
            raise ConfigError(f"--batch: {batch!r} is not allowed; allowed: an integer > 0 or max")
        size = serving_max_batch(spec, setup, g, tp, a)
        if size < 1:
            raise ConfigError(
                f"--batch max: one {ctx}-token sequence of {spec.name} at {quant} "
                f"does not fit {tp}× {g.gpu_id}"
            )
    else:
        _positive("--batch", batch)
        size = batch
    setup = ServeSetup(
        weight_precision=quant,
        kv_precision=kv,
        batch=size,
        context=ctx,
        stack=stack,
        output_tokens=output_tokens,
    )
    mem = serving_memory(spec, setup, tp, a)
    perf = serving_perf(spec, setup, g, tp, prompt, output_tokens, a)
    figures = serve_estimate_figures(spec, g, n_gpus, tp, mem, perf)
    return serve_estimate_json(spec, g, n_gpus, setup, tp, mem, perf, where, figures=figures)


def _train(
    spec: ModelSpec,
    g: Any,
    n_gpus: int,
    cluster: Cluster,
    a: PerfAssumptions,
    where: dict[str, Any],
    *,
    tp: int,
    pp: int,
    cp: int,
    vp: int,
    zero_stage: int,
    ckpt: str,
    sequence_parallel: bool | None,
    micro_batch: int,
    global_batch: int | None,
    seq_len: int,
    precision: str,
    optimizer: str,
    method: str,
    lora_rank: int,
    attention: str | None,
    stack: str,
    offload_optimizer: bool,
    offload_params: bool,
    lora_targets: tuple[str, ...] | None,
) -> dict[str, Any]:
    precision = _choice("--precision", precision, TRAIN_PRECISIONS)
    setup = TrainingSetup(
        seq_len=seq_len,
        precision=precision,
        optimizer=_choice("--optimizer", optimizer, OPTIMIZERS),
        method=_choice("method (--kind)", method, METHODS),
        lora_rank=lora_rank,
        attention=None if attention is None else _choice("--attention", attention, ATTENTION_KERNELS),
        sequence_parallel=sequence_parallel,
        stack=stack,
        offload_optimizer=offload_optimizer,
        offload_params=offload_params,
        lora_targets=_targets(lora_targets),
    )
    if offload_params and zero_stage < 3:
        raise ConfigError("--offload-params: needs --zero-stage 3 (parameters are offloaded per shard)")
    ckpt = _choice("--activation-checkpointing", ckpt, CHECKPOINTING)
    if n_gpus % (tp * pp * cp):
        raise ConfigError(f"--num-gpus: {n_gpus} must be a multiple of tp × pp × cp = {tp * pp * cp}")
    if pp > spec.layers:
        raise ConfigError(f"--pp: {pp} exceeds the {spec.layers} layers of {spec.name}")
    if vp > 1 and (pp == 1 or spec.layers % (pp * vp)):
        raise ConfigError(
            f"--virtual-stages: {vp} needs --pp > 1 and pp × vp dividing the {spec.layers} layers"
        )
    dp = n_gpus // (tp * pp * cp)
    if global_batch is None:
        grad_accum = 1
    elif global_batch % (dp * micro_batch):
        raise ConfigError(
            f"--global-batch: {global_batch} is not a multiple of dp × micro-batch = {dp} × {micro_batch}"
        )
    else:
        grad_accum = global_batch // (dp * micro_batch)
    layout = Layout(
        dp=dp,
        tp=tp,
        pp=pp,
        zero_stage=zero_stage,
        checkpointing=ckpt,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        cp=cp,
        vp=vp,
    )
    mem = training_memory(spec, setup, layout, a)
    step = training_step_time(spec, setup, layout, cluster, a) if g.supports(precision) else None
    band = step_band(step, g, stack) if step is not None else None
    if step is not None and not is_profile(spec):  # before the size factor (what calibrate fits)
        where = {**where, "base_efficiency": round(compute_efficiency(g, precision, a, stack)[0], 4)}
    where = {**where, "band": band, "seq_len": seq_len}
    figures = train_estimate_figures(spec, g, mem)
    return train_estimate_json(spec, g, n_gpus, layout, mem, step, precision, where, figures=figures)
