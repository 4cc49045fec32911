"""RL post-training step times: the model against published breakdowns (issue 46).

Reads benchmarks/validation/rl/*.csv (one file per source: every number with its page, date and
quote), predicts each number with the colocated step model (optimizer/model/rl/step.py; the
defaults, no stored calibration), and prints per row the prediction, its P10-P90 band and the
error, then per source the mean |log error| and the source-weighted summary: each source weighs
the same whatever its row count, and the band coverage (share of numbers inside P10-P90).

    python benchmarks/rl_accuracy.py [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from optimizer.inputs.gpus import load_gpus  # noqa: E402
from optimizer.model.bands import band_for, serve_band_for  # noqa: E402
from optimizer.model.cluster import Cluster  # noqa: E402
from optimizer.model.presets import get_preset  # noqa: E402
from optimizer.model.rl.phases import GEN_STACK, TRAIN_STACK, train_precision  # noqa: E402
from optimizer.model.rl.setup import DEFAULT_RL_ASSUMPTIONS, RlSetup  # noqa: E402
from optimizer.model.rl.step import RlStep, colocated_step  # noqa: E402
from optimizer.model.setup import PerfAssumptions  # noqa: E402
from optimizer.model.spec import ModelSpec  # noqa: E402
from optimizer.solve.rl.candidates import step_at_confidence  # noqa: E402
from optimizer.solve.rl.options import usable_gib  # noqa: E402

FOLDER = ROOT / "benchmarks" / "validation" / "rl"


@dataclass(frozen=True)
class Row:
    case_id: str
    source: str
    metric: str
    measured: float
    predicted: float | None
    p10: float | None
    p90: float | None


def _model(r: dict[str, str]) -> ModelSpec:
    if not r["layers"]:
        spec = get_preset(r["model"])
        assert isinstance(spec, ModelSpec)
        return spec
    return ModelSpec(
        name=r["model"],
        layers=int(r["layers"]),
        hidden=int(r["hidden"]),
        heads=int(r["heads"]),
        kv_heads=int(r["kv_heads"]),
        head_dim=int(r["head_dim"]) if r["head_dim"] else None,
        ffn=int(r["ffn"]),
        vocab=int(r["vocab"]),
        qkv_bias=r["qkv_bias"] == "true",
    )


def _setup(r: dict[str, str], model: ModelSpec) -> RlSetup:
    ppo = r["kind"] == "ppo"
    return RlSetup(
        kind=r["kind"],
        prompts_per_step=int(r["prompts_per_step"]),
        samples_per_prompt=int(r["samples_per_prompt"]),
        prompt_tokens_mean=float(r["prompt_tokens_mean"]),
        prompt_tokens_max=int(r["prompt_tokens_max"]),
        response_tokens_mean=float(r["response_tokens_mean"]),
        response_tokens_max=int(r["response_tokens_max"]),
        critic=ppo,
        reward_model_params=float(model.params()) if ppo else 0.0,  # a policy-sized reward model
    )


def _metric(step: RlStep, metric: str, gen_q: float, train_q: float) -> float:
    if metric == "generation_s":
        return step.generation_s * gen_q
    if metric == "logprob_one_pass_s":
        return step.train.update.forward_s * train_q
    if metric == "update_s":
        return step.update_s * train_q
    return step_at_confidence(step, gen_q, train_q)


def predict(r: dict[str, str], a: PerfAssumptions) -> Row:
    """One published number and the model's prediction with its P10-P90 band."""
    model = _model(r)
    gpu = load_gpus()[r["gpu"]]
    n, per_node = int(r["num_gpus"]), int(r["gpus_per_node"])
    cluster = Cluster(gpu, per_node, n // per_node, float(r["inter_node_gbps"]))
    step = colocated_step(
        model, _setup(r, model), cluster, a, usable_gib(gpu.memory_gib), DEFAULT_RL_ASSUMPTIONS
    )
    measured = float(r["value"])
    if step is None:
        return Row(r["case_id"], r["source_id"], r["metric"], measured, None, None, None)
    gen, train = serve_band_for(gpu, GEN_STACK, a), band_for(gpu, train_precision(gpu), TRAIN_STACK, a)
    return Row(
        r["case_id"],
        r["source_id"],
        r["metric"],
        measured,
        _metric(step, r["metric"], 1.0, 1.0),
        _metric(step, r["metric"], gen.p10, train.p10),
        _metric(step, r["metric"], gen.p90, train.p90),
    )


def rows() -> list[Row]:
    a = PerfAssumptions()
    out = []
    for path in sorted(FOLDER.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            out += [predict(r, a) for r in csv.DictReader(fh)]
    return out


def summary(table: list[Row]) -> dict[str, object]:
    """Per source mean |ln(pred / measured)|; source-weighted mean; band coverage."""
    scored = [r for r in table if r.predicted is not None]
    by_source: dict[str, list[Row]] = {}
    for r in scored:
        by_source.setdefault(r.source, []).append(r)
    per_source = {
        s: statistics.fmean(abs(math.log(r.predicted / r.measured)) for r in rs)
        for s, rs in by_source.items()
    }  # type: ignore[operator]
    weighted = statistics.fmean(per_source.values())
    inside = [r for r in scored if r.p10 is not None and r.p90 is not None and r.p10 <= r.measured <= r.p90]
    return {
        "numbers": len(table),
        "predicted": len(scored),
        "sources": len(by_source),
        "per_source_mean_abs_log_error": {s: round(v, 3) for s, v in per_source.items()},
        "source_weighted_mean_abs_error_pct": round((math.exp(weighted) - 1) * 100, 1),
        "band_coverage": round(len(inside) / len(scored), 3) if scored else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = rows()
    if args.json:
        print(json.dumps({"rows": [r.__dict__ for r in table], "summary": summary(table)}, indent=2))
        return
    print(f"{'case':<52} {'metric':<19} {'measured':>9} {'predicted':>9} {'P10-P90':>17} {'error':>7}")
    for r in table:
        if r.predicted is None:
            print(f"{r.case_id:<52} {r.metric:<19} {r.measured:>9.1f} {'no fit':>9}")
            continue
        band = f"{r.p10:.0f}-{r.p90:.0f}"
        err = r.predicted / r.measured - 1
        print(
            f"{r.case_id:<52} {r.metric:<19} {r.measured:>9.1f} {r.predicted:>9.1f} {band:>17} {err:>+7.0%}"
        )
    s = summary(table)
    print(
        f"{s['numbers']} numbers from {s['sources']} sources: source-weighted mean |error| "
        f"{s['source_weighted_mean_abs_error_pct']}% (geometric), P10-P90 coverage {s['band_coverage']:.0%}"
    )


if __name__ == "__main__":
    main()
