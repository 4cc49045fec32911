"""The sizing guides' scenarios (examples/, README "The sizing guides' scenarios"): what each
guide says, checked against ccopt's answer through the CLI (typer CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _run(args: list[str]) -> tuple[int, dict]:
    result = runner.invoke(app, args)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}


def test_bert_base_batch_16x512_fits_an_8gb_card() -> None:
    """Guide: BERT-base fine-tune, batch 16 × 512, one 8 GB RTX 2070 (fp16 mixed precision), the
    IMDb sentiment classifier: a task head (--head task), no vocabulary logits."""
    code, est = _run(
        [
            "estimate",
            "--model",
            "bert-base",
            "--gpu",
            "rtx2070",
            "--micro-batch",
            "16",
            "--global-batch",
            "16",
            "--seq-len",
            "512",
            "--precision",
            "fp16",
            "--stack",
            "hf-trainer",
            "--head",
            "task",
            "--json",
        ]
    )
    assert code == 0 and est["fits"] is True
    assert est["memory_gib"]["device"] <= 8.0
    code, plan = _run(["plan", str(ROOT / "examples/bert_base_finetune_8gb.toml"), "--json"])
    assert code == 0
    p = plan["plan"]
    assert p["gpu"] == "RTX2070" and p["gpus"] == 1 and p["global_batch"] == 16
    assert p["steps"] == 25000 * 3 // 16 + (1 if 25000 * 3 % 16 else 0)


def test_stable_diffusion_needs_two_3080s() -> None:
    """Guide: SD (~1B parameters) on 1–2 RTX 3080-class GPUs: one 10 GB card does not fit
    (the rejected box says how much it needs), a box of two does."""
    code, plan = _run(["plan", str(ROOT / "examples/sd15_train_rtx3080.toml"), "--json"])
    assert code == 0
    assert plan["plan"]["gpu"] == "RTX3080" and plan["plan"]["gpus"] == 2
    reasons = [r["reason"] for r in plan["rejected"] if "1x RTX3080" in r["option"]]
    assert reasons and "needs" in reasons[0] and "RTX3080 has 10" in reasons[0]


def test_serving_bert() -> None:
    code, out = _run(["serve", str(ROOT / "examples/serve_bert_base.toml"), "--json"])
    assert code == 0 and out["status"] == "optimal"
    assert out["plan"]["ttft_s"] <= 0.1


def test_gpt3_175b_needs_model_parallelism_over_64_a100s(tmp_path) -> None:
    """Guide: GPT-3 175B needs model parallelism across 64+ A100 80GB. At most 32: nothing fits
    in memory (exit 1); at most 64: a plan, split by tensor × pipeline parallelism."""
    code, out = _run(["plan", str(ROOT / "examples/gpt3_175b_32_a100.toml"), "--json"])
    assert code == 1 and "memory" in out["explanation"]["text"]
    job = (ROOT / "examples/gpt3_175b_32_a100.toml").read_text().replace("max_gpus = 32", "max_gpus = 64")
    (tmp_path / "g64.toml").write_text(job)
    code, out = _run(["plan", str(tmp_path / "g64.toml"), "--json"])
    assert code == 0
    lay = out["plan"]["layout"]
    assert out["plan"]["gpus"] == 64 and lay["tp"] * lay["pp"] >= 8
