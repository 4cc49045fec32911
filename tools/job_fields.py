"""Markdown tables of every job-file field, generated from the input models (the same models
that validate job files and that `ccopt schema job|serve-job|batch-job` prints)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from optimizer.cli.schema_cmd import INPUTS


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return " \\| ".join(f'"{a}"' if isinstance(a, str) else str(a) for a in args)
    if origin in (tuple, list):
        inner = _type_name(args[0]) if args else "any"
        return f"list of {inner}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    if annotation is type(None):
        return "none"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "**required**"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "(table)"
    if isinstance(value, tuple):
        value = list(value)
    return "–" if value is None else f"`{value!r}`".replace("'", '"')


def _submodel(annotation: Any) -> type[BaseModel] | None:
    for a in (annotation, *typing.get_args(annotation)):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
        for b in typing.get_args(a):
            if isinstance(b, type) and issubclass(b, BaseModel):
                return b
    return None


def rows(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    out = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        sub = _submodel(field.annotation)
        if sub is not None:
            out.extend(rows(sub, f"{path}."))
            continue
        desc = (field.description or "").replace("|", "\\|").replace("\n", " ")
        out.append((path, _type_name(field.annotation), _default(field), desc))
    return out


def old_names() -> str:
    """The old spellings that still load (optimizer.inputs.aliases.JOB_FIELD_ALIASES)."""
    from optimizer.inputs.aliases import HARDWARE_TABLES, JOB_FIELD_ALIASES, shown_table

    lines = ["| job file | old name | current name |", "|---|---|---|"]
    for table, names in JOB_FIELD_ALIASES.items():
        if table == "hardware":  # the entries' own table; listed under their full paths
            continue
        kind = (
            "serving"
            if table.startswith("serve.")
            else "batch"
            if table.startswith("capacity.")
            else "training, serving"
            if table in HARDWARE_TABLES
            else "training"
        )
        shown = shown_table(table)
        lines += [
            f"| {kind} | `{shown}.{old}` | `{shown}.{new}` |"
            for old, new in names.items()
            if table not in HARDWARE_TABLES  # owned boxes count num_boxes, a buy max_gpus
            or (new == "max_gpus") == table.endswith(".buy")
        ]
    return "\n".join(lines)


def markdown(kind: str) -> str:
    """The field table of one job-file kind (job, serve-job, batch-job), or `aliases`: the old
    spellings that still load."""
    if kind == "aliases":
        return old_names()
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    lines += [f"| `{p}` | {t} | {d} | {m} |" for p, t, d, m in rows(INPUTS[kind])]
    return "\n".join(lines)
