"""The cyclic garbage collector while a command's modules are imported.

Importing a command's stack (pydantic models, OR-Tools, pandas, our modules) builds objects
that live as long as the process, not garbage; yet every full collection walks the whole heap,
which grows with each import. The entry point (optimizer/__main__.py: `ccopt` and `python -m
optimizer`) pauses the collector before the first import (`pause`); the one place that resumes
it is `LazyGroup.get_command` (optimizer/cli/lazy.py), once it has imported the command's
module and the API modules the command runs on, with what was loaded frozen (gc.freeze: kept
out of later collections), so the command's own work is collected as usual. `main` called
in-process (tests, the API) never pauses it. Only the gc module's public functions are used.
"""

from __future__ import annotations

import gc

__all__ = ["pause", "resume"]

_paused = [False]


def pause() -> None:
    """Turn the collector off for the start-up, if it is on (`resume` turns it back on)."""
    if gc.isenabled():
        gc.disable()
        _paused[0] = True


def resume() -> None:
    """Freeze what start-up built and turn the collector back on (only if `pause` turned it
    off: a collector someone else turned off stays off)."""
    if _paused[0]:
        _paused[0] = False
        gc.freeze()
        gc.enable()
