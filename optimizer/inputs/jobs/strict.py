"""The strict base of every job-file table (unknown keys rejected, no NaN/inf, immutable)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, model_validator

from optimizer.inputs.aliases import rename_old_fields
from optimizer.inputs.gpus import check_gpu_name
from optimizer.inputs.validation import check_text

__all__ = ["STRICT", "StrictModel", "RenamedFieldsModel", "GpuName"]

#: a GPU of the catalog, by id or alias (any case): an unknown name is refused while the file is
#: read, so the error names the file and the field (the name itself is kept as written)
GpuName = Annotated[str, AfterValidator(check_gpu_name)]

STRICT = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False, defer_build=True)


def _tuples(value: object) -> Any:
    """TOML arrays arrive as lists; strict tuple fields want tuples (elements are left as they are)."""
    if isinstance(value, dict):
        return {k: tuple(v) if isinstance(v, list) else v for k, v in value.items()}
    return value


def _texts(value: Any) -> Any:
    """Check every string field (and dict key) of a table before validation."""
    if isinstance(value, dict):
        for key, item in value.items():
            check_text(str(key), key)
            check_text(str(key), item)
    return value


class StrictModel(BaseModel):
    """Base of the job-file tables: STRICT, with TOML arrays accepted for tuple fields."""

    model_config = STRICT

    @model_validator(mode="before")
    @classmethod
    def _arrays(cls, data: object) -> Any:
        return _tuples(_texts(data))

    def require_one_of(self, first: str, second: str, words: str = "") -> None:
        """Refuse a table that sets both or neither of two alternative fields (ValueError
        "give exactly one of FIRST or SECOND"; `words` names the pair instead when given)."""
        if (getattr(self, first) is None) == (getattr(self, second) is None):
            raise ValueError(f"give exactly one of {words or f'{first} or {second}'}")


class RenamedFieldsModel(StrictModel):
    """A job-file table some of whose fields were renamed: the old names of `OLD_NAMES_OF`
    (optimizer.inputs.aliases.JOB_FIELD_ALIASES) still read, with a warning."""

    OLD_NAMES_OF: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: object) -> Any:
        return rename_old_fields(data, cls.OLD_NAMES_OF)
