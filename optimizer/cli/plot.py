"""Optional matplotlib plots (install the 'plot' extra): the cost-vs-time Pareto front."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.units import HOURS_PER_DAY

__all__ = ["plot_pareto", "save_figure", "check_plot_path", "PLOT_FORMATS"]

#: file extensions matplotlib's Agg backend writes (a subset that needs no extra package)
PLOT_FORMATS = ("png", "pdf", "svg", "svgz", "jpg", "jpeg", "tif", "tiff", "webp", "eps", "ps")


def _pyplot() -> Any:
    try:  # lazy: matplotlib is an optional extra and slow to import
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy: optional extra
    except ImportError:
        raise ConfigError("--plot: needs matplotlib; pip install 'ccopt[plot]'") from None
    return plt


def check_plot_path(path: Path, flag: str = "--plot") -> Path:
    """`path` when a plot can be written there: checked before any solving.

    Raises:
        ConfigError: a directory, an unknown extension, a parent that is a file or not
            writable, or matplotlib missing — one line naming the flag and what is allowed.
    """
    path = Path(path).expanduser()
    allowed = ", ".join(f".{f}" for f in PLOT_FORMATS)
    if path.is_dir():
        raise ConfigError(f"{flag}: {path} is a directory; allowed: a file name ending in {allowed}")
    if path.suffix.lower().lstrip(".") not in PLOT_FORMATS:
        raise ConfigError(
            f"{flag}: {path}: unknown extension {path.suffix or '(none)'!r}; allowed: {allowed}"
        )
    parent = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ConfigError(f"{flag}: {path}: {parent} is a file, not a directory")
    if parent is not None and not os.access(parent, os.W_OK):
        raise ConfigError(f"{flag}: {path}: cannot write in {parent}")
    _pyplot()
    return path


def save_figure(fig: Any, path: Path) -> None:
    """Write a figure atomically (temp file in the same directory + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix or ".png")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def plot_pareto(front: Sequence[dict[str, Any]], path: Path, title: str = "") -> None:
    """Cost (USD) against finish time (days) of the Pareto-optimal plans (the `pareto` list of
    `ccopt plan --json`), labelled by GPU."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    days = [c["hours"] / HOURS_PER_DAY for c in front]
    cost = [c["cost_usd"] for c in front]
    ax.step(days, cost, where="post", color="tab:blue", alpha=0.5)
    ax.scatter(days, cost, color="tab:blue")
    for k, (c, x, y) in enumerate(zip(front, days, cost, strict=True)):
        ax.annotate(
            f"{c['gpus']}× {c['gpu']}\n{c['provider']} {c['pricing']}",
            (x, y),
            fontsize=7,
            xytext=(4, 6 if k % 2 else -18),
            textcoords="offset points",
        )
    if days and max(days) > 10 * min(days):
        ax.set_xscale("log")  # finish times often span orders of magnitude
    ax.set_xlabel("finish time (days)")
    ax.set_ylabel("cost (USD)")
    ax.set_title(title or "cost vs finish time")
    ax.grid(alpha=0.3)
    save_figure(fig, Path(path))
    plt.close(fig)
