"""Optional matplotlib plots (install the 'plot' extra): the cost-vs-time Pareto front."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from optimizer import api
from optimizer.errors import ConfigError, install_extra
from optimizer.files import OutputFile, image_mark
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
        raise ConfigError(f"--plot: needs matplotlib; {install_extra('plot')}") from None
    return plt


def check_plot_path(
    path: Path,
    flag: str = "--plot",
    *,
    force: bool = False,
    inputs: Mapping[str, str | Path | None] | None = None,
) -> OutputFile:
    """The plot's output file, checked before any solving (optimizer.files: never over an
    input or a store, a device, a FIFO or a directory; --force to replace a file that is not
    an earlier ccopt output).

    Raises:
        ConfigError: an unknown extension, a refused path, or matplotlib missing — one line
            naming the flag and what is allowed.
    """
    path = Path(path).expanduser()
    allowed = ", ".join(f".{f}" for f in PLOT_FORMATS)
    out = api.output_file(path, flag, force=force, inputs=inputs)
    if path.suffix.lower().lstrip(".") not in PLOT_FORMATS:
        raise ConfigError(
            f"{flag}: {path}: unknown extension {path.suffix or '(none)'!r}; allowed: {allowed}"
        )
    _pyplot()
    return out


def save_figure(fig: Any, out: OutputFile) -> None:
    """Write a figure atomically, marked as a ccopt output (optimizer.files.image_mark)."""
    fmt = out.path.suffix.lower().lstrip(".")
    out.write(lambda handle: fig.savefig(handle, format=fmt, dpi=120, bbox_inches="tight", **image_mark(fmt)))


def plot_pareto(front: Sequence[dict[str, Any]], out: OutputFile, title: str = "") -> None:
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
    save_figure(fig, out)
    plt.close(fig)
