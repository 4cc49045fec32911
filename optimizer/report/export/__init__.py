"""Export a chosen plan to the tools that run it (`ccopt plan|serve|batch --export FORMAT`).

Exporters only format a result dict (the JSON contract of plan, serve and batch): every number
in a file is read from the plan, never recomputed. Each file starts with a header comment: the
plan, its cost and P90, the catalog date and the ccopt version.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optimizer.errors import ConfigError, did_you_mean
from optimizer.report.export.base_configs import serve_model_id
from optimizer.report.export.common import (
    ExportedFile,
    TrainPlan,
    comment,
    header_lines,
    result_kind,
    serve_deployments,
    shell_default,
    shell_exports,
    slug,
    train_plans,
    yaml_text,
)
from optimizer.report.export.launchers import (
    accelerate_script,
    sbatch_script,
    serve_command,
    serve_notes,
    torchrun_script,
)
from optimizer.report.export.skypilot import service_yaml, task_yaml
from optimizer.report.export.training import (
    FRAMEWORK_STACKS,
    deepspeed_config,
    foundry_fragment,
    fp32_env,
    megatron_args,
    megatron_model_args,
    nemo_overrides,
    torchtitan_toml,
    torchtune_overrides,
)

__all__ = ["FORMATS", "EXPORT_FORMATS", "Export", "ExportedFile", "export_result"]


def _deepspeed(t: TrainPlan) -> str:
    # JSON has no comments: the header is the "_ccopt" list (DeepSpeed ignores unknown keys)
    return json.dumps({"_ccopt": list(t.lines), **deepspeed_config(t)}, indent=2) + "\n"


def _bash_array(t: TrainPlan, name: str, words: list[str], use: str) -> str:
    items = "".join(f"  {shlex.quote(w)}\n" for w in words)
    return (
        "# shellcheck shell=bash disable=SC2034  # an array for the script that sources this file\n"
        + comment(t.lines)
        + shell_exports(fp32_env(t))
        + f"# use: source this file, then {use}\n{name}=(\n{items})\n"
    )


def _megatron(t: TrainPlan) -> str:
    shape = megatron_model_args(t)
    use = 'torchrun ... "$MEGATRON_DIR/pretrain_gpt.py" "${MEGATRON_ARGS[@]}" plus your data arguments'
    if shape is None:
        use += " and the model's shape (--num-layers --hidden-size ...)"
    return _bash_array(t, "MEGATRON_ARGS", [*megatron_args(t), *(shape or [])], use)


def _nemo(t: TrainPlan) -> str:
    use = 'python megatron_gpt_pretraining.py "${NEMO_OVERRIDES[@]}" (NeMo Hydra overrides)'
    return _bash_array(t, "NEMO_OVERRIDES", nemo_overrides(t), use)


def _torchtitan(t: TrainPlan) -> str:
    return (
        comment(t.lines)
        + "# merge into your torchtitan job config (--job.config_file)\n"
        + torchtitan_toml(t)
    )


def _torchtune(t: TrainPlan) -> str:
    import yaml  # lazy: an export-only dependency, not imported when planning

    values: dict[str, Any] = {}
    for item in torchtune_overrides(t):
        key, value = item.split("=", 1)
        *tables, name = key.split(".")  # a dotted override is a nested key of the recipe config
        table = values
        for part in tables:
            table = table.setdefault(part, {})
        # the value as torchtune reads it: OmegaConf.from_dotlist parses each one as YAML
        table[name] = yaml.safe_load(value)
    return (
        comment(t.lines)
        + "# merge into your torchtune recipe config (tune run ... --config)\n"
        + yaml_text(values)
    )


def _foundry(t: TrainPlan) -> str:
    return comment(t.lines) + "# merge into your llm-foundry train YAML\n" + yaml_text(foundry_fragment(t))


@dataclass(frozen=True)
class Format:
    """One export format: the file suffix and the writer of a training plan."""

    suffix: str
    train: Callable[[TrainPlan], str] | None
    serve: bool  # also exports serving plans
    help: str


#: every format `--export` takes (and `all`: each that applies to the plan)
FORMATS: dict[str, Format] = {
    "skypilot": Format("sky.yaml", task_yaml, True, "SkyPilot task YAML (serve: SkyServe service YAML)"),
    "deepspeed": Format("deepspeed.json", _deepspeed, False, "DeepSpeed config JSON"),
    "torchrun": Format("torchrun.sh", torchrun_script, False, "torchrun (or the stack's launcher) script"),
    "accelerate": Format("accelerate.sh", accelerate_script, False, "accelerate launch script"),
    "megatron": Format("megatron.sh", _megatron, False, "Megatron-LM argument list (bash array)"),
    "nemo": Format("nemo.sh", _nemo, False, "NeMo Hydra overrides (bash array)"),
    "torchtitan": Format("torchtitan.toml", _torchtitan, False, "torchtitan config fragment"),
    "torchtune": Format("torchtune.yaml", _torchtune, False, "torchtune recipe config fragment"),
    "llm-foundry": Format("llm-foundry.yaml", _foundry, False, "llm-foundry train YAML fragment"),
    "slurm": Format("sbatch", sbatch_script, True, "Slurm sbatch script"),
}
EXPORT_FORMATS: tuple[str, ...] = (*FORMATS, "all")


@dataclass
class Export:
    """What an export produced: the files, and each format or job left out with the reason."""

    files: list[ExportedFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _serve_sbatch(result: dict[str, Any], d: dict[str, Any], index: int, fmt: str) -> str:
    """Slurm: one array task per instance of a serving deployment, each running its server."""
    job = result.get("job") or {}
    body = [
        f"plan: {job.get('name')} ({job.get('model')}), {result.get('status')}; deployment {index + 1}",
        f"deployment: {d['instances']}× {d['instance']} ({d['gpus']}× {d['gpu']}), {d['replicas']} replicas "
        f"of tp {d['tp']}; {d['requests_per_s']:g} requests/s",
        f"cost: ${d['usd_per_hour']:,.2f}/h (plan ${result['plan']['usd_per_month']:,.2f}/month); "
        "no P90 band for serving plans",
        *serve_notes(d, job),
    ]
    return (
        "#!/bin/bash\n"
        f"#SBATCH --job-name={slug(str(job.get('name')))}-{index + 1}\n"
        "#SBATCH --nodes=1\n"
        f"#SBATCH --array=0-{d['instances'] - 1}\n"
        f"#SBATCH --gpus-per-node={d['gpus_per_instance']}\n"
        "#SBATCH --exclusive\n#SBATCH --output=%x-%A_%a.out\n"
        + comment(header_lines(result, fmt, body))
        + "set -euo pipefail\n"
        + shell_default({"MODEL_ID": serve_model_id(job)})
        + serve_command(d, job)
        + "\n"
    )


def _serve_files(result: dict[str, Any], fmt: str, out: Export) -> None:
    name = slug(str((result.get("job") or {}).get("name") or "serve"))
    for i, d in enumerate(serve_deployments(result)):
        where = f"{name}-{i + 1}-{slug(d['gpu'])}"
        try:
            if fmt == "skypilot":
                out.files.append(
                    ExportedFile(f"{where}.serve.yaml", service_yaml(result, d, i, fmt), name, fmt)
                )
            else:
                out.files.append(ExportedFile(f"{where}.sbatch", _serve_sbatch(result, d, i, fmt), name, fmt))
        except ConfigError as exc:
            out.skipped.append(str(exc))


def export_result(result: dict[str, Any], fmt: str, train_script: str | None = None) -> Export:
    """The files of `fmt` for a plan, serve or batch result (batch: one file per job, each job
    its own file name); `train_script`: the user's training script the launch lines start.

    Raises:
        ConfigError: an unknown format, a result without a plan, or a format that applies to
            none of the result's plans (the message says why and what to export instead).
    """
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(
            f"--export: unknown format {fmt!r}{did_you_mean(fmt, EXPORT_FORMATS)}; "
            f"allowed: {', '.join(EXPORT_FORMATS)}"
        )
    kind = result_kind(result)
    wanted = [f for f in FORMATS if fmt in ("all", f)]
    out = Export()
    for name in wanted:
        spec = FORMATS[name]
        if kind == "serve":
            if spec.serve:
                _serve_files(result, name, out)
            elif fmt != "all":
                raise ConfigError(f"--export {name}: a serving plan exports skypilot or slurm")
            continue
        assert spec.train is not None
        for t in train_plans(result, name, train_script):
            if fmt == "all" and FRAMEWORK_STACKS.get(name, t.stack) != t.stack:
                continue  # another stack's config: only when asked for by name
            try:
                out.files.append(ExportedFile(f"{t.stem}.{spec.suffix}", spec.train(t), t.job, name))
            except ConfigError as exc:
                out.skipped.append(str(exc))
    if fmt == "all":  # one reason per format is enough
        seen: dict[str, str] = {}
        for reason in out.skipped:
            seen.setdefault(reason.split(":", 1)[0], reason)
        out.skipped = list(seen.values())
    if not out.files:
        raise ConfigError(
            "; ".join(out.skipped) if out.skipped else f"--export {fmt}: the result has no scheduled job"
        )
    return out
