"""The calibration store on disk: measured runs ("points"), each read-modify-write under one
lock, every write an atomic replace, and the curve per GPU × precision × stack they fit.

Layout of the JSON document ($CCOPT_CALIBRATION, calibration_file.calibration_path):
`points` (list of runs, `ccopt calibrate` of a transformer), `memory_points` (measured peaks
per GPU, `ccopt calibrate --peak-memory-gib`: the activation factor of a model × stack),
`entries` (one base efficiency per
"GPU/precision" of any stack: stores written before runs were kept), `profiles` (per-sample
models, inputs/profile_store). A writer holds an exclusive fcntl.flock on "<store>.lock" beside
the store from its read to its os.replace, so concurrent `calibrate` processes never lose a run;
a disk that refuses the write (read-only, full) is one ConfigError and the store is unchanged.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from optimizer.errors import ConfigError
from optimizer.inputs.calibration_file import (
    calibration_path,
    check_calibration_store,
    check_document,
    read_calibration_document,
    store_target,
)
from optimizer.model.calibrated import COMPONENTS, CalibratedCurve, Components, comm_key, fit_curve

try:  # POSIX; elsewhere the atomic replace alone protects the file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "read_store",
    "checked_store",
    "write_store",
    "update_store",
    "store_lock",
    "load_points",
    "load_curves",
    "curves_of",
    "comm_of",
    "load_comm",
    "comm_share",
    "set_fabric_comm",
    "point_comm_key",
    "add_point",
    "remove_points",
    "LEGACY_STACK",
    "add_memory_point",
    "load_memory_points",
    "memory_factors_of",
    "load_memory_factors",
]

T = TypeVar("T")
#: the stack of an `entries` value (stored before runs were kept per stack): it applies to all
LEGACY_STACK = "any"


def read_store(file: Path) -> dict[str, Any]:
    """The store's JSON document ({"entries": {}} when absent). Raises ConfigError if it is not
    a regular file of valid JSON (calibration_file.read_calibration_document)."""
    return read_calibration_document(file)


def checked_store(path: Path | None = None) -> tuple[Path, dict[str, Any]]:
    """The store's file (`path`, else $CCOPT_CALIBRATION's) and its document, once
    check_calibration_store has passed it. Raises ConfigError for a store that is not valid."""
    file = path or calibration_path()
    check_calibration_store(file)
    return file, read_store(file)


def write_store(file: Path, data: dict[str, Any]) -> None:
    """Write the store atomically: a temp file beside it, fsync, os.replace, fsync of the folder.
    On any failure the temp file is removed and the store keeps its old bytes."""
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".calibration-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # the rename itself durable (POSIX); not every file system allows opening a folder
        folder = os.open(file.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(folder)
    except OSError:
        pass
    finally:
        os.close(folder)


@contextmanager
def store_lock(file: Path) -> Iterator[None]:
    """Hold the exclusive lock of `file` (flock on "<file>.lock" beside it) for the block."""
    file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(file.with_name(file.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def update_store(change: Callable[[dict[str, Any]], T], path: Path | None = None) -> T:
    """Read the store, apply `change` to its document and write it back, all under the lock;
    returns what `change` returned. Raises ConfigError for a store that is not valid (then it
    is not rewritten) or a disk that refuses the write (read-only, full: the store unchanged)."""
    file = store_target(path or calibration_path())  # through links: the lock on the target
    check_calibration_store(file)  # a store path that cannot be one says so before the lock
    try:
        with store_lock(file):
            check_calibration_store(file)  # never rewrite a store we could not read back
            data = read_store(file)
            result = change(data)
            check_document(data, file)  # never write what the next read would refuse
            write_store(file, data)
            return result
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"calibration store {file}: cannot write ({reason}); the store is unchanged "
            "(set CCOPT_CALIBRATION to a writable file)"
        ) from None


def _legacy_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """`entries` as runs: id "GPU/precision", stack LEGACY_STACK, size factor unknown."""
    rows = []
    for key, entry in data.get("entries", {}).items():
        gpu, precision = key.split("/", 1)
        measured = entry.get("measured") if isinstance(entry.get("measured"), dict) else {}
        rows.append(
            {
                "id": key,
                "gpu": gpu,
                "precision": precision,
                "stack": LEGACY_STACK,
                "efficiency": float(entry["efficiency"]),
                "size_factor": None,
                "measured": measured,
                "when": entry.get("when"),
                "legacy": True,
            }
        )
    return rows


def load_points(path: Path | None = None) -> list[dict[str, Any]]:
    """Every stored run of a transformer, oldest first (old `entries` last, marked legacy).
    Raises ConfigError for a store that is not valid."""
    return load_points_of(checked_store(path)[1])


def point_comm_key(point: dict[str, Any]) -> tuple[str, str, str, int, float] | None:
    """The fabric key of a stored run (model.calibrated.comm_key), None without its fabric."""
    fabric = point.get("fabric")
    if not isinstance(fabric, dict):
        return None
    gpn, gbps = fabric["gpus_per_node"], fabric["inter_node_gbps"]
    return comm_key(point["gpu"], point["precision"], point["stack"], gpn, gbps)


def comm_share(point: dict[str, Any]) -> float | None:
    """The modelled exposed communication's share of a stored run's step (None: not kept)."""
    split, step = point.get("split"), (point.get("measured") or {}).get("step_time_s")
    if not isinstance(split, dict) or not step:
        return None
    return float(split["comm_s"]) / float(step)


def comm_of(points: list[dict[str, Any]]) -> dict[tuple[str, str, str, int, float], float]:
    """{fabric key: the communication multiplier fitted to its runs} (a run's `comm`, written
    by `ccopt calibrate`: optimizer.calibrate.comm)."""
    out = {}
    for p in points:
        key = point_comm_key(p)
        if key is not None and isinstance(p.get("comm"), dict) and not p.get("legacy"):
            out[key] = float(p["comm"]["multiplier"])
    return out


def curves_of(
    points: list[dict[str, Any]], components: Components = COMPONENTS
) -> dict[tuple[str, str, str], CalibratedCurve]:
    """The calibration of each GPU × precision × stack with runs (model.calibrated.fit_curve);
    a run of a fabric with a fitted communication multiplier enters with its base efficiency
    under that multiplier (its `comm`). Old `entries` runs are not curves
    (PerfAssumptions.calibrated holds them). `components`: the rule's variances."""
    groups: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for p in points:
        if p.get("legacy"):
            continue
        comm = p.get("comm")
        eff = float(comm["efficiency"] if isinstance(comm, dict) else p["efficiency"])
        groups.setdefault((p["gpu"], p["precision"], p["stack"]), []).append((float(p["size_factor"]), eff))
    return {key: fit_curve(runs, components) for key, runs in groups.items()}


def set_fabric_comm(
    fabric: tuple[str, str, str, int, float],
    multiplier: float,
    efficiencies: dict[str, float],
    path: Path | None = None,
) -> None:
    """Store a fabric's fitted communication multiplier on its runs (`efficiencies`: run id →
    base efficiency under it); a multiplier of 1 clears it."""

    def change(data: dict[str, Any]) -> None:
        for p in data.get("points", []):
            if point_comm_key(p) != fabric:
                continue
            p.pop("comm", None)
            if multiplier != 1.0 and p["id"] in efficiencies:
                p["comm"] = {"multiplier": multiplier, "efficiency": efficiencies[p["id"]]}

    update_store(change, path)


def load_curves(path: Path | None = None) -> dict[tuple[str, str, str], CalibratedCurve]:
    """{(gpu_id, precision, stack): the calibration of its stored runs}."""
    return curves_of(load_points(path))


def load_comm(path: Path | None = None) -> dict[tuple[str, str, str, int, float], float]:
    """{fabric key: the communication multiplier of its stored runs} (comm_of)."""
    return comm_of(load_points(path))


def add_point(record: dict[str, Any], path: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """Store one run (`record`: gpu, precision, stack, efficiency, size_factor, measured with
    its request) under a new id, replacing a stored run of the same GPU × precision × stack and
    the same request (a re-measurement); returns (the stored run, the ids it replaced)."""
    return _store_replacing(record, "points", _identity, path)


def _store_replacing(
    record: dict[str, Any], section: str, identity: Callable[[dict[str, Any]], str], path: Path | None
) -> tuple[dict[str, Any], list[str]]:
    """Store `record` in the store's list `section` under a new id and the time, replacing the
    entries of the same `identity` (a re-measurement); returns (the stored entry, the ids it
    replaced)."""
    point = {
        **record,
        "id": uuid.uuid4().hex[:8],
        "when": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    same = identity(point)

    def change(data: dict[str, Any]) -> list[str]:
        old = data.get(section, [])
        replaced = [p["id"] for p in old if identity(p) == same]
        data[section] = [p for p in old if identity(p) != same] + [point]
        return replaced

    return point, update_store(change, path)


def _identity(point: dict[str, Any]) -> str:
    """What makes two runs the same measurement: GPU, precision, stack and the request."""
    request = (point.get("measured") or {}).get("request")
    return json.dumps([point["gpu"], point["precision"], point["stack"], request], sort_keys=True)


def remove_points(target: str, path: Path | None = None) -> list[dict[str, Any]]:
    """Remove the runs `target` names: a run's or a measured peak's id, or GPU[:precision]
    (every run and peak of that GPU type, of that precision; GPU matched case-insensitively).
    Returns the removed runs (old entries marked legacy, peaks marked memory).
    Raises ConfigError when nothing matches (naming the ids stored)."""
    gpu, _, precision = target.partition(":")

    def matches(p: dict[str, Any]) -> bool:
        if p["id"] == target:
            return True
        return p["gpu"].lower() == gpu.lower() and precision in ("", p["precision"])

    def change(data: dict[str, Any]) -> list[dict[str, Any]]:
        points = load_points_of(data) + memory_points_of(data)
        removed = [p for p in points if matches(p)]
        if not removed:
            ids = ", ".join(p["id"] for p in points) or "none stored"
            raise ConfigError(
                f"--remove: {target!r} names no stored run; allowed: a run id ({ids}) or "
                "GPU[:precision] (see ccopt calibrate --list)"
            )
        gone = {p["id"] for p in removed}
        data["points"] = [p for p in data.get("points", []) if p["id"] not in gone]
        # a fabric that lost a run loses its communication fit (calibrate refits it)
        lost = {point_comm_key(p) for p in removed if not p.get("legacy") and not p.get("memory")}
        for p in data["points"]:
            if point_comm_key(p) in lost:
                p.pop("comm", None)
        if "memory_points" in data:
            data["memory_points"] = [p for p in data["memory_points"] if p["id"] not in gone]
        data["entries"] = {k: v for k, v in data.get("entries", {}).items() if k not in gone}
        return removed

    return update_store(change, path)


def load_points_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of an already-read (and checked) store document (as load_points)."""
    return [dict(p, legacy=False) for p in data.get("points", [])] + _legacy_rows(data)


# ---- measured peak memory (`ccopt calibrate --peak-memory-gib`) ----------------------------


def memory_points_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The measured peaks of an already-read (and checked) store document, oldest first."""
    return [dict(p, memory=True) for p in data.get("memory_points", [])]


def load_memory_points(path: Path | None = None) -> list[dict[str, Any]]:
    """Every stored measured peak, oldest first. Raises ConfigError for a store not valid."""
    return memory_points_of(checked_store(path)[1])


def memory_factors_of(points: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """{(model, stack): activation factor}: the geometric mean of the factors its peaks imply
    (least squares in log space, as the throughput curve; one peak: its own factor)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for p in points:
        groups.setdefault((p["model"], p["stack"]), []).append(math.log(float(p["activation_factor"])))
    return {key: math.exp(sum(logs) / len(logs)) for key, logs in groups.items()}


def load_memory_factors(path: Path | None = None) -> dict[tuple[str, str], float]:
    """{(model name, stack): the activation factor of its stored peaks}."""
    return memory_factors_of(load_memory_points(path))


def add_memory_point(record: dict[str, Any], path: Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """Store one measured peak (`record`: model, stack, gpu, precision, kind, peak_gib,
    activation_factor, measured with its request) under a new id, replacing a stored peak of
    the same model × stack, memory kind and request (a re-measurement); returns (the stored
    peak, the ids it replaced)."""
    return _store_replacing(record, "memory_points", _memory_identity, path)


def _memory_identity(p: dict[str, Any]) -> str:
    """What makes two peaks the same measurement: model, stack, memory kind, GPU and request."""
    request = (p.get("measured") or {}).get("request")
    return json.dumps([p["model"], p["stack"], p["kind"], p["gpu"], request], sort_keys=True)
