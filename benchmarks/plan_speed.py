"""Plan speed: `ccopt plan` (pruned candidate table + CP-SAT) vs exhaustive enumeration.

Run: python benchmarks/plan_speed.py [JOB.toml ...]
The exhaustive search visits every offering × instance count (same counts as the planner)
× tp × pp × every allowed ZeRO stage × checkpointing × micro-batch (layouts_for), evaluates
memory and step time for each fitting layout, and keeps the cheapest plan meeting deadline
and budget at the job's confidence (step time × its band's quantile, as the planner) — the same
search space without dominance rules, pruning or a solver. Both must find the same cost in
integer cents (the solver's scale; plans that tie in cents are broken by time).
Also times the CLI end to end (process start to output) over 5 runs, and start-up as ratios of
paired runs (`--startup`): `ccopt --version`, `ccopt plan` of the 7B example and `ccopt batch` of
50 jobs, each divided by the time a bare process takes to import the five base libraries
(ortools, pydantic, pandas, typer, rich), measured alternately in the same loop so that the
machine's load cancels out of the ratio; the package's bytecode is compiled first, as an
installed package's is. The commands run on a user cache of their own (CCOPT_CACHE_DIR), warmed
by one run of each: the parsed bundled tables (plain JSON, optimizer/user_cache.py) are what
every run after a user's first one reads. The first run
is measured too, each time on an empty cache.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from optimizer.inputs.jobs.train import load_job
from optimizer.model.bands import band_for, step_band
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import memory_model_for
from optimizer.model.setup import Layout
from optimizer.model.step_model import StepModel, step_model_for
from optimizer.model.step_time import StepTime
from optimizer.pricing.catalog import load_offering_rows
from optimizer.pricing.offering import cost_usd
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.train.enumerate import BatchRule, instance_counts, layouts_for
from optimizer.solve.train.host_check import check_host, host_need_gib, host_rule_of, offering_rejection
from optimizer.solve.train.plan import plan_job
from optimizer.solve.train.prepare import headroom_of, prepare_job
from optimizer.solve.train.spot import spot_hours

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JOBS = [
    "examples/llama7b_10days.toml",
    "examples/qlora_70b_single_node.toml",
    "examples/lora_70b_budget.toml",
]


def exhaustive(job_path: str) -> tuple[float | None, int]:
    """Cheapest cost by brute force and the number of layouts evaluated: every offering ×
    instance count × layout, with the planner's model and rules (memory headroom, the
    internet multi-node rule, host RAM and loader limits, spot interruptions) but none of its
    dominance rules, pruning or solver."""
    job, base = load_job(ROOT / job_path)
    prep = prepare_job(job, load_offering_rows(offline=True)[0], base)
    model, setup, a = prep.model, job.workload.setup(), prep.assumptions
    w, c = job.workload, job.constraints
    batch = BatchRule(w.batch_sequences, w.batch_tolerance)
    headroom, host = headroom_of(c, a), host_rule_of(job.data, a)
    best, evaluated = None, 0
    perf: dict[tuple, list[tuple[Layout, StepTime]]] = {}
    # the planner's model objects, built once per job (memory) and GPU type (step time)
    memory = memory_model_for(model, setup, a)
    step_models: dict[GpuSpec, StepModel] = {}

    def steps_of(gpu: GpuSpec) -> StepModel:
        if gpu not in step_models:
            step_models[gpu] = step_model_for(model, setup, gpu, a)
        return step_models[gpu]

    for off in prep.offerings:
        if not off.gpu.supports(setup.precision) or offering_rejection(off, host, a):
            continue
        gpn = off.gpus_per_instance
        high = min((c.max_gpus or 4096) // gpn, off.max_instances or 10**9, c.max_instances or 10**9)
        if off.inter_node_kind == "internet" and not c.allow_internet_multi_node:
            high = min(high, 1)
        usable = headroom.usable_gib(off.gpu.memory_gib)
        gpu_band = band_for(off.gpu, setup.precision, setup.stack, a)
        for n in instance_counts(c.min_instances, high, gpn, batch, model):
            key = (*off.hardware_class, n)
            if key not in perf:  # same hardware, same times: evaluate once per class
                rows = []
                for base in layouts_for(model, n * gpn, gpn, batch, c.zero_stages):
                    for ckpt in c.activation_checkpointing:
                        lay = replace(base, checkpointing=ckpt)
                        evaluated += 1
                        if memory.memory(lay).device > usable:
                            continue
                        rows.append((lay, steps_of(off.gpu).step_time(lay, off.cluster(n))))
                perf[key] = rows
            for lay, gpu_step in perf[key]:
                if (
                    off.ram_gib is not None
                    and host_need_gib(model, setup, lay, off, gpu_step, host, a)[0] > off.ram_gib
                ):
                    continue
                step, _ = check_host(model, setup, lay, off, n, gpu_step, host, a)
                # at the job's confidence: the step time × its band's quantile (model/bands.py)
                band = step_band(step, off.gpu, setup.precision, setup.stack, a, default=gpu_band)
                factor = 1.0 if c.confidence is None else band.multiplier(c.confidence)
                work_h = w.steps_for_batch(lay.global_batch) * step.time_s * factor / 3600
                hours, _ = spot_hours(off, n, work_h, model, setup, a)
                if off.commitment_hours and hours > off.commitment_hours:
                    continue
                if c.deadline_h is not None and hours > c.deadline_h:
                    continue
                cost = cost_usd(off, n, hours).total_usd
                if c.budget_usd is not None and cost > c.budget_usd:
                    continue
                if best is None or cost < best:
                    best = cost
    return best, evaluated


def cli_seconds(job_path: str, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "optimizer", "plan", job_path, "--json", "--offline"],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


#: the import that start-up is measured against: the base libraries every command could need
FIVE_LIBRARIES = "import ortools.sat.python.cp_model, pydantic, pandas, typer, rich"
#: (label, command) of the start-up table; the 50-job batch is the README's batch example
STARTUP_COMMANDS: list[tuple[str, list[str]]] = [
    ("`ccopt --version`", ["--version"]),
    ("`ccopt plan examples/llama7b_10days.toml`", ["plan", "examples/llama7b_10days.toml", "--offline"]),
    # at the median, as its golden: at P80 the RTX 4090 boxes (a thin band since issue 44)
    # saturate and the solve runs to its time limit, which is not start-up
    (
        "`ccopt batch examples/batch_50_generated.toml --confidence 0.5`",
        ["batch", "examples/batch_50_generated.toml", "--offline", "--confidence", "0.5"],
    ),
]


def _seconds(args: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, capture_output=True, check=False, env=env)
    return time.perf_counter() - start


def _paired(args: list[str], runs: int, cache: Callable[[int], str]) -> tuple[float, float, float]:
    """Median seconds of `ccopt ARGS`, of the five-library import, and median of their ratios
    over `runs` paired runs (the import right before each command), run i's user cache being
    the folder `cache(i)`."""
    base, own, ratios = [], [], []
    for i in range(runs):
        b = _seconds([sys.executable, "-c", FIVE_LIBRARIES])
        env = {**os.environ, "CCOPT_CACHE_DIR": cache(i)}
        t = _seconds([sys.executable, "-m", "optimizer", *args], env)
        base.append(b)
        own.append(t)
        ratios.append(t / b)
    return statistics.median(own), statistics.median(base), statistics.median(ratios)


def startup(runs: int = 11) -> None:
    """Median wall time of each start-up command and its median ratio to the five-library
    import, from `runs` paired runs (the import measured right before each command).

    The package's bytecode is compiled first, as `pip install` compiles it (and as the five
    libraries' is): with PYTHONDONTWRITEBYTECODE set, as on the project's machines, a source
    checkout would otherwise compile every module it imports on every run (~0.3 s of `plan`)."""
    compileall.compile_dir(ROOT / "optimizer", quiet=1)
    print("| command | median s | five-library import s | ratio (median of paired runs) |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        warm = str(Path(folder) / "warm")
        for _, args in STARTUP_COMMANDS:  # one run of each writes what later runs read
            _seconds([sys.executable, "-m", "optimizer", *args], {**os.environ, "CCOPT_CACHE_DIR": warm})
        for label, args in STARTUP_COMMANDS:
            own, base, ratio = _paired(args, runs, lambda _: warm)
            print(f"| {label} | {own:.2f} | {base:.2f} | {ratio:.2f}× |")
        label, args = STARTUP_COMMANDS[1]
        own, base, ratio = _paired(args, runs, lambda i: str(Path(folder) / f"cold-{i}"))
        print(f"| {label}, a user's first run (empty cache) | {own:.2f} | {base:.2f} | {ratio:.2f}× |")


def main(jobs: list[str]) -> None:
    print(
        "| job | plan (API) s | exhaustive s | ratio | same optimum | layouts (exhaustive) | "
        "CLI end to end s (median of 5) |"
    )
    print("|---|---:|---:|---:|---|---:|---:|")
    for path in jobs:
        job, base = load_job(ROOT / path)
        frame = load_offering_rows(offline=True)[0]
        start = time.perf_counter()
        result = plan_job(job, frame, base)
        planned = time.perf_counter() - start
        start = time.perf_counter()
        brute, evaluated = exhaustive(path)
        brute_s = time.perf_counter() - start
        same = (result.plan is None and brute is None) or (
            result.plan is not None
            and brute is not None
            and to_cents(result.plan.cost_usd) == to_cents(brute)
        )  # the solver's scale
        print(
            f"| {path} | {planned:.3f} | {brute_s:.1f} | {brute_s / planned:.0f}× | "
            f"{'yes' if same else 'NO'} | {evaluated:,} | {cli_seconds(path):.2f} |"
        )


if __name__ == "__main__":
    if sys.argv[1:] == ["--startup"]:
        startup()
    else:
        main(sys.argv[1:] or DEFAULT_JOBS)
