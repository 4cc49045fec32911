"""The fastest fitting layout on one cluster: the search of one instance count (scan.py).

Every layout has a lower bound of its step: (micro-batches + bubble) × its micro-batch time,
the bubble being (pp − 1) / vp micro-batches (interleaved 1F1B, as in the step model), × the
centre every step carries. The layouts are timed lowest bound first, and the search stops at
the first whose bound is above the best step found: none after it can be faster. The answer is
the one a scan in the fit list's order gives (ties in step time go to the layout listed first;
tests/solve/test_best_layout_bound.py checks it against timing every layout), with fewer
layouts timed by the full step-time model.
"""

from __future__ import annotations

from collections.abc import Callable

from optimizer.model.cluster import Cluster, StepTime
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.setup import Layout
from optimizer.model.step_model import MicrobatchTimes, StepModel
from optimizer.solve.train.fitting import FitList

__all__ = ["BestLayout", "best_layout", "step_bounds"]

BestLayout = tuple[Layout, MemoryBreakdown, StepTime]


def step_bounds(
    step_model: StepModel, cluster: Cluster, fits: FitList, microbatch_cache: dict[tuple, MicrobatchTimes]
) -> tuple[list[MicrobatchTimes], list[float]]:
    """The micro-batch times and the step's lower bound (module doc) of each fitting layout.

    Micro-batch times do not depend on the instance count (unless the pipeline starts to span
    nodes), so they are kept per hardware class in `microbatch_cache`."""
    spans = cluster.gpus_per_node
    centre = step_model.centre
    micros: list[MicrobatchTimes] = []
    bounds: list[float] = []
    for layout, _ in fits:
        tp, pp = layout.tp, layout.pp
        mkey = (tp, pp, layout.micro_batch, layout.checkpointing, tp * pp > spans)
        micro = microbatch_cache.get(mkey)
        if micro is None:
            micro = microbatch_cache[mkey] = step_model.microbatch_times_s(layout, cluster)
        micros.append(micro)
        bounds.append((layout.grad_accum + (pp - 1) / layout.vp) * (micro[0] + micro[1] + micro[2]) * centre)
    return micros, bounds


def best_layout(
    step_model: StepModel,
    cluster: Cluster,
    fits: FitList,
    microbatch_cache: dict[tuple, MicrobatchTimes],
    host_ram: Callable[[Layout, StepTime], float] | None = None,
    ram_gib: float | None = None,
    least_ram: list[float] | None = None,
) -> BestLayout | None:
    """Fastest of the fitting layouts on `cluster` (ties: the first listed), whose host RAM
    need, if `ram_gib` is known, fits the instance's RAM; the needs checked go to `least_ram`
    (every layout's when none fits, so their least is the same whatever order they are timed in).
    """
    micros, bounds = step_bounds(step_model, cluster, fits, microbatch_cache)
    best: BestLayout | None = None
    best_s, best_at = 0.0, -1
    for i in sorted(range(len(fits)), key=bounds.__getitem__):
        if best is not None and bounds[i] >= best_s:
            if bounds[i] > best_s:
                break  # the bounds only grow from here: no layout left can be faster
            if i > best_at:
                continue  # at best a tie with the best, which is listed earlier
        layout, memory = fits[i]
        step = step_model.step_time(layout, cluster, micros[i])
        t = step.time_s
        if best is None or t < best_s or (t == best_s and i < best_at):
            if host_ram is not None and ram_gib is not None:
                need = host_ram(layout, step)
                if least_ram is not None:
                    least_ram.append(need)
                if need > ram_gib:
                    continue
            best, best_s, best_at = (layout, memory, step), t, i
    return best
