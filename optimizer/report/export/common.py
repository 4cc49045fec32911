"""What every exporter shares: the plan's layout read from a result, the header, and the one
writer of each format (YAML through PyYAML's emitter, TOML through tomli-w, shell words through
shlex.quote): user strings are data in every file, never text pasted into a script."""

from __future__ import annotations

import json
import math
import re
import shlex
import unicodedata
from dataclasses import dataclass, replace
from typing import Any

from optimizer import __version__
from optimizer.errors import ConfigError

__all__ = [
    "ExportedFile",
    "job_stack",
    "TrainPlan",
    "train_plans",
    "serve_deployments",
    "result_kind",
    "header_lines",
    "plan_options",
    "plan_header_line",
    "PLAN_HEADER_PREFIX",
    "comment",
    "yaml_text",
    "toml_text",
    "shell_default",
    "shell_exports",
    "printable",
    "slug",
    "distinct_stems",
    "wall_time",
    "DISK_GB",
    "MASTER_PORT",
]

#: GUESS: local disk per node for checkpoints and the dataset cache; edit the file to change it
DISK_GB = 512
#: the rendezvous port of torch.distributed launchers (torchrun's default, 29500)
MASTER_PORT = 29500


@dataclass(frozen=True)
class ExportedFile:
    """One exported file: its name (inside -o DIR), its text and the job it launches."""

    name: str
    text: str
    job: str
    format: str


@dataclass(frozen=True)
class TrainPlan:
    """The numbers a launcher needs from one training plan of a result (read, never computed)."""

    job: str
    model: str
    model_ref: str
    stack: str
    workload: str  # workload.kind: pretrain | finetune | lora | qlora
    seq_len: int | None
    kind: str  # cloud | owned | buy
    provider: str
    region: str
    instance: str
    pricing: str
    gpu: str
    nodes: int
    gpus_per_node: int
    gpus: int
    dp: int
    tp: int
    pp: int
    cp: int
    vp: int
    zero_stage: int
    checkpointing: str  # none | selective | full
    micro_batch: int
    grad_accum: int
    global_batch: int
    steps: int
    precision: str
    optimizer: str
    offload: str  # none | optimizer | params
    sequence_parallel: bool | None
    hours: float
    hours_p90: float | None
    start_hour: float | None = None  # batch: the slot the schedule gives the job
    end_hour: float | None = None
    slot_end_hour: float | None = None
    deadline_hour: float | None = None
    lines: tuple[str, ...] = ()  # the header of every file exported from this plan
    fabric: str = "none"  # inter_node_kind of the offering: efa | infiniband | rdma | ethernet | ...
    fabric_gbps: float | None = None  # its inter_node_gbps
    fused_kernels: bool = False  # workload.fused_kernels: the plan's memory assumes them
    train_script: str | None = None  # the user's training script (--train-script), when given
    stem: str = ""  # the file name stem, distinct among the result's plans (slug of the job name)
    lora_rank: int | None = None  # the job's adapters (lora / qlora workloads)
    lora_targets: tuple[str, ...] = ()


def result_kind(result: dict[str, Any]) -> str:
    """train | serve | batch, from the shape of a result dict (the JSON contract)."""
    if "jobs" in result:
        return "batch"
    plan = result.get("plan")
    if isinstance(plan, dict) and "deployments" in plan:
        return "serve"
    if isinstance(plan, dict) and "layout" in plan:
        return "train"
    raise ConfigError(
        f"export: a result with status {result.get('status')!r} has no plan to export "
        "(allowed: a feasible `ccopt plan`, `serve` or `batch` result)"
    )


def _catalog_words(result: dict[str, Any]) -> str:
    cat = result.get("catalog") or {}
    return f"prices as of {cat.get('as_of') or 'unknown'} ({cat.get('source', 'unknown')} catalog)"


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def header_lines(result: dict[str, Any], fmt: str, body: list[str]) -> tuple[str, ...]:
    """The header every exported file starts with: plan, cost and P90, catalog date, version."""
    return (
        f"exported by ccopt {__version__} (--export {fmt}); regenerate rather than edit the numbers",
        *body,
        _catalog_words(result),
    )


#: characters that end or bend a line in some reader (controls, format characters, surrogates,
#: U+2028/U+2029): shown escaped in a comment, never written raw
_UNPRINTABLE = ("Cc", "Cf", "Cs", "Zl", "Zp")


def printable(text: str) -> str:
    """`text` with every control or line-breaking character as a visible escape (\\x0a, \\u2028):
    one line that no reader takes for two."""
    return "".join(
        (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
        if unicodedata.category(ch) in _UNPRINTABLE
        else ch
        for ch in text
    )


def comment(lines: tuple[str, ...], prefix: str = "#") -> str:
    """The header as comment lines of a YAML, TOML or shell file; each line stays one comment
    line whatever it holds (inputs refuse control characters; this is the second guard)."""
    return "".join(f"{prefix} {printable(line)}\n" for line in lines)


def slug(name: str) -> str:
    """A SkyPilot / Slurm / file name: lower case letters, digits and dashes."""
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "ccopt"


def distinct_stems(names: list[str]) -> list[str]:
    """A file stem per name (its slug), distinct: "Train A", "train-a" and "train_a" become
    train-a, train-a-2 and train-a-3 (in the order given), so no export overwrites another."""
    taken: set[str] = set()
    out = []
    for name in names:
        base = slug(name)
        stem, n = base, 1
        while stem in taken:
            n += 1
            stem = f"{base}-{n}"
        taken.add(stem)
        out.append(stem)
    return out


#: the header line that carries the plan's run as JSON, read back by `ccopt calibrate --from-plan`
#: (optimizer/inputs/training_logs/plan_header.py reads this prefix; a test writes and reads it)
PLAN_HEADER_PREFIX = "ccopt-plan: "


def plan_options(p: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """The configuration options (`ccopt estimate` / `calibrate` flags by name) of one training
    plan row; `ccopt estimate --from-plan` builds its request from it too (api/plan_row.py)."""
    lay, opts = p["layout"], p.get("options") or {}
    where: dict[str, Any] = (
        {"instance": f"{p['provider']}:{p['instance']}"}
        if p.get("kind", "cloud") == "cloud"
        else {
            "gpu": p["gpu"],
            "gpus_per_instance": p.get("gpus_per_instance"),
            "inter_node_gbps": p.get("inter_node_gbps"),
        }
    )
    return {
        "model": job.get("model_ref") or job.get("model"),
        **where,
        "num_gpus": p["gpus"],
        "tp": lay["tp"],
        "pp": lay["pp"],
        "context_parallel": lay.get("cp") or 1,
        "virtual_stages": lay.get("vp") or opts.get("virtual_stages") or 1,
        "zero_stage": lay["zero_stage"],
        "activation_checkpointing": lay["activation_checkpointing"],
        "sequence_parallel": opts.get("sequence_parallel"),
        "micro_batch": lay["micro_batch"],
        "global_batch": p["global_batch"],
        "seq_len": job.get("seq_len"),
        "precision": opts.get("precision"),
        "optimizer": opts.get("optimizer", "adamw"),
        "kind": job.get("kind") or "pretrain",
        "lora_rank": job.get("lora_rank") or 16,
        "lora_targets": list(job["lora_targets"]) if job.get("lora_targets") else None,
        "attention": job.get("attention"),
        "stack": job.get("stack") or "generic",
        "offload_optimizer": opts.get("offload") in ("optimizer", "params"),
        "offload_params": opts.get("offload") == "params",
        "fused_kernels": bool(job.get("fused_kernels")),
        "head": job.get("head") or "lm",
    }


def plan_header_line(p: dict[str, Any], job: dict[str, Any]) -> str:
    """`ccopt-plan: {...}`: the plan's options as one line of JSON (json.dumps, ASCII only: no
    character of a user string can end the comment line it sits in)."""
    return PLAN_HEADER_PREFIX + json.dumps(plan_options(p, job), ensure_ascii=True, allow_nan=False)


def _plan_header(result: dict[str, Any], p: dict[str, Any], job: dict[str, Any]) -> list[str]:
    lay = p["layout"]
    cp = lay.get("cp") or 1
    status = p.get("status") or result.get("status")
    return [
        f"plan: {job.get('name')} ({job.get('model')}, {job.get('kind') or 'train'}), {status}",
        f"cluster: {p['instances']}× {p['instance']} ({p['gpus']}× {p['gpu']}) on {p['provider']} "
        f"{p['region']}, {p['pricing']}",
        f"layout: dp {lay['dp']} × tp {lay['tp']} × pp {lay['pp']} × cp {cp} = {p['gpus']} GPUs; "
        f"micro-batch {lay['micro_batch']} × grad-accum {lay['grad_accum']} × dp {lay['dp']} = "
        f"global batch {p['global_batch']}; ZeRO-{lay['zero_stage']}, "
        f"checkpointing {lay['activation_checkpointing']}",
        f"cost: {_usd(p['cost_usd'])} in {p['days']:.2f} days ({p['steps']:,} steps of "
        f"{p['step_time_s']:.2f} s); P90: {_usd(p.get('cost_usd_p90'))} in "
        f"{p.get('days_p90', p['days']):.2f} days",
    ]


#: the header line of a plan whose memory assumes fused norm/SwiGLU kernels (workload.fused_kernels)
FUSED_KERNELS_LINE = (
    "kernels: the plan's memory assumes Liger Kernel's fused RMSNorm, SwiGLU and linear "
    "cross-entropy (workload.fused_kernels): "
    "turn them on in the run (Hugging Face Trainer use_liger_kernel=True, LLaMA-Factory "
    "enable_liger_kernel: true; CCOPT_FUSED_KERNELS=1), or its activations exceed the plan's"
)


def _train_plan(result: dict[str, Any], p: dict[str, Any], job: dict[str, Any], fmt: str) -> TrainPlan:
    lay, opts = p["layout"], p.get("options") or {}
    body = _plan_header(result, p, job)
    if p.get("start_hour") is not None:
        body.append(
            f"start window: hour {p['start_hour']:g} to {p.get('slot_end_hour', p['end_hour']):g} of "
            f"the batch horizon (planned end hour {p['end_hour']:g}, deadline hour "
            f"{p.get('deadline_hour')})"
        )
    if job.get("fused_kernels"):
        body.append(FUSED_KERNELS_LINE)
    body.append(plan_header_line(p, job))
    tp = TrainPlan(
        job=str(job.get("name") or "job"),
        model=str(job.get("model")),
        model_ref=str(job.get("model_ref") or job.get("model")),
        stack=job_stack(job),
        workload=str(job.get("kind") or "pretrain"),
        seq_len=job.get("seq_len"),
        lora_rank=job.get("lora_rank"),
        lora_targets=tuple(job.get("lora_targets") or ()),
        kind=p.get("kind", "cloud"),
        provider=p["provider"],
        region=p["region"],
        instance=p["instance"],
        pricing=p["pricing"],
        gpu=p["gpu"],
        nodes=p["instances"],
        gpus_per_node=p.get("gpus_per_instance") or p["gpus"] // p["instances"],
        gpus=p["gpus"],
        dp=lay["dp"],
        tp=lay["tp"],
        pp=lay["pp"],
        cp=lay.get("cp") or 1,
        vp=lay.get("vp") or opts.get("virtual_stages") or 1,
        zero_stage=lay["zero_stage"],
        checkpointing=lay["activation_checkpointing"],
        micro_batch=lay["micro_batch"],
        grad_accum=lay["grad_accum"],
        global_batch=p["global_batch"],
        steps=p["steps"],
        precision=opts.get("precision", "bf16"),
        optimizer=opts.get("optimizer", "adamw"),
        offload=opts.get("offload", "none"),
        sequence_parallel=opts.get("sequence_parallel"),
        hours=p["hours"],
        hours_p90=(p["days_p90"] * 24 if p.get("days_p90") is not None else None),
        start_hour=p.get("start_hour"),
        end_hour=p.get("end_hour"),
        slot_end_hour=p.get("slot_end_hour"),
        deadline_hour=p.get("deadline_hour"),
        lines=header_lines(result, fmt, body),
        fabric=str(p.get("inter_node_kind") or "none"),
        fabric_gbps=p.get("inter_node_gbps"),
        fused_kernels=bool(job.get("fused_kernels")),
    )
    _check_layout(tp)
    return tp


def _check_layout(t: TrainPlan) -> None:
    """A hand-edited result whose numbers disagree is refused, not exported half-right."""
    if t.dp * t.tp * t.pp * t.cp != t.gpus:
        raise ConfigError(
            f"export: plan {t.job!r}: dp × tp × pp × cp = {t.dp * t.tp * t.pp * t.cp} but gpus = {t.gpus}"
        )
    if t.micro_batch * t.grad_accum * t.dp != t.global_batch:
        raise ConfigError(
            f"export: plan {t.job!r}: micro_batch × grad_accum × dp = "
            f"{t.micro_batch * t.grad_accum * t.dp} but global_batch = {t.global_batch}"
        )
    if t.nodes * t.gpus_per_node != t.gpus:
        raise ConfigError(f"export: plan {t.job!r}: {t.nodes} × {t.gpus_per_node} GPUs ≠ gpus = {t.gpus}")


def job_stack(job: dict[str, Any]) -> str:
    """The stack a job of the JSON output names (workload.stack; "generic" when unset)."""
    return str(job.get("stack") or "generic")


def train_plans(result: dict[str, Any], fmt: str, train_script: str | None = None) -> list[TrainPlan]:
    """The training plans of a plan result (one) or a batch result (every scheduled job), each
    with a distinct file stem and the user's training script (None: the script asks for it)."""
    if result_kind(result) == "train":
        t = _train_plan(result, result["plan"], result.get("job") or {}, fmt)
        return [replace(t, stem=slug(t.job), train_script=train_script)]
    plans = []
    for j in result["jobs"]:
        if j.get("status") != "scheduled":
            continue
        job = {
            "name": j["name"],
            "model": j.get("model"),
            "model_ref": j.get("model_ref") or j.get("model"),
            "stack": j.get("stack"),
            "kind": j.get("workload_kind"),
            "seq_len": j.get("seq_len"),
        }
        plans.append(_train_plan(result, j, job, fmt))
    stems = distinct_stems([t.job for t in plans])
    return [replace(t, stem=stem, train_script=train_script) for t, stem in zip(plans, stems, strict=True)]


def serve_deployments(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The deployments of a serve result."""
    return list(result["plan"]["deployments"])


def wall_time(hours: float) -> str:
    """A Slurm --time value (D-HH:MM:SS), whole hours rounded up."""
    total = max(1, math.ceil(hours))
    return f"{total // 24}-{total % 24:02d}:00:00"


def yaml_text(value: dict[str, Any]) -> str:
    """Block YAML of `value` through PyYAML's safe emitter (every string quoted or escaped as
    YAML requires; a multi-line string as a `|` block when YAML allows it), keys in order."""
    import yaml  # lazy: an export-only dependency, not imported when planning

    class _Dumper(yaml.SafeDumper):
        """SafeDumper that writes multi-line strings (SkyPilot `run:`) as literal blocks."""

    def _text(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
        # a character YAML reads as a break or cannot show (NEL, U+2028, CR, NUL...) only keeps
        # its value inside a double-quoted scalar, where the emitter escapes it ("\\N", "\\L")
        odd = any(ch != "\n" and unicodedata.category(ch) in _UNPRINTABLE for ch in text)
        style = '"' if odd else "|" if "\n" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)

    _Dumper.add_representer(str, _text)
    return yaml.dump(
        value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=10_000
    )


def toml_text(tables: dict[str, dict[str, Any]]) -> str:
    """TOML of `tables` through tomli-w (strings escaped as TOML requires)."""
    import tomli_w  # lazy: an export-only dependency, not imported when planning

    return tomli_w.dumps(tables)


def shell_exports(values: dict[str, str]) -> str:
    """`export NAME=value` lines, every value shell-quoted (shlex.quote)."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())


def shell_default(values: dict[str, str]) -> str:
    """Variables the user may set before running (the value given is only a start): set to the
    quoted value when unset or empty, then exported. The value is a single-quoted word, so
    nothing in it is expanded or run."""
    return "".join(
        f'if [ -z "${{{k}:-}}" ]; then {k}={shlex.quote(v)}; fi\nexport {k}\n' for k, v in values.items()
    )
