"""The configuration options of `ccopt estimate` and `ccopt calibrate`, generated in one place
from the request type (optimizer.api.request_options: one option per ConfigRequest field, its
help the field's description with its allowed values, range and default, plus the hidden old
names). A command declares a `config` parameter where the options go; typer sees them through
the command's `__signature__` and the command receives them as one dict (None: not given)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer

from optimizer import api

__all__ = ["with_request_options", "request_option_names", "SERVE_ONLY"]

#: the serving workload's options: estimate's only (a calibration is of a training run)
SERVE_ONLY: frozenset[str] = frozenset(api.SERVE_FIELDS)


def request_option_names(exclude: Iterable[str] = ()) -> tuple[str, ...]:
    """The parameter names of the generated options (old names included), minus `exclude`."""
    left = set(exclude)
    return tuple(o.name for o in api.request_options() if o.name not in left)


def _parameter(option: Any) -> inspect.Parameter:
    annotation = Annotated[
        option.value_type | None,
        typer.Option(*option.flags, help=option.help, hidden=option.hidden, show_default=False),
    ]
    return inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def with_request_options(exclude: Iterable[str] = ()) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a command whose `config: dict` parameter stands for the request options: the
    options (minus `exclude`) take its place in the command line, and their values reach the
    command as `config` ({field or old name: value or None})."""
    left = set(exclude)

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        own = list(inspect.signature(func, eval_str=True).parameters.values())
        at = [p.name for p in own].index("config")
        generated = [_parameter(o) for o in api.request_options() if o.name not in left]
        names = [p.name for p in generated]
        params = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in [*own[:at], *generated, *own[at + 1 :]]
        ]

        @functools.wraps(func)
        def command(**kwargs: Any) -> Any:
            config = {name: kwargs.pop(name) for name in names}
            return func(**kwargs, config=config)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap
