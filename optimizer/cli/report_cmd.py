"""`ccopt report JOB.toml|RESULT.json -o report.html`: one shareable, self-contained HTML page.

The CLI gathers the JSON results (the plan, compare, re-plans at other deadlines or loads,
latency estimates) through optimizer.api and hands them to the pure renderer in
optimizer.report.html, which is imported lazily (plotly and jinja2 are the 'report' extra)."""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from optimizer import api
from optimizer.cli.common import (
    DEFAULT_TIME_LIMIT_S,
    EXIT_INFEASIBLE,
    OfflineOpt,
    OldTimeLimitOpt,
    PricesOpt,
    console,
    time_limit_help,
    time_limit_s,
    user_errors,
)
from optimizer.errors import ConfigError, OptimizerError
from optimizer.inputs.toml_file import read_toml

__all__ = ["register", "gather_job", "job_kind", "check_output_path", "write_atomically"]

Opt = typer.Option
#: deadlines the job is re-planned at, as multiples of its own (shorter ones are read off the
#: Pareto front, which holds every cheapest plan that finishes sooner)
DEADLINE_FACTORS = (1.5, 2.0, 3.0)
#: request rates a serving job is re-solved at, as multiples of its own load
LOAD_FACTORS = (0.25, 0.5, 2.0, 4.0)
#: batches (concurrent sequences per replica) the latency-vs-batch estimates cover
LATENCY_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_SERVE_FIELDS = ("requests_per_s", "concurrent_users", "prompt_tokens", "output_tokens")


def job_kind(doc: dict[str, Any]) -> str:
    """'batch', 'serve' or 'train' for a decoded job file."""
    if "job" in doc or "capacity" in doc:
        return "batch"
    workload = doc.get("workload") if isinstance(doc.get("workload"), dict) else {}
    constraints = doc.get("constraints") if isinstance(doc.get("constraints"), dict) else {}
    if (
        workload.get("kind") == "serve"
        or any(k in workload for k in _SERVE_FIELDS)
        or "ttft_s" in constraints
        or "tpot_ms" in constraints
    ):
        return "serve"
    return "train"


def check_output_path(path: Path) -> Path:
    """The report's path, checked before any solving.

    Raises:
        ConfigError: a directory, a missing or unwritable directory, or an unwritable file.
    """
    if path.is_dir():
        raise ConfigError(f"-o {path}: is a directory; give a file name such as {path / 'report.html'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ConfigError(f"-o {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"-o {path}: directory {parent} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"-o {path}: file is not writable")
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


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
        api.estimate(
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


def _read_result(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"result file not found: {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a JSON result ({exc})") from None


def _renderer() -> Any:
    try:  # lazy: plotly and jinja2 are the optional 'report' extra, slow to import
        from optimizer.report import html  # lazy
    except ImportError as exc:
        raise ConfigError(
            f"ccopt report needs the 'report' extra ({exc.name} is missing): pip install 'ccopt[report]'"
        ) from None
    return html


def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="Job file (TOML: training, batch or serve) or a saved --json result", metavar="SOURCE"
        ),
    ],
    output: Annotated[
        Path | None,
        Opt(
            "-o",
            "--output",
            help="HTML file to write (default: SOURCE's file name with .html, in the current directory)",
        ),
    ] = None,
    prices: PricesOpt = None,
    offline: OfflineOpt = False,
    time_limit: Annotated[
        float | None,
        Opt(
            "--time-limit-s",
            help=time_limit_help(DEFAULT_TIME_LIMIT_S, "Solver time limit per solve"),
            show_default=False,
        ),
    ] = None,
    old_time_limit: OldTimeLimitOpt = None,
) -> None:
    """A shareable, self-contained HTML report of a plan, a batch or a serving job."""
    with user_errors():
        time_limit = time_limit_s(time_limit, old_time_limit)
        out = check_output_path(output or Path(source.with_suffix(".html").name))
        html = _renderer()
        made_by = f"ccopt report {source.name}" + (" --offline" if offline else "")
        if source.suffix.lower() == ".json":
            inputs = html.inputs_from_saved(_read_result(source), made_by=made_by)
        else:
            kind, parts = gather_job(
                source, prices=prices, offline=True if offline else None, time_limit_s=time_limit
            )
            inputs = html.ReportInputs(kind, made_by=made_by, **parts)
        try:
            write_atomically(out, html.render_html(inputs))
        except OSError as exc:
            raise OptimizerError(f"-o {out}: cannot write: {exc.strerror}") from None
    console().print(f"report written to {out} ({out.stat().st_size / 1e6:.1f} MB)")
    if inputs.result.get("status") == "infeasible":
        raise typer.Exit(EXIT_INFEASIBLE)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
