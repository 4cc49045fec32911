"""RL post-training step times: the model against published breakdowns (issue 46).

Reads benchmarks/validation/rl/*.csv (one file per source: every number with its page, date and
quote, and the run's rollout engine and pools as configured: rollout TP, gpu_memory_utilization,
CUDA graphs, waves, generation GPUs, one-step off-policy), predicts each number with the step
model (optimizer/model/rl/step.py: colocated, or a generation pool beside a training pool; the
defaults, no stored calibration), and prints per row the point prediction and the error, then
per source the mean |log error| and the source-weighted summary: each source weighs
the same whatever its row count, and the band coverage (share of numbers inside P10-P90) of
the conformal band (rl_band.py) fitted without the source, source by source.

    python benchmarks/rl_accuracy.py [--json]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.rl_band import conformal_band  # noqa: E402
from optimizer.inputs.gpus import load_gpus  # noqa: E402
from optimizer.model.cluster import Cluster  # noqa: E402
from optimizer.model.presets import get_preset  # noqa: E402
from optimizer.model.rl.phases import generation_phase  # noqa: E402
from optimizer.model.rl.setup import DEFAULT_RL_ASSUMPTIONS, RlAssumptions, RlSetup  # noqa: E402
from optimizer.model.rl.step import RlStep, colocated_step, separate_step, train_side  # noqa: E402
from optimizer.model.setup import PerfAssumptions  # noqa: E402
from optimizer.model.spec import ModelSpec  # noqa: E402
from optimizer.solve.rl.options import usable_gib  # noqa: E402

FOLDER = ROOT / "benchmarks" / "validation" / "rl"
#: the exchangeable unit of the scores: a publisher's versions once (as the training bands'
#: SOURCE_FAMILIES in benchmarks/fit_constants.py): NeMo-RL's blog and its performance page
#: share recipes, clusters and reading conventions
SOURCE_FAMILIES = {"nemo-rl-blog-v0.3": "nemo-rl", "nemo-rl-performance-v0.4": "nemo-rl"}


@dataclass(frozen=True)
class Row:
    case_id: str
    source: str
    metric: str
    measured: float
    predicted: float | None  # the model's point prediction (no band)
    confidence: str  # of the row's setup: medium (read or derived) | low (guessed)


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
        # the rollout engine as the run configured it (0: the model chooses)
        rollout_tp=int(r["rollout_tp"] or 0),
        rollout_memory_utilization=float(r["rollout_memory_utilization"] or 0),
        rollout_cuda_graphs=r["rollout_cuda_graphs"] != "false",
        rollout_wave=int(r["rollout_wave"] or 0),
        async_steps=int(r["async_steps"] or 0),
        optimizer_offload=r.get("optimizer_offload") == "true",
        offload_state_at_refit=r.get("offload_state_at_refit") == "true",
        train_stack=r.get("train_stack") or "fsdp",
        train_tp=int(r.get("train_tp") or 0),
        train_pp=int(r.get("train_pp") or 0),
        train_checkpointing=r.get("train_checkpointing") or "",
    )


def _metric(step: RlStep, metric: str) -> float:
    if metric == "generation_s":
        return step.generation_s
    if metric == "logprob_one_pass_s":
        return step.train.update.forward_s
    if metric == "logprob_s":  # every log-prob pass of the step (reference, old policy, ...)
        return step.logprob_s
    if metric == "sync_s":
        return step.sync_s
    if metric == "update_s":
        return step.update_s
    return step.time_s


def _assumptions(r: dict[str, str]) -> RlAssumptions:
    """The RL constants, with the host's work per decode iteration of the row's engine version
    where the row states it (blank: the default, a 2025+ engine)."""
    host = r.get("decode_host_s_per_step") or ""
    if not host:
        return DEFAULT_RL_ASSUMPTIONS
    return replace(DEFAULT_RL_ASSUMPTIONS, decode_host_s_per_step=float(host))


def _separate(r: dict[str, str], model: ModelSpec, a: PerfAssumptions) -> RlStep | None:
    """A step over `generation_gpus` generating and the rest training, as the planner times a
    generation pool beside a training pool (solve/rl/options.py, model/rl/step.py). A pool
    smaller than a node shares it: the training pool's nodes are gcd(its GPUs, per node) GPUs
    each, and the weight sync crosses at least one node's fabric."""
    gpu, rla, rl = load_gpus()[r["gpu"]], _assumptions(r), _setup(r, model)
    per_node, gbps, gen_gpus = int(r["gpus_per_node"]), float(r["inter_node_gbps"]), int(r["generation_gpus"])
    train_gpus = int(r["num_gpus"]) - gen_gpus
    per = math.gcd(train_gpus, per_node)
    trainers = Cluster(gpu, per, train_gpus // per, gbps)
    budget = usable_gib(gpu.memory_gib)
    gen = generation_phase(model, rl, gpu, gen_gpus, per_node, a, gpu.memory_gib - budget, rla=rla)
    side = train_side(model, rl, trainers, a, budget, rla)
    if gen is None or side is None:
        return None
    nodes = max(1, min(gen_gpus // per_node, train_gpus // per_node))  # the slower pool's fabric
    return separate_step(model, rl, gen, side, nodes * gbps, rla)


def predict(r: dict[str, str], a: PerfAssumptions) -> Row:
    """One published number and the model's point prediction (the run's pools, defaults)."""
    model = _model(r)
    gpu = load_gpus()[r["gpu"]]
    n, per_node = int(r["num_gpus"]), int(r["gpus_per_node"])
    cluster = Cluster(gpu, per_node, n // per_node, float(r["inter_node_gbps"]))
    if int(r["generation_gpus"] or 0):
        step = _separate(r, model, a)
    else:
        step = colocated_step(
            model, _setup(r, model), cluster, a, usable_gib(gpu.memory_gib), _assumptions(r)
        )
    predicted = None if step is None else _metric(step, r["metric"])
    source = SOURCE_FAMILIES.get(r["source_id"], r["source_id"])
    return Row(r["case_id"], source, r["metric"], float(r["value"]), predicted, r["confidence"])


def rows() -> list[Row]:
    a = PerfAssumptions()
    out = []
    for path in sorted(FOLDER.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            out += [predict(r, a) for r in csv.DictReader(fh)]
    return out


def _ratio(r: Row) -> float:
    assert r.predicted is not None
    return r.measured / r.predicted


def fit_band(table: list[Row]) -> tuple[float, float, float] | None:
    """(P10, P50, P90) of measured ÷ predicted: split conformal across sources (rl_band.py),
    every predicted number in, guessed setups too (a user's lengths are guesses as well)."""
    units = [(r.source, math.log(_ratio(r))) for r in table if r.predicted is not None]
    band = conformal_band(units)
    return None if band is None else (round(band[0], 3), round(band[1], 3), round(band[2], 3))


def summary(table: list[Row]) -> dict[str, object]:
    """Point error per source and source-weighted; then leave one source out: the band fitted
    on the other sources, its median's error and its P10-P90 coverage on the held-out one."""
    scored = [r for r in table if r.predicted is not None]
    sources = sorted({r.source for r in scored})
    raw: dict[str, float] = {}
    held: dict[str, float] = {}
    covered: dict[str, str] = {}
    inside, total = 0, 0
    for s in sources:
        mine = [r for r in scored if r.source == s]
        raw[s] = statistics.fmean(abs(math.log(_ratio(r))) for r in mine)
        band = fit_band([r for r in scored if r.source != s])
        if band is None:
            continue
        held[s] = statistics.fmean(abs(math.log(_ratio(r) / band[1])) for r in mine)
        hits = sum(band[0] <= _ratio(r) <= band[2] for r in mine)
        covered[s] = f"{hits}/{len(mine)}"
        inside += hits
        total += len(mine)
    pct = lambda logs: round((math.exp(statistics.fmean(logs)) - 1) * 100, 1)  # noqa: E731
    return {
        "numbers": len(table),
        "predicted": len(scored),
        "sources": len(sources),
        "point_mean_abs_log_error": {s: round(v, 3) for s, v in raw.items()},
        "point_source_weighted_error_pct": pct(raw.values()),
        "loso_source_weighted_error_pct": pct(held.values()) if held else None,
        "loso_band_coverage": round(inside / total, 3) if total else None,
        "loso_coverage_by_source": covered,
        "band_all_sources": fit_band(scored),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = rows()
    s = summary(table)
    if args.json:
        print(json.dumps({"rows": [r.__dict__ for r in table], "summary": s}, indent=2))
        return
    print(f"{'case':<48} {'metric':<19} {'measured':>9} {'predicted':>9} {'error':>6} {'setup':>6}")
    for r in table:
        if r.predicted is None:
            print(f"{r.case_id:<48} {r.metric:<19} {r.measured:>9.1f} {'no fit':>9}")
            continue
        err = r.predicted / r.measured - 1
        shown = f"{r.measured:>9.1f} {r.predicted:>9.1f} {err:>+6.0%}"
        print(f"{r.case_id:<48} {r.metric:<19} {shown} {r.confidence:>6}")
    print(
        f"{s['numbers']} numbers from {s['sources']} sources. Point prediction: source-weighted mean "
        f"|error| {s['point_source_weighted_error_pct']}% (geometric). RL band (measured / predicted, "
        f"split conformal across sources, fitted on the other sources), leave one source out: "
        f"median's error {s['loso_source_weighted_error_pct']}%, "
        f"P10-P90 coverage {s['loso_band_coverage']:.0%} "
        f"({', '.join(f'{k} {v}' for k, v in s['loso_coverage_by_source'].items())}). "
        f"Band on every source (the planner's, optimizer/model/rl/setup.py): {s['band_all_sources']}"
    )


if __name__ == "__main__":
    main()
