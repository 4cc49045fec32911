"""Checks of the calibration store ($CCOPT_CALIBRATION) before anything reads or writes it.

Every load and save of the store (optimizer.inputs.calibration, inputs.profile_store) calls
`check_calibration_store` first, so a store that is a directory, not UTF-8, not JSON, or holds
an efficiency that is not a finite number in [0.001, 1] (an old entry or a stored run) is a
one-line error naming the file, the entry and the allowed values. The thresholds beyond which
`ccopt calibrate` refuses a measured run (check_memory, check_speed, check_achieved) live here
too, stated once.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, TypeGuard

from optimizer.errors import ConfigError
from optimizer.files import MAX_NESTING, check_nesting, open_input
from optimizer.inputs.gpus import resolve_gpu_id
from optimizer.model.calibrated import COMM_RANGE
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory_breakdown import MEMORY_KINDS

__all__ = [
    "calibration_path",
    "check_calibration_store",
    "check_document",
    "EFFICIENCY_RANGE",
    "MIN_EFFICIENCY",
    "MAX_ACHIEVED_EFFICIENCY",
    "MAX_SPEEDUP_VS_MODEL",
    "MAX_SLOWDOWN_VS_MODEL",
    "MEMORY_SLACK",
    "check_memory",
    "check_speed",
    "check_achieved",
    "MIN_ACTIVATION_FACTOR",
    "MAX_ACTIVATION_FACTOR",
    "DEFAULT_MEMORY_KIND",
    "memory_kind",
    "check_activation_factor",
]

#: what a stored base efficiency may be: calibration fits it by bisection on [0.001, 1]
EFFICIENCY_RANGE = "a number ≥ 0.001 and ≤ 1"
MIN_EFFICIENCY = 0.001

# ---- what `ccopt calibrate` refuses to store (a run wildly outside the model's band) ----
#: GUESS: no training step sustains more than 90% of the dense spec peak: even one large GEMM
#: reaches ~80% (H100) to ~87% (A100) of it (MAMF, stas00/ml-engineering). `--force` stores it
MAX_ACHIEVED_EFFICIENCY = 0.9
#: GUESS: a run measured more than 3× faster than the uncalibrated model predicts is a wrong
#: number or a wrong description of the run (the model's widest P10-P90 band is 2× faster:
#: PerfAssumptions.profile_band_unmeasured). `--force` stores it
MAX_SPEEDUP_VS_MODEL = 3.0
#: GUESS: a run more than 20× slower than predicted (< ~3% of the peak on most GPUs) is stalled
#: on something the model does not describe (input pipeline, CPU, a wrong GPU). `--force`
MAX_SLOWDOWN_VS_MODEL = 20.0
#: GUESS: a measured peak memory per GPU may exceed the card's memory by 5% (GB vs GiB, the
#: driver's rounding), never more: that is physics, not overridable
MEMORY_SLACK = 1.05
#: GUESS: a measured peak implying less than 0.2× or more than 5× the activation bytes the model
#: counts for the run is a wrong number, a wrong memory kind or a wrong description of the run
#: (the fitted per-stack multipliers of data/fitted.toml span ~0.5-2×). `--force` stores it
MIN_ACTIVATION_FACTOR = 0.2
MAX_ACTIVATION_FACTOR = 5.0
#: the memory kind of a --peak-memory-gib given without --memory-kind: what nvidia-smi (and
#: every cloud console) shows is the one figure a user reads without instrumenting the training
#: script, and the one the plan's fit check compares with the card (MemoryBreakdown.fits);
#: `ccopt measure` files say theirs ("allocated": torch.cuda.max_memory_allocated)
DEFAULT_MEMORY_KIND = "nvidia-smi"


def calibration_path() -> Path:
    """$CCOPT_CALIBRATION, else $XDG_CONFIG_HOME/ccopt/calibration.json (~/.config by default)."""
    env = os.environ.get("CCOPT_CALIBRATION")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "ccopt" / "calibration.json"


NESTED_TOO_DEEP = f"arrays/tables nested deeper than {MAX_NESTING} levels; allowed: at most {MAX_NESTING}"
#: the largest calibration store read (a run is ~1 kB: 10,000 runs are ~10 MB)
MAX_STORE_BYTES = 256 * 1024 * 1024


def _document(file: Path) -> Any:
    """The store's JSON document: a regular file (a FIFO or device is refused, not waited on),
    at most MAX_STORE_BYTES, strict JSON nested at most MAX_NESTING deep."""
    what = f"calibration store {file}"
    try:
        with open_input(file, "calibration store") as handle:
            raw = handle.read(MAX_STORE_BYTES + 1)
        if len(raw) > MAX_STORE_BYTES:
            raise ConfigError(f"{what}: larger than {MAX_STORE_BYTES} bytes; allowed: a store ccopt wrote")
        text = raw.decode("utf-8")
    except IsADirectoryError:
        raise ConfigError(
            f"{what} (CCOPT_CALIBRATION) is a directory; "
            "allowed: a JSON file path (created by `ccopt calibrate`)"
        ) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what}: not UTF-8 text (byte {exc.start}: {exc.reason}); delete or fix it"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read ({exc.strerror or exc})") from None
    try:  # NaN and Infinity parse here: the checks below name the field that holds one
        data = json.loads(text)
    except RecursionError:  # deeper than the parser goes
        raise ConfigError(f"{what}: {NESTED_TOO_DEEP}") from None
    except ValueError as exc:
        raise ConfigError(f"{what}: not valid JSON ({exc}); delete or fix it") from None
    check_nesting(data, what)
    if not isinstance(data, dict) or not isinstance(data.get("entries", {}), dict):
        raise ConfigError(
            f"calibration store {file}: entries: must be a table of "
            '"GPU/precision" → {efficiency: ...}; delete or fix it'
        )
    if not isinstance(data.get("points", []), list):
        raise ConfigError(f"calibration store {file}: points: must be a list of runs; delete or fix it")
    return data


def read_calibration_document(file: Path) -> dict[str, Any]:
    """The store's document ({"entries": {}} when there is none yet); ConfigError when it is
    not a valid store (module docstring)."""
    if not os.path.lexists(file) or not file.exists():
        return {"entries": {}}
    document: dict[str, Any] = _document(file)
    return document


def store_target(path: Path) -> Path:
    """The file a store path names, through any symlinks: writes go there, and the lock beside
    it, so a linked store keeps receiving runs and two links to one store lock each other out."""
    return Path(os.path.realpath(path))


def check_calibration_store(path: Path | None = None) -> None:
    """Raise ConfigError unless the store is absent or valid (see the module docstring)."""
    file = path or calibration_path()
    if not os.path.lexists(file) or (
        file.is_symlink() and not file.exists()
    ):  # absent, or a link to none yet
        if file.parent.exists() and not file.parent.is_dir():
            raise ConfigError(f"calibration store {file}: {file.parent} is a file, not a directory")
        return
    check_document(_document(file), file)


def check_document(data: dict[str, Any], file: Path) -> None:
    """Raise ConfigError unless every old entry and stored run of the store document `data`
    (of `file`) is valid; the store's writer checks the document it is about to write too."""
    for key, entry in data.get("entries", {}).items():
        where = f"calibration store {file}: entries.{key}"
        if not isinstance(key, str) or "/" not in key:
            raise ConfigError(f'{where}: key must be "GPU_ID/precision"; delete or fix it')
        value = entry.get("efficiency") if isinstance(entry, dict) else None
        if not (_number(value) and MIN_EFFICIENCY <= value <= 1):
            raise ConfigError(
                f"{where}.efficiency: {value!r} is not allowed; allowed: "
                f"{EFFICIENCY_RANGE} (rerun `ccopt calibrate` or delete the entry)"
            )
    for i, point in enumerate(data.get("points", [])):
        _check_point(point, f"calibration store {file}: points[{i}]")
    if not isinstance(data.get("memory_points", []), list):
        raise ConfigError(
            f"calibration store {file}: memory_points: must be a list of measured peaks; delete or fix it"
        )
    for i, point in enumerate(data.get("memory_points", [])):
        _check_memory_point(point, f"calibration store {file}: memory_points[{i}]")


#: the way out of a damaged stored run, closing each refusal of one
_FIX = "(rerun `ccopt calibrate` or remove the run: ccopt calibrate --remove ID)"


def _check_names(point: dict[str, Any], keys: tuple[str, ...], where: str) -> None:
    """The name fields of a stored run or peak are non-empty text, its GPU the catalog's id."""
    for key in keys:
        if not isinstance(point.get(key), str) or not point[key]:
            raise ConfigError(f"{where}.{key}: {point.get(key)!r} is not allowed; allowed: a name")
    _check_gpu_id(point["gpu"], f"{where}.gpu")


def _check_memory_point(point: Any, where: str) -> None:
    """One stored peak: id, model, stack, gpu, precision are text, the kind one of
    MEMORY_KINDS, the measured peak and the activation factor finite and > 0."""
    if not isinstance(point, dict):
        raise ConfigError(f"{where}: must be a table (id, model, stack, kind, peak_gib, activation_factor)")
    _check_names(point, ("id", "model", "stack", "gpu", "precision"), where)
    if point.get("kind") not in MEMORY_KINDS:
        raise ConfigError(
            f"{where}.kind: {point.get('kind')!r} is not allowed; allowed: {', '.join(MEMORY_KINDS)}"
        )
    for key in ("peak_gib", "activation_factor"):
        value = point.get(key)
        if not (_number(value) and value > 0):
            raise ConfigError(
                f"{where}.{key}: {value!r} is not allowed; allowed: a number > 0 "
                "(rerun `ccopt calibrate` or remove it: ccopt calibrate --remove ID)"
            )


def _check_point(point: Any, where: str) -> None:
    """One stored run: id, gpu, precision and stack are text, the efficiency in range, the size
    factor in (0, 1]."""
    if not isinstance(point, dict):
        raise ConfigError(f"{where}: must be a table (id, gpu, precision, stack, efficiency, ...)")
    _check_names(point, ("id", "gpu", "precision", "stack"), where)
    _check_measured(point.get("measured"), f"{where}.measured")
    for key, lo, allowed in (
        ("efficiency", MIN_EFFICIENCY, EFFICIENCY_RANGE),
        ("size_factor", 1e-9, "a number > 0 and ≤ 1"),
    ):
        value = point.get(key)
        if not (_number(value) and lo <= value <= 1):
            raise ConfigError(f"{where}.{key}: {value!r} is not allowed; allowed: {allowed} {_FIX}")
    _check_split(point, where)


#: the layout counts a stored run records: each a whole number ≥ 1 (zero_stage: 0-3)
_COUNTS = ("dp", "tp", "pp", "micro_batch", "grad_accum", "num_gpus", "global_batch", "seq_len")


def _check_gpu_id(gpu: str, where: str) -> None:
    """A stored run names its GPU by the catalog's id (what `ccopt calibrate` writes): an unknown
    name or an alias would be matched by nothing, so it is refused instead of ignored."""
    try:
        canonical = resolve_gpu_id(gpu, where)
    except ConfigError as exc:
        raise ConfigError(f"{exc} {_FIX}") from None
    if canonical != gpu:
        raise ConfigError(f"{where}: {gpu!r} is an alias; allowed: the GPU id {canonical!r} {_FIX}")


def _check_measured(measured: object, where: str) -> None:
    """What a run measured, where given: step_time_s and tokens_per_s > 0, the layout's counts
    whole numbers ≥ 1 (a dp of 0 or a negative step time was used without a word)."""
    if measured is None:
        return
    if not isinstance(measured, dict):
        raise ConfigError(f"{where}: must be a table (layout, step_time_s, ...) {_FIX}")
    for key in ("step_time_s", "tokens_per_s", "samples_per_s"):
        value = measured.get(key)
        if value is not None and not (_number(value) and float(value) > 0):
            raise ConfigError(f"{where}.{key}: {value!r} is not allowed; allowed: a number > 0 {_FIX}")
    for table in ("layout", "request"):
        part = measured.get(table)
        part = part if isinstance(part, dict) else {}
        for key in _COUNTS:
            value = part.get(key, measured.get(key) if table == "layout" else None)
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            if value is not None and not ok:
                raise ConfigError(
                    f"{where}.{table}.{key}: {value!r} is not allowed; allowed: a whole number ≥ 1 {_FIX}"
                )


def _number(value: object) -> TypeGuard[float]:
    """A finite int or float (not a bool)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_split(point: dict[str, Any], where: str) -> None:
    """The optional parts of a run's step (split: compute_s > 0, comm_s and fixed_s ≥ 0), its
    fabric (gpus_per_node ≥ 1, inter_node_gbps > 0) and its fabric's communication fit (comm:
    multiplier within COMM_RANGE, the run's efficiency under it), kept since the split."""
    split, fabric = point.get("split"), point.get("fabric")
    if split is not None:
        if not isinstance(split, dict):
            raise ConfigError(f"{where}.split: must be a table (compute_s, comm_s, fixed_s) {_FIX}")
        for key, low in (("compute_s", 1e-300), ("comm_s", 0.0), ("fixed_s", 0.0)):
            if not (_number(split.get(key)) and float(split[key]) >= low):
                raise ConfigError(
                    f"{where}.split.{key}: {split.get(key)!r} is not allowed; allowed: a number "
                    f"{'> 0' if low else '≥ 0'} (seconds) {_FIX}"
                )
    comm = point.get("comm")
    if comm is not None:
        low, high = COMM_RANGE
        mu, eff = (comm.get("multiplier"), comm.get("efficiency")) if isinstance(comm, dict) else (None, None)
        if not (isinstance(mu, (int, float)) and _number(mu) and low - 1e-9 <= mu <= high + 1e-9):
            raise ConfigError(
                f"{where}.comm.multiplier: {mu!r} is not allowed; allowed: {low:.3g}-{high:g} {_FIX}"
            )
        if not (isinstance(eff, (int, float)) and _number(eff) and MIN_EFFICIENCY <= eff <= 1):
            raise ConfigError(
                f"{where}.comm.efficiency: {eff!r} is not allowed; allowed: {EFFICIENCY_RANGE} {_FIX}"
            )
    if fabric is not None:
        if not isinstance(fabric, dict):
            raise ConfigError(f"{where}.fabric: must be a table (gpus_per_node, inter_node_gbps) {_FIX}")
        gpn, gbps = fabric.get("gpus_per_node"), fabric.get("inter_node_gbps")
        if not (isinstance(gpn, int) and not isinstance(gpn, bool) and gpn >= 1):
            raise ConfigError(
                f"{where}.fabric.gpus_per_node: {gpn!r} is not allowed; allowed: an integer ≥ 1 {_FIX}"
            )
        if not (isinstance(gbps, (int, float)) and _number(gbps) and gbps > 0):
            raise ConfigError(
                f"{where}.fabric.inter_node_gbps: {gbps!r} is not allowed; allowed: a number > 0 {_FIX}"
            )


def check_memory(peak_memory_gib: float | None, gpu: GpuSpec) -> None:
    """Refuse a measured peak memory per GPU above the card's (× MEMORY_SLACK); never forced."""
    if peak_memory_gib is not None and peak_memory_gib > gpu.memory_gib * MEMORY_SLACK:
        raise ConfigError(
            f"--peak-memory-gib: {peak_memory_gib:g} GiB per GPU is more than a {gpu.gpu_id} has "
            f"({gpu.memory_gib:g} GiB); refused: allowed: ≤ {gpu.memory_gib * MEMORY_SLACK:g} GiB "
            "(per GPU, not the sum over the run; GiB = 2^30 bytes)"
        )


def memory_kind(kind: str | None) -> str:
    """The memory kind of a measured peak (MEMORY_KINDS; None: DEFAULT_MEMORY_KIND)."""
    if kind is None:
        return DEFAULT_MEMORY_KIND
    value = kind.strip().lower()
    if value not in MEMORY_KINDS:
        raise ConfigError(
            f"--memory-kind: {kind!r} is not allowed; allowed: {', '.join(MEMORY_KINDS)} "
            "(torch.cuda.max_memory_allocated, max_memory_reserved, or nvidia-smi = device)"
        )
    return value


def check_activation_factor(
    factor: float, measured_gib: float, kind: str, states_gib: float, without_gib: float, force: bool
) -> None:
    """Refuse a measured peak below the exact model states (impossible, never stored), one that
    leaves no room for activations (never stored), or one implying an activation factor outside
    [MIN_ACTIVATION_FACTOR, MAX_ACTIVATION_FACTOR] (stored with `force`)."""
    what = f"--peak-memory-gib: {measured_gib:g} GiB ({kind})"
    if measured_gib < states_gib:
        raise ConfigError(
            f"{what} is below the {states_gib:.2f} GiB of weights, gradients and optimizer states "
            "this configuration holds per GPU (exact byte counts); refused: no run of it can "
            "peak lower; check the number, the memory kind and the run described"
        )
    if factor <= 0:
        raise ConfigError(
            f"{what} leaves no room for activations: the model without any activations already "
            f"needs {without_gib:.2f} GiB ({kind}: states + workspace, allocator cache and "
            "context as guessed); refused; check the memory kind (allocated is the smallest) "
            "and the run described"
        )
    if not MIN_ACTIVATION_FACTOR <= factor <= MAX_ACTIVATION_FACTOR and not force:
        raise ConfigError(
            f"calibrate: refused: {what} implies {factor:.3g}× the activation memory the model "
            f"counts for this run; allowed: {MIN_ACTIVATION_FACTOR:g}-{MAX_ACTIVATION_FACTOR:g}×; "
            "check the number, the memory kind and the run described, or give --force to store it"
        )


def check_speed(measured_step_s: float, predicted_step_s: float, force: bool) -> None:
    """Refuse a run more than MAX_SPEEDUP_VS_MODEL× faster or MAX_SLOWDOWN_VS_MODEL× slower
    than the uncalibrated model predicts for it, unless `force`."""
    if force:
        return
    faster, slower = predicted_step_s / measured_step_s, measured_step_s / predicted_step_s
    what = (
        f"measured {measured_step_s:.4g} s/step against {predicted_step_s:.4g} s predicted by the "
        "uncalibrated model"
    )
    check = "check the number and the run described (GPUs, layout, batch, sequence length)"
    if faster > MAX_SPEEDUP_VS_MODEL:
        raise ConfigError(
            f"calibrate: refused: the run is {faster:.3g}× faster than predicted ({what}); allowed: "
            f"at most {MAX_SPEEDUP_VS_MODEL:g}× faster; {check}, or give --force to store it"
        )
    if slower > MAX_SLOWDOWN_VS_MODEL:
        raise ConfigError(
            f"calibrate: refused: the run is {slower:.3g}× slower than predicted ({what}); "
            f"allowed: at most {MAX_SLOWDOWN_VS_MODEL:g}× slower; {check}, or give --force to store it"
        )


def check_achieved(efficiency: float, force: bool) -> None:
    """Refuse a fit whose achieved efficiency (fraction of the dense peak) is above
    MAX_ACHIEVED_EFFICIENCY, unless `force`."""
    if efficiency > MAX_ACHIEVED_EFFICIENCY and not force:
        raise ConfigError(
            f"calibrate: refused: the run implies {efficiency:.0%} of the GPU's dense peak; allowed: "
            f"at most {MAX_ACHIEVED_EFFICIENCY:.0%} (no training step sustains more); check the "
            "number and the run described, or give --force to store it"
        )
