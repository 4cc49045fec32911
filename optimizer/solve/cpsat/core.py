"""The one way the planners shrink a conflict: a deletion filter over an infeasible core.

CP-SAT's sufficient assumptions for infeasibility need not be minimal. The deletion filter
(Chinneck & Dravnieks 1991, "Locating minimal infeasible constraint sets in linear programs")
drops each member in turn and keeps the drop when the rest still conflict; the result is
minimal (no member can go) when every check answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

__all__ = ["shrink_core"]

T = TypeVar("T")


def shrink_core(
    core: Sequence[T],
    conflicts: Callable[[list[T]], bool | None],
    unknown: Literal["keep", "fail"] = "keep",
) -> list[T] | None:
    """The members of `core` (in order) still needed for `conflicts` to hold.

    `conflicts(subset)` answers True (proven infeasible), False (feasible) or None (unknown: the
    check ran out of time). On an unknown, "keep" keeps the member (the core stays a conflict,
    perhaps not minimal); "fail" gives up and returns None. The empty set never conflicts and
    is not checked, so a one-member core is returned as it is.
    """
    kept = list(core)
    for member in list(core):
        rest = [k for k in kept if k != member]
        if not rest:
            continue
        answer = conflicts(rest)
        if answer is None and unknown == "fail":
            return None
        if answer:
            kept = rest
    return kept
