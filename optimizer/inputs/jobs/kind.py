"""Which planner a job file is for: the `workload.kind` it names, read before validation, and
the one refusal of a kind that another planner takes (train, serve and RL job files)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from optimizer.errors import ConfigError
from optimizer.inputs.jobs.strict import StrictModel
from optimizer.inputs.validation import validated

__all__ = ["workload_kind", "job_of_kind"]

#: a job file kind's model (Job, ServeJob, RlJob)
JobT = TypeVar("JobT", bound=StrictModel)


def workload_kind(data: object, default: str | None = None) -> object:
    """The `workload.kind` a decoded job table names, before it is validated (which planner it
    is for): `default` when the workload is missing, not a table or names no kind; None when
    `data` is not a table."""
    if not isinstance(data, dict):
        return None
    workload = data.get("workload")
    return workload.get("kind", default) if isinstance(workload, dict) else default


def job_of_kind(
    model: type[JobT],
    data: dict[str, Any],
    source: str,
    *,
    takes: Callable[[object], bool],
    refusal: str,
    default_kind: str | None = None,
) -> JobT:
    """A decoded job table validated as `model`, once its `workload.kind` (workload_kind, with
    `default_kind`) is one this planner `takes`.

    Raises:
        ConfigError: `source: workload.kind: 'KIND' ` + `refusal` for a kind of another planner,
            else the first validation error in one line (validated).
    """
    kind = workload_kind(data, default_kind)
    if not takes(kind):
        raise ConfigError(f"{source}: workload.kind: {kind!r} {refusal}")
    return validated(model, data, source)
