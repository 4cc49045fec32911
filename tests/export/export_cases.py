"""Results to export: every example's saved answer (tests/golden, checked against fresh runs by
tests/test_golden.py) and plans solved here for the stacks whose own configs are exported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


def _golden(prefix: str) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted(GOLDEN.glob(f"{prefix}_*.json")):
        doc = json.loads(path.read_text())["output"]
        if doc.get("status") != "infeasible" and (doc.get("plan") or doc.get("jobs")):
            out[path.stem] = doc
    return out


#: example answers: plans (train), serving plans, batches
TRAIN = _golden("plan")
SERVE = _golden("serve")
BATCH = _golden("batch")

#: stack -> the example it is planned on (that stack's own config is exported)
STACK_EXAMPLES = {
    "megatron-core": "llama7b_10days.toml",
    "megatron-deepspeed": "gpt3_175b_a100_90days.toml",
    "deepspeed": "llama7b_10days.toml",
    "hf-trainer": "finetune_8b_4090_vs_cloud.toml",
    "torchtitan": "llama7b_10days.toml",
    "torchtune": "lora_70b_budget.toml",
    "llm-foundry": "llama7b_10days.toml",
}


def train_plans(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan dicts of a result: its plan, or each scheduled job of a batch."""
    if "jobs" in result:
        return [j for j in result["jobs"] if j["status"] == "scheduled"]
    return [result["plan"]]
