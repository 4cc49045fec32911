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
import importlib
import os
import sys
import types
from collections.abc import Iterable
from typing import Any, TypeVar

__all__ = ["adopt_pause", "resume", "loaded", "skip_plugin_discovery"]

#: pydantic's plugin loader (pydantic/plugin/_loader.py) and the values of
#: PYDANTIC_DISABLE_PLUGINS with which its get_plugins returns no plugin at all
PLUGIN_LOADER = "pydantic.plugin._loader"
PLUGINS_OFF = ("__all__", "1", "true")

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


def skip_plugin_discovery() -> None:
    """Let pydantic build its first validator without importing importlib.metadata when
    plugins are off (PYDANTIC_DISABLE_PLUGINS, set by the entry point).

    pydantic's plugin loader imports importlib.metadata (and with it email, zipfile, csv: ~10 ms
    of `ccopt plan`, measured with -X importtime) at the top of its module, before its
    get_plugins reads the variable and returns no plugin. A stand-in module whose get_plugins
    returns the same empty answer while the variable says off, and otherwise hands over to
    the real loader (imported then), is registered under the loader's name; pydantic's only
    import of it is `from ._loader import get_plugins` (plugin/_schema_validator.py), and any
    other name a later pydantic asks of it comes from the real loader. Nothing is done when the
    loader is already imported.
    """
    if PLUGIN_LOADER in sys.modules:
        return
    stand_in = types.ModuleType(PLUGIN_LOADER, "get_plugins without importlib.metadata while plugins are off")
    stand_in.get_plugins = _get_plugins  # type: ignore[attr-defined]
    vars(stand_in)["__getattr__"] = _from_real_loader  # PEP 562: any other name, the real loader's
    sys.modules[PLUGIN_LOADER] = stand_in


def _get_plugins() -> Iterable[Any]:
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") in PLUGINS_OFF:
        return ()
    return _real_loader().get_plugins()  # plugins are on after all


def _from_real_loader(name: str) -> Any:
    if name.startswith("__"):  # the import system's probes (__path__, __file__, ...): none here
        raise AttributeError(name)
    return getattr(_real_loader(), name)


def _real_loader() -> types.ModuleType:
    """pydantic's own plugin loader, registered in place of the stand-in from now on."""
    if getattr(sys.modules.get(PLUGIN_LOADER), "get_plugins", None) is _get_plugins:
        del sys.modules[PLUGIN_LOADER]
    return importlib.import_module(PLUGIN_LOADER)
