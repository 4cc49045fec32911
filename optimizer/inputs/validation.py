"""One-line messages for bad input values: pydantic errors of the job files and CLI numbers.

Every number the user gives is finite and within a stated range; the message names the field
(or flag), the value and the allowed values, e.g.
`constraints.deadline_days: 1e+308 is not allowed; allowed: a number > 0 and ≤ 3650`.
"""

from __future__ import annotations

import math
import types
import typing
import unicodedata
from typing import Any, TypeVar

import annotated_types as at
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from optimizer.errors import ConfigError

__all__ = [
    "format_validation_error",
    "validated",
    "allowed_range",
    "check_number",
    "check_text",
    "control_character",
    "TextError",
    "TEXT_ALLOWED",
]

#: pydantic error types that mean "not a number in the allowed range"
_NUMBER_ERRORS = {
    "finite_number",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "float_type",
    "int_type",
    "int_from_float",
    "float_parsing",
    "int_parsing",
    "int_parsing_size",
}


#: names pydantic puts in an error's location for the member of a union that failed
_TAGS = ("int", "float", "str", "bool", "none", "tuple", "list", "dict")


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The model class inside an annotation (Model, Model | None, tuple[Model, ...])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None


def _scalar(annotation: Any) -> type | None:
    """int, float or bool when the annotation is one of them (optionally | None)."""
    if annotation in (int, float, bool):
        return annotation  # type: ignore[no-any-return]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kinds = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kinds) == 1 and kinds[0] in (int, float, bool):
            return kinds[0]  # type: ignore[no-any-return]
    return None


def _walk(
    model: type[BaseModel] | None, loc: tuple[Any, ...]
) -> tuple[str, FieldInfo | None, type[BaseModel] | None]:
    """The dotted field name (union tags dropped, indices as [i]), the field's FieldInfo and
    the model the last name was looked up in."""
    name, info, cur, parent = "", None, model, model
    for part in loc:
        if isinstance(part, int):
            name += f"[{part}]"
            continue
        if "[" in part or part in _TAGS:
            continue  # a union member's tag (literal[...], int, str), not a field
        parent = cur
        if cur is not None and part in cur.model_fields:
            info = cur.model_fields[part]
            cur = _submodel(info.annotation)
        else:
            info, cur = None, None
        name += f".{part}" if name else str(part)
    return name, info, parent


def _num(v: float, integer: bool) -> str:
    return f"{int(v):,}" if integer else f"{v:g}"


def allowed_range(
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    integer: bool = False,
) -> str:
    """'a number > 0 and ≤ 3650' / 'an integer ≥ 1'."""
    parts = [
        f"{op} {_num(v, integer)}" for op, v in (("≥", ge), (">", gt), ("<", lt), ("≤", le)) if v is not None
    ]
    return ("an integer" if integer else "a number") + (" " + " and ".join(parts) if parts else "")


def _field_range(info: FieldInfo | None) -> str | None:
    if info is None:
        return None
    kind = _scalar(info.annotation)
    if kind is bool:
        return "true or false"
    if kind is None:
        return None
    bounds: dict[str, float] = {}
    for m in info.metadata:
        for key, cls in (("gt", at.Gt), ("ge", at.Ge), ("lt", at.Lt), ("le", at.Le)):
            if isinstance(m, cls):
                bounds[key] = getattr(m, key)
    return allowed_range(**bounds, integer=kind is int)


class TextError(ValueError):
    """A string field holds a character data may not hold; `key` names the field."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


#: Unicode categories a name, path or label never needs: controls (newline, CR, NUL, ESC ...),
#: format characters (bidirectional overrides, zero-width), surrogates and the line/paragraph
#: separators that YAML and some terminals read as line breaks
_BAD_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
#: what the messages name as allowed
TEXT_ALLOWED = (
    "printable text (letters, digits, spaces and punctuation; no newline, tab, NUL or other "
    "control character)"
)


def control_character(text: str) -> str | None:
    """The first character of `text` a job file may not hold, as 'U+000A (LINE FEED)', or None."""
    for ch in text:
        if unicodedata.category(ch) in _BAD_CATEGORIES:
            name = unicodedata.name(ch, "") or {"\n": "LINE FEED", "\r": "CARRIAGE RETURN"}.get(ch, "control")
            return f"U+{ord(ch):04X} ({name})"
    return None


def check_text(key: str, value: Any) -> None:
    """Refuse a control character in a string (or in the strings of a list or dict key) of `key`.

    Every string of a job file may end up in an exported launch script or document, where a
    newline would end a comment and start a command (exports/, issue 41): names, providers,
    instances, regions, models and paths are data, and data has no control characters.

    Raises:
        TextError: a ValueError, "<key>: control character U+000A (LINE FEED) ... is not
            allowed; allowed: ...".
    """
    items = value if isinstance(value, list | tuple) else [value]
    for item in items:
        texts = [item] if isinstance(item, str) else list(item) if isinstance(item, dict) else []
        for text in texts:
            bad = control_character(text) if isinstance(text, str) else None
            if bad is not None:
                raise TextError(
                    key, f"control character {bad} in {text!r} is not allowed; allowed: {TEXT_ALLOWED}"
                )


def format_validation_error(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> str:
    """One line naming the field, the value and the allowed values.

    Args:
        exc: the pydantic error (its first error is reported).
        prefix: prepended to the field name (e.g. "model").
        model: the validated model, to state a number field's range and drop union tags.
    """
    err = exc.errors()[0]
    loc, info, parent = _walk(model, tuple(err["loc"]))
    field = ".".join(filter(None, [prefix, loc]))
    msg = err["msg"].removeprefix("Value error, ")
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, TextError):  # the table's check names the field inside it
        return f"{'.'.join(filter(None, [field, cause.key]))}: {cause.message}"
    value = err.get("input")
    shown = f" (got {_short(value)})" if err["type"] != "missing" and not isinstance(value, dict) else ""
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
        if parent is not None and parent.model_config.get("extra") == "forbid":
            msg += f"; allowed: {', '.join(parent.model_fields)}"
    elif err["type"] in _NUMBER_ERRORS or (err["type"] == "bool_type"):
        allowed = _field_range(info)
        if allowed is not None:
            return f"{field}: {_toml(value)} is not allowed; allowed: {allowed}"
    elif err["type"] == "too_short":
        msg, shown = "must list at least one value", ""
    elif " is not allowed; allowed: " in msg:
        shown = ""  # the message already states the value
    return f"{field or 'job'}: {msg}{shown}"


ModelT = TypeVar("ModelT", bound=BaseModel)


def validated(model: type[ModelT], data: object, source: str, prefix: str = "") -> ModelT:
    """`data` (a decoded table) validated as `model`.

    Raises:
        ConfigError: `source: ` and the first error in one line (format_validation_error).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {format_validation_error(exc, prefix, model=model)}") from None


def _toml(value: object) -> str:
    """A value as the user wrote it in TOML (true, not True)."""
    return str(value).lower() if isinstance(value, bool) else repr(value)


def check_number(
    value: float | None,
    flag: str,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    integer: bool = False,
) -> float | None:
    """`value` when it is finite and in range (None passes through).

    Raises:
        ConfigError: "--timeout: nan is not allowed; allowed: a number > 0 and ≤ 3600".
    """
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (gt is None or value > gt) and (ge is None or value >= ge)
    ok = ok and (lt is None or value < lt) and (le is None or value <= le)
    ok = ok and (not integer or float(value).is_integer())
    if not ok:
        raise ConfigError(
            f"{flag}: {value!r} is not allowed; allowed: {allowed_range(gt, ge, lt, le, integer)}"
        )
    return value


#: the longest echo of a bad value in an error line (a 200-entry list is not repeated whole)
MAX_SHOWN_CHARS = 80


def _short(value: object) -> str:
    """repr(value), cut to MAX_SHOWN_CHARS (a list or tuple says how many items it had)."""
    text = repr(value)
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    items = f", {len(value)} items" if isinstance(value, list | tuple) else ""
    return f"{text[: MAX_SHOWN_CHARS - 1]}…{items}"
