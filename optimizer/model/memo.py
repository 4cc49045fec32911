"""The model's one memo for its hot pure functions: answers remembered for the last objects asked
about.

The planner asks the same few frozen objects (a ModelSpec, a TrainingSetup, a GpuSpec,
PerfAssumptions, FittedConstants) thousands of times per plan; hashing them for an lru_cache key
costs more than many answers (measured with cProfile on examples/llama7b_10days.toml). A
function decorated with `remember_last(n)` compares its first `n` positional arguments with the
last ones by identity, and keeps its answers for them in a dict keyed by the other arguments
(cheap values: strings and numbers). The objects are held, so their ids are never reused while
the entry lives; a new object replaces the entry (one tuple, replaced atomically).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["remember_last"]

F = TypeVar("F", bound=Callable[..., Any])


def remember_last(n: int) -> Callable[[F], F]:
    """Decorator (module doc): the first `n` (1, 2 or 3) positional arguments compared by
    identity, the others the key of the remembered answers. Pure functions of frozen inputs only."""
    if n not in (1, 2, 3):
        raise ValueError("remember_last takes 1, 2 or 3 identity arguments")

    def wrap(fn: F) -> F:
        last: list[tuple[Any, Any, dict[tuple[Any, ...], Any]]] = [(None, None, {})]
        held: list[tuple[Any, Any, Any, dict[tuple[Any, ...], Any]]] = [(None, None, None, {})]  # n = 3

        if n == 1:

            @functools.wraps(fn)
            def call(*args: Any) -> Any:
                seen = last[0]
                if seen[0] is not args[0]:
                    seen = last[0] = (args[0], None, {})
                rest = args[1:]
                found = seen[2].get(rest, _MISSING)
                if found is _MISSING:
                    found = seen[2][rest] = fn(*args)
                return found

        elif n == 3:

            @functools.wraps(fn)
            def call(*args: Any) -> Any:
                seen = held[0]
                if seen[0] is not args[0] or seen[1] is not args[1] or seen[2] is not args[2]:
                    seen = held[0] = (args[0], args[1], args[2], {})
                rest = args[3:]
                found = seen[3].get(rest, _MISSING)
                if found is _MISSING:
                    found = seen[3][rest] = fn(*args)
                return found

        else:

            @functools.wraps(fn)
            def call(*args: Any) -> Any:
                seen = last[0]
                if seen[0] is not args[0] or seen[1] is not args[1]:
                    seen = last[0] = (args[0], args[1], {})
                rest = args[2:]
                found = seen[2].get(rest, _MISSING)
                if found is _MISSING:
                    found = seen[2][rest] = fn(*args)
                return found

        return call  # type: ignore[return-value]

    return wrap


_MISSING = object()
