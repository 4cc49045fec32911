"""A tqdm progress bar segment, `Epoch 0:  22%|██▏  | 4/18 [00:17<01:02,  4.47s/it, loss=...]`:
its prefix, the iteration count and the rate (tqdm's smoothed seconds per iteration), shared
by the Hugging Face Trainer and PyTorch Lightning readers."""

from __future__ import annotations

import re
from dataclasses import dataclass

from optimizer.inputs.training_logs.records import LogLine

__all__ = ["Bar", "read_bar"]

_BAR = re.compile(
    r"^(?P<prefix>.*?)\s*\d+%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[[^\],]*,\s*(?P<rate>[0-9.,]+|\?)(?P<unit>s/it|it/s)(?P<rest>[^\]]*)\]?"
)


@dataclass(frozen=True)
class Bar:
    """One update of a bar: its prefix ("Epoch 0:" for Lightning), n of total, the seconds per
    iteration (None while tqdm prints "?"), and the text after the rate (postfix)."""

    prefix: str
    n: int
    total: int
    s_per_it: float | None
    rest: str


def read_bar(ln: LogLine) -> Bar | None:
    """The bar on this line segment, or None when it holds no tqdm bar."""
    m = _BAR.search(ln.text)
    if not m:
        return None
    rate = None
    if m.group("rate") != "?":
        value = ln.value(m.group("rate"), f"progress-bar rate {m.group('unit')}")
        rate = value if m.group("unit") == "s/it" else 1 / value
    n = ln.count(m.group("n"), "progress-bar count")
    total = ln.count(m.group("total"), "progress-bar total")
    return Bar(m.group("prefix").strip(), n, total, rate, m.group("rest"))
