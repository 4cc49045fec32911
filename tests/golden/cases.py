"""The golden cases: every example's `--json` output, stored as JSON files beside this module.

Regenerate (only after a deliberate, reviewed change of output): `python -m tests.golden.cases`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
ROOT = HERE.parent.parent

#: name -> CLI arguments (run through the real typer app)
CASES: dict[str, list[str]] = {
    "plan_llama7b_10days": ["plan", "examples/llama7b_10days.toml", "--json", "--pareto"],
    "plan_lora_70b_budget": ["plan", "examples/lora_70b_budget.toml", "--json", "--pareto"],
    "plan_qlora_70b_single_node": ["plan", "examples/qlora_70b_single_node.toml", "--json", "--pareto"],
    "plan_infeasible_70b_week": ["plan", "examples/infeasible_70b_week.toml", "--json"],
    "plan_llama7b_data_in_s3": ["plan", "examples/llama7b_data_in_s3.toml", "--json"],
    "plan_llama7b_capacity_block": ["plan", "examples/llama7b_10days_capacity_block.toml", "--json"],
    "plan_resnet50_imagenet_loader": ["plan", "examples/resnet50_imagenet_loader.toml", "--json"],
    "plan_finetune_8b_4090_vs_cloud": ["plan", "examples/finetune_8b_4090_vs_cloud.toml", "--json"],
    "compare_finetune_8b_4090_vs_cloud": ["compare", "examples/finetune_8b_4090_vs_cloud.toml", "--json"],
    "compare_llama7b_10days": ["compare", "examples/llama7b_10days.toml", "--json"],
    "plan_resnet50_imagenet_3days": ["plan", "examples/resnet50_imagenet_3days.toml", "--json"],
    "plan_bert_base_finetune_8gb": ["plan", "examples/bert_base_finetune_8gb.toml", "--json"],
    "plan_sd15_train_rtx3080": ["plan", "examples/sd15_train_rtx3080.toml", "--json"],
    "plan_gpt3_175b_a100_90days": ["plan", "examples/gpt3_175b_a100_90days.toml", "--json"],
    "plan_gpt3_175b_32_a100": ["plan", "examples/gpt3_175b_32_a100.toml", "--json"],
    "serve_bert_base": ["serve", "examples/serve_bert_base.toml", "--json"],
    "sizing_resnet50_imagenet_3days": ["sizing", "examples/resnet50_imagenet_3days.toml", "--json"],
    "replan_llama7b_progress": ["replan", "examples/llama7b_10days_progress.toml", "--json"],
    "batch_12_finetunes": ["batch", "examples/batch_12_finetunes.toml", "--json"],
    "batch_capacity_block": ["batch", "examples/batch_capacity_block.toml", "--json"],
    # at the point (confidence 0.5): at P80 the owned RTX 4090 boxes' wide thin band (issue 44)
    # saturates them and CP-SAT no longer proves the optimum within the time limit, so the
    # answer would depend on the machine's speed
    "batch_50_generated": ["batch", "examples/batch_50_generated.toml", "--json", "--confidence", "0.5"],
    "serve_mistral7b_chatbot": ["serve", "examples/serve_mistral7b_chatbot.toml", "--json"],
    "serve_llama70b_5rps": ["serve", "examples/serve_llama70b_5rps.toml", "--json"],
    "serve_8b_4090_vs_cloud": ["serve", "examples/serve_8b_4090_vs_cloud.toml", "--json"],
    "serve_compare_8b_4090_vs_cloud": ["serve-compare", "examples/serve_8b_4090_vs_cloud.toml", "--json"],
    "estimate_llama7b_a100_z3": [
        "estimate",
        "--model",
        "llama-2-7b",
        "--gpu",
        "A100-80GB",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--json",
    ],
}

#: keys whose values are timings (differ run to run); masked before comparing
VOLATILE_KEYS = frozenset({"wall_s", "solve_s", "enumerate_s", "age_days", "stale"})  # timings,
#   and the price tables' age in days and whether it passed the stated age (change with the calendar)


def mask(obj: Any) -> Any:
    """The document with every timing value replaced by a fixed marker."""
    if isinstance(obj, dict):
        return {
            k: (
                "<timing>"
                if k in VOLATILE_KEYS
                else Path(v).name
                if k == "path" and isinstance(v, str)
                else mask(v)
            )
            for k, v in obj.items()
        }  # a catalog path depends on the checkout: its name
    if isinstance(obj, list):
        return [mask(v) for v in obj]
    return obj


def run(args: list[str]) -> tuple[int, Any]:
    """Exit code and parsed stdout of one CLI call (in-process)."""
    from typer.testing import CliRunner

    from optimizer.cli import app

    result = CliRunner().invoke(app, args)
    return result.exit_code, json.loads(result.stdout)


def path(name: str) -> Path:
    return HERE / f"{name}.json"


def regenerate() -> None:
    import os

    os.chdir(ROOT)
    for name, args in CASES.items():
        code, doc = run(args)
        path(name).write_text(
            json.dumps({"exit_code": code, "output": mask(doc)}, indent=1, sort_keys=True) + "\n"
        )
        print(f"{name}: exit {code}", file=sys.stderr)


if __name__ == "__main__":
    regenerate()
