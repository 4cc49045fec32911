"""`ccopt report`'s work: read a job file (or a saved result), solve it through the API with
the sweeps a report shows (re-plans at other deadlines or loads, latency estimates by batch)
and render the self-contained HTML page (optimizer.report.html, imported lazily: plotly and
jinja2 are the optional 'report' extra).

Imported as a module (`from optimizer.api import report`): it builds on the functions of
optimizer.api itself."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optimizer import api
from optimizer.api.estimate_run import estimate
from optimizer.errors import ConfigError, install_extra
from optimizer.files import parse_json, read_input_text
from optimizer.inputs.toml_file import read_toml

__all__ = [
    "DEADLINE_FACTORS",
    "LOAD_FACTORS",
    "LATENCY_BATCHES",
    "job_kind",
    "gather_job",
    "read_result",
    "renderer",
    "RenderedReport",
    "report_html",
]

#: deadlines the job is re-planned at, as multiples of its own (shorter ones are read off the
#: Pareto front, which holds every cheapest plan that finishes sooner)
DEADLINE_FACTORS = (1.5, 2.0, 3.0)
#: request rates a serving job is re-solved at, as multiples of its own load
LOAD_FACTORS = (0.25, 0.5, 2.0, 4.0)
#: batches (concurrent sequences per replica) the latency-vs-batch estimates cover
LATENCY_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_SERVE_FIELDS = ("requests_per_s", "concurrent_users", "prompt_tokens", "output_tokens")


def _table(value: object) -> dict[str, Any]:
    """`value` when it is a table, else {} (a malformed job file is reported by validation)."""
    return value if isinstance(value, dict) else {}


def job_kind(doc: dict[str, Any]) -> str:
    """'batch', 'serve' or 'train' for a decoded job file."""
    if "job" in doc or "capacity" in doc:
        return "batch"
    workload, constraints = (_table(doc.get(key)) for key in ("workload", "constraints"))
    if (
        workload.get("kind") == "serve"
        or any(k in workload for k in _SERVE_FIELDS)
        or "ttft_s" in constraints
        or "tpot_ms" in constraints
    ):
        return "serve"
    return "train"


def _absolute_model(doc: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """A copy of a job document whose hf_config path no longer depends on the file's place."""
    out = copy.deepcopy(doc)
    model = out.get("model")
    if isinstance(model, dict) and isinstance(model.get("hf_config"), str):
        hf = Path(model["hf_config"])
        model["hf_config"] = str(hf if hf.is_absolute() else base_dir / hf)
    return out


def _with_deadline(doc: dict[str, Any], hours: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    constraints = out.setdefault("constraints", {})
    constraints.pop("deadline_days", None)
    constraints["deadline_hours"] = hours
    return out


def _with_load(doc: dict[str, Any], requests_per_s: float) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    workload = out.setdefault("workload", {})
    for key in ("concurrent_users", "think_time_s"):
        workload.pop(key, None)
    workload["requests_per_s"] = requests_per_s
    return out


def _train(path: Path, doc: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    result = api.plan(path, pareto=True, alternatives=3, **options)
    compare = api.compare(path, **{k: v for k, v in options.items() if k != "time_limit_s"})
    sweep = []
    deadline_h = (result.get("job") or {}).get("deadline_hours")
    if deadline_h:
        base = _absolute_model(doc, path.parent)
        sweep = [
            api.plan(_with_deadline(base, deadline_h * f), alternatives=0, **options)
            for f in DEADLINE_FACTORS
        ]
    return {"result": result, "compare": compare, "deadline_sweep": tuple(sweep)}


def _latency_estimates(
    doc: dict[str, Any], base_dir: Path, result: dict[str, Any], options: dict[str, Any]
) -> tuple[dict[str, Any], ...]:
    """`estimate --mode serve` of the first deployment's replica at several batches (empty when
    the model is an explicit shape, which estimate cannot name)."""
    plan, job = result.get("plan"), result["job"]
    model = doc.get("model") or {}
    name = model.get("preset") or (str(base_dir / model["hf_config"]) if model.get("hf_config") else None)
    if plan is None or name is None:
        return ()
    dep = plan["deployments"][0]
    bucket = max(job["buckets"], key=lambda b: b["share"])
    batches = sorted({*LATENCY_BATCHES, dep["batch"]})
    kv = job["kv_cache_precision"]  # as the serve planner read it (old names resolved)
    return tuple(
        estimate(
            name,
            dep["gpu"],
            num_gpus=dep["tp"],
            tp=dep["tp"],
            mode="serve",
            batch=b,
            prompt_tokens=bucket["prompt_tokens"],
            output_tokens=bucket["output_tokens"],
            precision=dep["precision"],
            kv_cache_precision=kv,
            stack=job.get("stack") or "generic",
            instance=f"{dep['provider']}:{dep['instance']}",
            prices=options.get("prices"),
            offline=options.get("offline"),
        )
        for b in batches
    )


def _serve(path: Path, doc: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    result = api.serve(path, **options)
    load = result["job"]["load_requests_per_s"]
    base = _absolute_model(doc, path.parent)
    sweep = tuple(api.serve(_with_load(base, load * f), **options) for f in LOAD_FACTORS)
    return {
        "result": result,
        "load_sweep": sweep,
        "latency_by_batch": _latency_estimates(doc, path.parent, result, options),
    }


def gather_job(
    path: Path, *, prices: Path | None = None, offline: bool | None = None, time_limit_s: float = 10.0
) -> tuple[str, dict[str, Any]]:
    """(report kind, the JSON results of a report) for a job file, solved through optimizer.api."""
    doc = read_toml(path)
    kind = job_kind(doc)
    options: dict[str, Any] = {"prices": prices, "offline": offline, "time_limit_s": time_limit_s}
    if kind == "batch":
        batch = api.batch(path, **options)
        return kind, {"result": api.batch_json(batch)}
    return kind, (_serve if kind == "serve" else _train)(path, doc, options)


def read_result(path: Path) -> Any:
    """A saved `--json` result (plan, compare, batch or serve).

    Raises:
        ConfigError: missing, or not JSON.
    """
    try:
        return parse_json(read_input_text(path, "result file"), str(path))
    except FileNotFoundError:
        raise ConfigError(f"result file not found: {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON result ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None


def renderer() -> Any:
    """optimizer.report.html, imported on first use.

    Raises:
        ConfigError: the 'report' extra (plotly, jinja2) is not installed.
    """
    try:  # lazy: plotly and jinja2 are the optional 'report' extra, slow to import
        from optimizer.report import html  # lazy
    except ImportError as exc:
        raise ConfigError(
            f"ccopt report needs the 'report' extra ({exc.name} is missing): {install_extra('report')}"
        ) from None
    return html


@dataclass(frozen=True)
class RenderedReport:
    html: str  # the whole page
    status: str  # the result's status (infeasible: the page explains why)


def report_html(
    source: Path,
    *,
    made_by: str,
    prices: Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
    on_stage: Callable[[str], None] | None = None,
) -> RenderedReport:
    """The HTML report of a job file (TOML: training, batch or serve, solved here) or of a saved
    `--json` result (a .json file, rendered as it is). `on_stage(text)` is told what runs now
    (solving, drawing).

    Raises:
        ConfigError: the 'report' extra is missing (checked before any solving), or the source
            is unreadable.
    """
    say = on_stage or (lambda text: None)
    html = renderer()
    if source.suffix.lower() == ".json":
        inputs = html.inputs_from_saved(read_result(source), made_by=made_by)
    else:
        say(f"planning {source.name} (and its comparisons)…")
        kind, parts = gather_job(source, prices=prices, offline=offline, time_limit_s=time_limit_s)
        inputs = html.ReportInputs(kind, made_by=made_by, **parts)
    say("drawing the charts and the page…")
    return RenderedReport(html.render_html(inputs), str(inputs.result.get("status")))
