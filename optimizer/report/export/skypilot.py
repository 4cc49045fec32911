"""SkyPilot task YAML of a cloud training plan; SkyServe service YAML of a serving plan."""

from __future__ import annotations

from typing import Any

from optimizer.errors import ConfigError
from optimizer.report.export.base_configs import serve_model_id
from optimizer.report.export.common import DISK_GB, TrainPlan, comment, header_lines, slug, yaml_text
from optimizer.report.export.launchers import (
    READINESS_PATH,
    SERVE_PORT,
    deepspeed_heredoc,
    serve_command,
    serve_notes,
    serve_replicas_per_instance,
)
from optimizer.report.export.training import fabric_env, launch_lines, layout_env, stack_variables

__all__ = ["task_yaml", "service_yaml", "SKY_CLOUD", "SKY_ACCELERATOR", "slug"]

#: ccopt provider -> SkyPilot cloud (CoreWeave runs through SkyPilot's Kubernetes cloud)
SKY_CLOUD = {
    "aws": "aws",
    "gcp": "gcp",
    "azure": "azure",
    "lambda": "lambda",
    "oci": "oci",
    "runpod": "runpod",
    "vast": "vast",
    "coreweave": "kubernetes",
    "nebius": "nebius",  # issue 42: Nebius H200 nodes (pricing_data/clusters.csv)
}
#: ccopt GPU id -> SkyPilot accelerator name (skypilot-catalog v8 AcceleratorName column)
SKY_ACCELERATOR = {
    "A100-40GB": "A100",
    "A100-40GB-PCIE": "A100",
    "A100-80GB": "A100-80GB",
    "A100-80GB-PCIE": "A100-80GB",
    "H100-80GB": "H100",
    "H100-80GB-PCIE": "H100",
    "H100-NVL-94GB": "H100-NVL",
    "H200-141GB": "H200",
    "GH200-96GB": "GH200",
    "V100-16GB": "V100",
    "V100-32GB": "V100-32GB",
}
#: GUESS: seconds a replica may take to download and load its model before SkyServe probes it
READINESS_DELAY_S = 1800
#: SkyPilot has no flag for a reservation: the plan's price assumes one (header says so)
_RESERVED = ("reserved_1y", "reserved_3y")


def _resources(
    provider: str, region: str, instance: str, gpu: str, count: int, pricing: str
) -> dict[str, Any]:
    cloud = SKY_CLOUD.get(provider)
    if cloud is None:
        raise ConfigError(
            f"--export skypilot: provider {provider!r} has no SkyPilot cloud; allowed: "
            f"{', '.join(SKY_CLOUD)} (owned and bought boxes: --export slurm)"
        )
    res: dict[str, Any] = {"cloud": cloud}
    if cloud != "kubernetes":  # a Kubernetes cluster has no catalog region or instance type
        if region != "unspecified":  # a price page that names no region: SkyPilot picks one
            res["region"] = region
        res["instance_type"] = instance
    res["accelerators"] = f"{SKY_ACCELERATOR.get(gpu, gpu)}:{count}"
    res["use_spot"] = pricing == "spot"
    res["disk_size"] = DISK_GB
    return res


def _pricing_note(pricing: str) -> list[str]:
    if pricing in _RESERVED:
        return [
            f"pricing {pricing}: the cost assumes your reservation; SkyPilot launches on demand "
            "unless it is used"
        ]
    return []


def task_yaml(t: TrainPlan) -> str:
    """A SkyPilot task (sky launch FILE): resources, num_nodes, layout env vars and the run line."""
    if t.kind != "cloud":
        raise ConfigError(
            f"--export skypilot: plan {t.job!r} runs on {t.kind} boxes ({t.instance}); export slurm"
        )
    run = (
        "set -euo pipefail\n"
        "NNODES=$SKYPILOT_NUM_NODES\n"
        "NPROC_PER_NODE=$SKYPILOT_NUM_GPUS_PER_NODE\n"
        "NODE_RANK=$SKYPILOT_NODE_RANK\n"
        'MASTER_ADDR=$(echo "$SKYPILOT_NODE_IPS" | sed -n 1p)\n' + deepspeed_heredoc(t) + launch_lines(t)
    )
    task = {
        "name": t.stem or slug(t.job),
        "resources": _resources(t.provider, t.region, t.instance, t.gpu, t.gpus_per_node, t.pricing),
        "num_nodes": t.nodes,
        "envs": {**fabric_env(t)[0], **layout_env(t), **stack_variables(t)},
        "run": run,
    }
    lines = t.lines[:-1] + tuple(_pricing_note(t.pricing)) + fabric_env(t)[1] + t.lines[-1:]
    return comment(lines) + yaml_text(task)


def service_yaml(result: dict[str, Any], d: dict[str, Any], index: int, fmt: str) -> str:
    """A SkyServe service (sky serve up FILE) of one deployment: one replica per instance."""
    job = result.get("job") or {}
    plan = result["plan"]
    if d["provider"] not in SKY_CLOUD:
        raise ConfigError(
            f"--export skypilot: deployment {index} runs on {d['provider']} boxes ({d['instance']}); "
            "export slurm"
        )
    stack = job.get("stack") or "generic"
    engine = "vllm" if stack == "generic" else stack
    per = serve_replicas_per_instance(d)
    deployments = plan["deployments"]
    body = [
        f"plan: {job.get('name')} ({job.get('model')}, {job.get('precision')}), {result.get('status')}; "
        f"deployment {index + 1} of {len(deployments)}",
        f"deployment: {d['instances']}× {d['instance']} ({d['gpus']}× {d['gpu']}) on {d['provider']} "
        f"{d['region']}, {d['pricing']}; {d['replicas']} replicas of tp {d['tp']} ({per} per instance), "
        f"batch {d['batch']}",
        f"load: {d['requests_per_s']:g} of {plan['load_requests_per_s']:g} requests/s "
        "(route that share here); "
        f"TTFT {d['ttft_s']:g} s, TPOT {d['tpot_ms']:g} ms",
        f"cost: ${d['usd_per_hour']:,.2f}/h of ${plan['usd_per_hour']:,.2f}/h for the plan "
        f"(${plan['usd_per_month']:,.2f}/month); no P90 band for serving plans",
        *_pricing_note(d["pricing"]),
        *serve_notes(d, job),
    ]
    service = {
        "service": {
            "readiness_probe": {"path": READINESS_PATH[engine], "initial_delay_seconds": READINESS_DELAY_S},
            "replicas": d["instances"],
        },
        "resources": {
            **_resources(
                d["provider"], d["region"], d["instance"], d["gpu"], d["gpus_per_instance"], d["pricing"]
            ),
            "ports": SERVE_PORT,
        },
        "envs": {"MODEL_ID": serve_model_id(job)},
        "run": serve_command(d, job),
    }
    return comment(header_lines(result, fmt, body)) + yaml_text(service)
