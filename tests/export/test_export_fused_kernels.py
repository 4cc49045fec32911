"""workload.fused_kernels (Liger-style fused RMSNorm/SwiGLU) travels from the job file to the plan's
JSON, to every exported file (a header line and CCOPT_FUSED_KERNELS=1) and back through
`--from-plan`; `estimate --fused-kernels` saves the bytes worked out by hand."""

from __future__ import annotations

import json
import math
import tomllib

from export_cases import ROOT
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from optimizer.model.fitted import load_fitted
from optimizer.report.export.common import FUSED_KERNELS_LINE

runner = CliRunner()


def _job(fused: bool) -> dict:
    job = tomllib.loads((ROOT / "examples" / "lora_8b_torchtune.toml").read_text())
    job["workload"]["stack"] = "hf-trainer"
    job["workload"]["fused_kernels"] = fused
    return job


def test_fused_kernels_reach_the_json_the_exports_and_back(tmp_path) -> None:
    result = api.plan(_job(True), offline=True, alternatives=0)
    assert result["status"] != "infeasible" and result["job"]["fused_kernels"] is True
    expected = api.plan_row_request(result)
    assert expected.fused_kernels is True
    files = api.export(result, "all").files
    assert files
    for f in files:
        assert FUSED_KERNELS_LINE in f.text, f.name
        path = tmp_path / f.name
        path.write_text(f.text, encoding="utf-8")
        assert api.request_from_options(api.plan_file_options(path)) == expected, f.name
    script = next(f.text for f in files if f.name.endswith(".sh"))
    assert "CCOPT_FUSED_KERNELS=1" in script
    plain = api.plan(_job(False), offline=True, alternatives=0)
    assert plain["job"]["fused_kernels"] is False
    assert all(FUSED_KERNELS_LINE not in f.text for f in api.export(plain, "all").files)


def test_estimate_fused_kernels_saves_the_eager_bytes_and_the_logits() -> None:
    """Llama-2-7B LoRA under hf-trainer: the frozen norms' fp32 inputs (2 norms × 2 B × h) and
    SwiGLU's saved silu output (2 B × ffn) go: (2·2·4096 + 2·11008) B = 38,400 B per token per
    layer; × 2,048 tokens × 32 layers = 2.34375 GiB; Liger's fused linear cross-entropy holds
    next_power_of_2(cdiv(2048, cdiv(32000, 4096) = 8)) = 256 tokens' logits instead of 2,048, and
    at a fused kernel's 4 B per logit (stacks.toml fused_logits_bytes_per_value: the kernel writes
    the gradient into the 16-bit chunk) instead of the eager loss's 14 B (hf-trainer
    logits_bytes_per_value); all times hf-trainer's fitted memory factor."""
    args = ["estimate", "-m", "llama-2-7b", "-g", "A100-80GB", "--num-gpus", "1", "--stack", "hf-trainer"]
    args += ["--kind", "lora", "--seq-len", "2048", "--micro-batch", "1", "--json"]
    plain, fused = (runner.invoke(app, args + extra) for extra in ([], ["--fused-kernels"]))
    assert plain.exit_code == fused.exit_code == 0, plain.stderr + fused.stderr
    before, after = (json.loads(r.stdout)["memory_gib"]["activations"] for r in (plain, fused))
    saved_gib = before - after
    factor = math.exp(load_fitted().memory["stack:hf-trainer"])
    saved_bytes = 38_400 * 2048 * 32 + 2048 * 32_000 * 14.0 - 256 * 32_000 * 4.0
    assert abs(saved_gib - saved_bytes / 2**30 * factor) < 0.011  # two values rounded to 0.01
