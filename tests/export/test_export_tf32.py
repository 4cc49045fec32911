"""An fp32 plan is timed on TF32 tensor cores (GpuSpec.peak_tflops); PyTorch ≥ 1.12 runs fp32
matmuls in IEEE fp32 unless told otherwise, ~7× slower on an H100 (67 vs 495 dense TFLOPS).
Every exported launcher of an fp32 plan therefore sets TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, and
no other plan's does."""

from __future__ import annotations

import tomllib

import yaml
from export_cases import ROOT

from optimizer import api

OVERRIDE = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"


def _exports(precision: str) -> list:
    job = tomllib.loads((ROOT / "examples" / "lora_8b_torchtune.toml").read_text())
    job["workload"]["stack"] = "hf-trainer"
    job["workload"]["precision"] = precision
    result = api.plan(job, offline=True, alternatives=0)
    assert result["status"] != "infeasible"
    assert result["plan"]["options"]["precision"] == precision
    return api.export(result, "all").files


def test_fp32_launchers_turn_tf32_on() -> None:
    files = _exports("fp32")
    launchers = [f for f in files if f.name.endswith((".sh", ".sbatch"))]
    assert len(launchers) == 5  # torchrun, accelerate, megatron, nemo, sbatch
    assert all(f"export {OVERRIDE}=1" in f.text for f in launchers), [f.name for f in launchers]
    (sky,) = (yaml.safe_load(f.text) for f in files if f.name.endswith(".sky.yaml"))
    assert str(sky["envs"][OVERRIDE]) == "1"


def test_bf16_launchers_leave_pytorch_defaults() -> None:
    assert all(OVERRIDE not in f.text for f in _exports("bf16"))
