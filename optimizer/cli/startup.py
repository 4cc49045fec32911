"""The cyclic garbage collector while a command starts.

Importing a command's stack (pydantic models, OR-Tools, pandas, our modules) builds objects that
live as long as the process, not garbage; yet every full collection walks the whole heap, which
grows with each import (measured: about a fifth of the CPU time of `ccopt plan` on the 7B
example goes to collections that free nothing). The entry point (optimizer/__main__.py: `ccopt`
and `python -m optimizer`) pauses the collector before the first import; a command resumes it
with `loaded(api.name)` once its stack is imported, the objects loaded so far frozen
(gc.freeze: kept out of every later collection), so the command's own work is collected as
usual. Reference counting frees acyclic garbage meanwhile in any case. A command that never
calls `loaded` runs with the collector paused (the short ones: listings, schema). `main`
called in-process (tests) never pauses it.
"""

from __future__ import annotations

import gc
from typing import TypeVar

__all__ = ["adopt_pause", "resume", "loaded"]

T = TypeVar("T")
_paused = [False]


def adopt_pause() -> None:
    """The entry point turned the collector off for the start-up: `resume` turns it back on."""
    _paused[0] = not gc.isenabled()


def resume() -> None:
    """Freeze what start-up built and turn the collector back on (only if the entry point
    paused it: a collector someone else turned off stays off)."""
    if _paused[0]:
        _paused[0] = False
        gc.freeze()
        gc.enable()


def loaded(value: T) -> T:
    """`value` (a name of optimizer.api, whose module is imported by now), with the collector
    resumed (`resume`)."""
    resume()
    return value
