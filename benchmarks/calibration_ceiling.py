"""How far one measured point can get (issue 27): the ceilings of any rule that transfers one
run's correction to the other runs of its source × GPU × precision, and feature-aware transfer
kernels beside the current rule (optimizer/model/calibrated.py), on the validation set.

Run: python benchmarks/calibration_ceiling.py [--markdown]

Setting (as benchmarks/calibration_points.py): constants leave-one-source-out; a group is a
source × GPU × precision with ≥ 2 decoder-LM training-throughput runs; a run's correction is
y = log(fitted base efficiency / uncalibrated), fitted from its measured step
(optimizer.inputs.calibration.fit_efficiency). Transferring a correction c to a run is
linearised here: its step becomes step · (φ e^(−c) + 1 − φ), φ the compute share of its
uncalibrated step (optimizer.calibrate.points.step_split); error |measured/predicted − 1|.
The current rule's line below is that rule under this linearisation (calibration_points.py
prints it through the model itself: "shared").

Protocols: "first" — each group's first run (file order) is the point, the others scored (the
Must-show protocol); "every" — each fittable run of a group in turn is the point, its scores
averaged, so that no number hinges on which run comes first. A group is "worse" when its
median error (every: the mean over points of the medians) exceeds the uncalibrated one.

Ceilings (in-sample, they look at the runs they score; no rule can use them):
- offset oracle: every run corrected by its group's median log residual (no point at all);
- scalar transfer: correction = w · y_point, the best global w and the best w per group;
- two classes: w_same for runs of the point's model, method and offload, w_other else.

Candidates (nested: a held-out source never informs its own variances): Gaussian-process
transfer with cov(a, b) = τ² + σ_f² exp(−Σ_i (Δf_i/ℓ_i)²) + [a = b](σ_0² + ν²) over run
features (log parameter count, same model, method full/lora/qlora, offload, log GPU count, log
sequence length, log tp/pp/cp, log micro-batch, log size factor, checkpointing, compile); one
point transfers (τ² + σ_f² k_ab)/(τ² + σ_f² + σ_0² + ν²). Variances and length scales are the
maximum marginal likelihood (Rasmussen & Williams 2006 §5.4.1 eq. 5.8) of the uncalibrated
corrections grouped by source × GPU × precision, the groups independent with mean 0;
"step-space nugget": σ_0² is the variance of the run's own term in log step, σ_0²/φ² in y.
Two points (groups with ≥ 3 runs of different size factors; smallest and largest size factor
measured, as calibration_points.py): the posterior mean of the same kernel given both.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from calibration_points import CAL_BAND, Run, _point, nested_components, runs_of  # noqa: E402
from cases import build_cases  # noqa: E402
from folds import loso  # noqa: E402

from optimizer.calibrate.points import step_split  # noqa: E402
from optimizer.model.calibrated import COMPONENTS  # noqa: E402
from optimizer.model.efficiency import uncalibrated_efficiency  # noqa: E402

#: categorical features: a pair differs by 1 or 0 (the others are logs: the difference)
CATEGORICAL = ("model", "method", "offload", "ckpt", "compile")
#: the candidate kernels' features (log unless categorical)
KERNELS: dict[str, tuple[str, ...]] = {
    "size factor (1-D, ML)": ("x",),
    "model": ("model", "logp"),
    "model + kind": ("model", "logp", "method", "offload"),
    "model + kind + layout": (
        "model",
        "logp",
        "method",
        "offload",
        "gpus",
        "seq",
        "tp",
        "pp",
        "cp",
        "mb",
        "x",
        "ckpt",
        "compile",
    ),  # fmt: skip
}
#: the floor of a compute share (a run with no compute tells nothing of its efficiency)
MIN_SHARE = 0.05
#: bounds of the log variances and log length scales searched
LOG_VAR, LOG_LEN = (-12.0, 2.0), (-5.0, 5.0)


@dataclass(frozen=True)
class Sample:
    """A held-out run: group, fold, uncalibrated log residual of its step, correction y (None:
    not fittable), compute share φ of its uncalibrated step, features."""

    group: tuple[str, str, str]
    fold: str
    log_ratio: float
    y: float | None
    share: float
    features: dict[str, float | str]

    def error(self, c: float) -> float:
        """|measured/predicted − 1| after the compute efficiency is multiplied by e^c."""
        return abs(math.exp(self.log_ratio) / (self.share * math.exp(-c) + 1 - self.share) - 1)


def sample_of(run: Run) -> Sample:
    assert run.case.train is not None
    setup, layout, cluster = run.case.train
    spec, gpu = run.case.spec, run.case.gpu
    prior = uncalibrated_efficiency(gpu, setup.precision, run.base, run.case.stack)
    point = _point(run)
    split = step_split(spec, setup, layout, cluster, replace(run.base, efficiency=prior))
    total = split["compute_s"] + split["comm_s"] + split["fixed_s"]
    offload = (
        setup.offload_optimizer or setup.offload_params or setup.offload_activations or setup.offload_layers
    )
    features: dict[str, float | str] = {
        "logp": math.log(spec.params()),
        "model": f"{spec.params():.3g}",
        "method": setup.method,
        "offload": str(bool(offload)),
        "ckpt": layout.checkpointing,
        "compile": str(setup.compile),
        "gpus": math.log(layout.gpus),
        "seq": math.log(setup.seq_len),
        "tp": math.log(layout.tp),
        "pp": math.log(layout.pp),
        "cp": math.log(layout.cp),
        "mb": math.log(layout.micro_batch),
        "x": run.x,
    }
    y = None if point is None else math.log(float(point["efficiency"]) / prior)  # type: ignore[arg-type]
    share = max(MIN_SHARE, split["compute_s"] / total)
    return Sample(run.group, run.fold, run.log_ratio, y, share, features)


def grouped(samples: Sequence[Sample]) -> dict[tuple[str, str, str], list[Sample]]:
    out: dict[tuple[str, str, str], list[Sample]] = defaultdict(list)
    for s in samples:
        out[s.group].append(s)
    return dict(out)


# ---- kernels --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    """cov(a, b) = τ² + σ_f² exp(−Σ (Δf/ℓ)²) + [a = b](σ_0² (/φ² if step_noise) + ν²)."""

    features: tuple[str, ...]
    shared: float  # τ²
    near: float  # σ_f²
    own: float  # σ_0²
    lengths: tuple[float, ...]
    step_noise: bool = False
    slope: float = 0.0  # β² of the clamped slope in log size factor (the current rule's)

    def distances(self, a: Sequence[Sample], b: Sequence[Sample]) -> list[np.ndarray]:
        return [_difference(f, a, b) for f in self.features]

    def cov(self, d: list[np.ndarray], a: Sequence[Sample] | None = None) -> np.ndarray:
        """Covariances from the per-feature squared differences `d`; with `a`, of the runs `a`
        among themselves (their own terms on the diagonal)."""
        z = sum((m / (ell * ell) for m, ell in zip(d, self.lengths, strict=True)), np.zeros_like(d[0]))
        k = self.shared + self.near * np.exp(-z)
        if a is not None:
            own = np.array([self.own / (s.share**2 if self.step_noise else 1.0) for s in a])
            k = k + np.diag(own + COMPONENTS.noise)
        return k

    def correction(self, target: Sample, points: Sequence[Sample]) -> float:
        """The posterior mean of the target's correction given the points' (Rasmussen &
        Williams 2006 eq. 2.25)."""
        xs = np.array([float(p.features["x"]) for p in points])
        u = np.clip(float(target.features["x"]), xs.min(), xs.max()) - xs.mean()
        k = self.cov(self.distances(points, points), points) + self.slope * np.outer(
            xs - xs.mean(), xs - xs.mean()
        )
        row = self.cov(self.distances([target], points))[0] + self.slope * u * (xs - xs.mean())
        return float(row @ np.linalg.solve(k, np.array([p.y for p in points], dtype=float)))


def _difference(feature: str, a: Sequence[Sample], b: Sequence[Sample]) -> np.ndarray:
    if feature in CATEGORICAL:
        return np.array([[float(u.features[feature] != v.features[feature]) for v in b] for u in a])
    fa = np.array([float(u.features[feature]) for u in a])
    fb = np.array([float(v.features[feature]) for v in b])
    return (fa[:, None] - fb[None, :]) ** 2


def _unpack(theta: np.ndarray, features: tuple[str, ...], step_noise: bool) -> Kernel:
    shared, near, own = np.exp(theta[:3])
    return Kernel(features, float(shared), float(near), float(own), tuple(np.exp(theta[3:])), step_noise)


def fit_kernel(samples: Sequence[Sample], features: tuple[str, ...], step_noise: bool = False) -> Kernel:
    """The maximum marginal likelihood kernel of the groups' uncalibrated corrections (module
    doc; y, or the log residual where a run cannot be fitted), by a compass search in the log
    parameters (each coordinate ±h, h halved when no step helps; deterministic)."""
    cache = []
    for items in grouped(samples).values():
        k0 = Kernel(features, 1, 1, 1, (1.0,) * len(features), step_noise)
        ys = np.array([s.y if s.y is not None else -s.log_ratio for s in items])
        cache.append((items, k0.distances(items, items), ys))

    def nll(theta: np.ndarray) -> float:
        kernel, total = _unpack(theta, features, step_noise), 0.0
        for items, d, ys in cache:
            low = np.linalg.cholesky(kernel.cov(d, items))
            a = np.linalg.solve(low, ys)
            total += 0.5 * float(a @ a) + float(np.log(np.diag(low)).sum())
        return total

    lows = np.array([LOG_VAR[0]] * 3 + [LOG_LEN[0]] * len(features))
    highs = np.array([LOG_VAR[1]] * 3 + [LOG_LEN[1]] * len(features))
    theta = np.array([math.log(0.05), math.log(0.02), math.log(0.01)] + [0.0] * len(features))
    best, h = nll(theta), 1.0
    while h > 0.02:
        moved = False
        for i in range(len(theta)):
            for sign in (1.0, -1.0):
                trial = theta.copy()
                trial[i] = min(highs[i], max(lows[i], trial[i] + sign * h))
                value = nll(trial)
                if value < best - 1e-9:
                    theta, best, moved = trial, value, True
                    break
        if not moved:
            h /= 2
    return _unpack(theta, features, step_noise)


def current_rule(runs: Sequence[Run]) -> Callable[[str], Kernel]:
    """fold -> the rule of optimizer/model/calibrated.py with its nested method-of-moments
    variances (calibration_points.components, "shared+slope"; one point: no slope)."""
    comps = nested_components(runs)

    def of(fold: str) -> Kernel:
        c = comps(fold)["shared+slope"]
        return Kernel(("x",), c.shared, c.own, 0.0, (c.length,), slope=c.slope)

    return of


def nested_kernel(
    samples: Sequence[Sample], features: tuple[str, ...], step_noise: bool = False
) -> Callable[[str], Kernel]:
    """fold -> the ML kernel fitted without that fold's runs (cached)."""
    cache: dict[str, Kernel] = {}

    def of(fold: str) -> Kernel:
        if fold not in cache:
            cache[fold] = fit_kernel([s for s in samples if s.fold != fold], features, step_noise)
        return cache[fold]

    return of


# ---- protocols ------------------------------------------------------------------------------

Transfer = Callable[[Sample, Sample, Sequence[Sample]], float]  # (target, point, group) -> c


@dataclass(frozen=True)
class Score:
    share: float  # of the scored runs within ±10% (each group's runs weighted as many as scored)
    median: float  # of |error|
    worse: int  # groups whose median got worse than uncalibrated
    groups: int


def score(groups: dict[tuple[str, str, str], list[Sample]], transfer: Transfer, every: bool) -> Score:
    """The protocol "first" (every=False) or "every" of the module doc under `transfer`."""
    inside = total = 0.0
    errors: list[float] = []
    worse = counted = 0
    for items in groups.values():
        points = [p for p in (items if every else items[:1]) if p.y is not None]
        if len(items) < 2 or not points:
            continue
        medians, medians0 = [], []
        for p in points:
            others = [s for s in items if s is not p]
            es = [s.error(transfer(s, p, items)) for s in others]
            weight = 1 / len(points)
            inside += weight * sum(e <= CAL_BAND for e in es)
            total += weight * len(es)
            errors += es
            medians.append(statistics.median(es))
            medians0.append(statistics.median(s.error(0.0) for s in others))
        counted += 1
        worse += statistics.fmean(medians) > statistics.fmean(medians0) + 1e-12
    if not errors:
        return Score(0.0, 0.0, 0, 0)
    return Score(inside / total, statistics.median(errors), worse, counted)


def kernel_transfer(kernels: Callable[[str], Kernel]) -> Transfer:
    return lambda target, point, _: kernels(point.fold).correction(target, [point])


def scalar(w: float) -> Transfer:
    return lambda target, point, _: w * float(point.y)  # type: ignore[arg-type]


def _same(a: Sample, b: Sample) -> bool:
    return all(a.features[f] == b.features[f] for f in ("model", "method", "offload"))


def two_class(w_same: float, w_other: float) -> Transfer:
    return lambda t, p, _: (w_same if _same(t, p) else w_other) * float(p.y)  # type: ignore[arg-type]


def offset_oracle(target: Sample, point: Sample, items: Sequence[Sample]) -> float:
    """The group's median correction (y; where a run cannot be fitted, its log residual over
    its compute share), whatever the point."""
    return statistics.median(s.y if s.y is not None else -s.log_ratio / s.share for s in items)


GRID = [i / 20 for i in range(21)]


def per_group_best(groups: dict[tuple[str, str, str], list[Sample]], every: bool) -> Score:
    """Each group at its own best scalar w (in-sample)."""
    best = {
        key: max(GRID, key=lambda w, k=key: score({k: groups[k]}, scalar(w), every).share) for key in groups
    }
    return score(groups, lambda t, p, items: best[t.group] * float(p.y), every)  # type: ignore[arg-type]


def two_points(
    groups: dict[tuple[str, str, str], list[Sample]], kernels: Callable[[str], Kernel]
) -> tuple[int, int, int, float, float]:
    """(groups, two points' median error ≤ the better single point's in, ≤ the mean of the
    two single points' in, share within ±10% with one (small) point, with two) on the groups
    with ≥ 3 fittable runs of different size factors."""
    n = better = mean = 0
    one_in = two_in = scored = 0
    for items in groups.values():
        fit = sorted((s for s in items if s.y is not None), key=lambda s: float(s.features["x"]))
        if len(fit) < 3 or float(fit[-1].features["x"]) - float(fit[0].features["x"]) < 0.01:
            continue
        small, large = fit[0], fit[-1]
        others = [s for s in items if s is not small and s is not large]
        k = kernels(small.fold)
        med = {
            name: statistics.median(s.error(k.correction(s, pts)) for s in others)
            for name, pts in (("small", [small]), ("large", [large]), ("two", [small, large]))
        }
        n += 1
        better += med["two"] <= min(med["small"], med["large"]) + 1e-12
        mean += med["two"] <= (med["small"] + med["large"]) / 2 + 1e-12
        one_in += sum(s.error(k.correction(s, [small])) <= CAL_BAND for s in others)
        two_in += sum(s.error(k.correction(s, [small, large])) <= CAL_BAND for s in others)
        scored += len(others)
    return n, better, mean, one_in / scored, two_in / scored


# ---- output ---------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _cells(first: Score, every: Score) -> list[str]:
    return [
        _pct(first.share),
        _pct(first.median),
        f"{first.worse}/{first.groups}",
        _pct(every.share),
        _pct(every.median),
        f"{every.worse}/{every.groups}",
    ]


def _table(head: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(r) + " |" for r in [head, ["---"] * len(head), *body]]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    return ["  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)) for row in [head, *body]]


HEAD = ["rule", "first ±10%", "first median", "first worse", "every ±10%", "every median", "every worse"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    runs = runs_of(loso(build_cases()[0]))
    samples = [sample_of(r) for r in runs]
    groups = grouped(samples)
    h = "#### " if args.markdown else ""

    def both(t: Transfer) -> list[str]:
        return _cells(score(groups, t, False), score(groups, t, True))

    lines = [f"{h}Ceilings of one point (in-sample: they look at the runs they score)\n"]
    body = [["uncalibrated", *both(scalar(0.0))], ["offset oracle (group median)", *both(offset_oracle)]]
    for w in (0.5, 0.7, 0.85, 1.0):
        body.append([f"scalar w = {w:g}", *both(scalar(w))])
    first_w = max(GRID, key=lambda w: score(groups, scalar(w), False).share)
    every_w = max(GRID, key=lambda w: score(groups, scalar(w), True).share)
    body.append(
        [
            f"best global w (first {first_w:g}, every {every_w:g})",
            *_cells(score(groups, scalar(first_w), False), score(groups, scalar(every_w), True)),
        ]
    )
    body.append(["best w per group", *_cells(per_group_best(groups, False), per_group_best(groups, True))])
    pairs = [(a, b) for a in GRID[::2] for b in GRID[::2]]
    fa = max(pairs, key=lambda ab: score(groups, two_class(*ab), False).share)
    ea = max(pairs, key=lambda ab: score(groups, two_class(*ab), True).share)
    body.append(
        [
            f"best two-class w (same model {fa[0]:g}/{ea[0]:g}, other {fa[1]:g}/{ea[1]:g})",
            *_cells(score(groups, two_class(*fa), False), score(groups, two_class(*ea), True)),
        ]
    )
    lines += _table(HEAD, body, args.markdown)

    lines += ["", f"{h}Transfer kernels, nested (variances without the held-out source)\n"]
    candidates: list[tuple[str, Callable[[str], Kernel], Kernel | None]] = [
        ("current rule (size factor, moments)", current_rule(runs), None)
    ]
    for name, features in KERNELS.items():
        candidates.append((name, nested_kernel(samples, features), fit_kernel(samples, features)))
    last = next(reversed(KERNELS.values()))
    candidates.append(
        ("… + step-space nugget", nested_kernel(samples, last, True), fit_kernel(samples, last, True))
    )
    body, fitted, twos = [], [], []
    for name, kernels, everywhere in candidates:
        body.append([name, *both(kernel_transfer(kernels))])
        n, better, mean, one_in, two_in = two_points(groups, kernels)
        twos.append([name, str(n), str(better), str(mean), _pct(one_in), _pct(two_in)])
        if everywhere is not None:
            ells = ", ".join(
                f"{f} {ell:.2g}" for f, ell in zip(everywhere.features, everywhere.lengths, strict=True)
            )
            fitted.append(
                f"{'- ' if args.markdown else ''}{name}: τ² = {everywhere.shared:.4f}, σ_f² = "
                f"{everywhere.near:.4f}, σ_0² = {everywhere.own:.4f}; ℓ: {ells}"
            )
    lines += _table(HEAD, body, args.markdown)
    lines += ["", "maximum likelihood on all sources:", *fitted, "", f"{h}Two points with the same kernels\n"]
    head = ["rule", "groups", "two ≤ better single", "two ≤ mean of singles", "±10% one (small)", "±10% two"]
    lines += _table(head, twos, args.markdown)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
