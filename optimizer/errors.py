"""Error hierarchy of ccopt; every user-facing failure is one of these.

    OptimizerError
    ├── ConfigError      bad user input: job file, CLI flag, model config, unknown id
    ├── CatalogError     a price or GPU table that fails validation (names file, row, column)
    ├── RefreshError     downloading newer price tables failed (previous tables stay in use)
    ├── InfeasibleError  no plan meets the constraints (carries an explanation)
    └── SolverError      CP-SAT returned an unexpected status (model invalid, unknown)

`Status` is the outcome of every planner (plan, batch, serve): optimal, feasible, infeasible.
The CLI maps ConfigError/CatalogError to exit code 2, InfeasibleError to 1, any other error to 3.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from enum import StrEnum

__all__ = [
    "OptimizerError",
    "ConfigError",
    "CatalogError",
    "RefreshError",
    "InfeasibleError",
    "SolverError",
    "Status",
    "did_you_mean",
    "install_extra",
]


class Status(StrEnum):
    """Outcome of a solve; the value is what the JSON contract prints."""

    OPTIMAL = "optimal"  # proven cheapest over the searched candidates
    FEASIBLE = "feasible"  # a valid plan, optimality not proven within the time limit
    INFEASIBLE = "infeasible"  # no plan meets the constraints (an explanation says why)


class OptimizerError(Exception):
    """Base of every error ccopt raises on purpose."""


class ConfigError(OptimizerError, ValueError):
    """Invalid user input; the message names the field and the allowed values."""


class CatalogError(OptimizerError):
    """A data table (prices, GPUs) failed validation."""


class RefreshError(OptimizerError):
    """Refreshing price tables over HTTP failed; the previous tables remain in use."""


class InfeasibleError(OptimizerError):
    """No plan satisfies the constraints."""

    def __init__(self, message: str, explanation: object | None = None) -> None:
        super().__init__(message)
        self.explanation = explanation


class SolverError(OptimizerError):
    """The solver ended in a status we cannot turn into an answer."""


def did_you_mean(value: str, choices: Iterable[str], n: int = 3) -> str:
    """Return ' — did you mean X, Y?' for close matches of `value` among `choices`, else ''."""
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(value.lower(), list(lowered), n=n, cutoff=0.5)
    if not close:
        return ""
    return " — did you mean " + ", ".join(repr(lowered[c]) for c in close) + "?"


def install_extra(extra: str) -> str:
    """How to install an optional extra, as the README says it (from the checkout: ccopt is not
    a registry package, so `pip install 'ccopt[...]'` could fetch someone else's)."""
    return f"pip install -e '.[{extra}]' (in the ccopt checkout)"
