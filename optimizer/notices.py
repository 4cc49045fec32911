"""Notes and warnings for the person running ccopt, without patching the warnings module.

`note(message)` (a cache ignored, a fallback taken) and `warn(message, category)` (an old
name used) go to the sink the command line installs for one command (`printed_to`: one
`note: …` / `warning: …` line on stderr each, every distinct line once); with no sink (the
Python API) a note is dropped unless notes are collected, and a warning is
`warnings.warn(message, category)` as usual.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator

__all__ = ["note", "warn", "printed_to"]

_sinks: list[Callable[[str], None]] = []
_said: list[set[str]] = []


def note(message: str) -> None:
    """One `note:` line for the user (dropped when no command line is listening)."""
    _say(f"note: {message}")


def warn(message: str, category: type[Warning]) -> None:
    """One `warning:` line on the command line; `warnings.warn` for API callers."""
    if _sinks:
        _say(f"warning: {message}")
    else:
        warnings.warn(message, category, stacklevel=3)


def _say(line: str) -> None:
    if _sinks and line not in _said[-1]:
        _said[-1].add(line)
        _sinks[-1](line)


@contextlib.contextmanager
def printed_to(write: Callable[[str], None]) -> Iterator[None]:
    """While the block runs, every note and warning is `write(line)`, each distinct one once."""
    _sinks.append(write)
    _said.append(set())
    try:
        yield
    finally:
        _sinks.pop()
        _said.pop()
