"""Every job-file field is documented: `ccopt schema job|serve-job|batch-job` (and
docs/job-files.md, generated from the same models) give each property a non-empty meaning."""

from __future__ import annotations

from typing import Any

import pytest

from optimizer.cli.schema_cmd import INPUTS, schema_of
from optimizer.inputs.jobs.common import HARDWARE_OVERRIDES, AssumptionOverrides, HardwareEntry
from optimizer.pricing.owned import HardwareSpec
from tools.job_fields import rows


def _undocumented(schema: dict[str, Any]) -> list[str]:
    """Properties (of the top level and of every $defs model) without a description."""
    tables = [("", schema), *((f"{name}.", d) for name, d in schema.get("$defs", {}).items())]
    return [
        f"{prefix}{prop}"
        for prefix, table in tables
        for prop, spec in (table.get("properties") or {}).items()
        if not str(spec.get("description") or "").strip()
    ]


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_every_property_of_the_job_file_schema_has_a_description(kind: str) -> None:
    schema = schema_of(kind)
    assert schema.get("properties"), "the walk found nothing to check"
    assert _undocumented(schema) == []


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_every_row_of_the_generated_field_table_has_a_meaning(kind: str) -> None:
    empty = [path for path, _type, _default, meaning in rows(INPUTS[kind]) if not meaning.strip()]
    assert empty == []


def test_the_walk_catches_a_missing_description() -> None:
    bare = {
        "properties": {"a": {"type": "string", "description": "x"}, "b": {"type": "int"}},
        "$defs": {"T": {"properties": {"c": {"description": " "}}}},
    }
    assert _undocumented(bare) == ["b", "T.c"]


def test_box_overrides_are_the_fields_of_hardware_spec() -> None:
    """[[hardware.*]] declares every HardwareSpec field a job may override (documented and
    range-checked where it is written); HardwareSpec checks them again."""
    spec = set(HardwareSpec.model_fields) - {"gpu"}
    assert set(HARDWARE_OVERRIDES) == spec
    assert spec <= set(HardwareEntry.model_fields)
    assert HardwareEntry.model_config.get("extra") == "forbid"


def test_assumption_rows_state_a_meaning_and_the_model_default() -> None:
    fields = AssumptionOverrides.model_fields
    for name, field in fields.items():
        assert "(model default: " in field.description, name
        assert not field.description.startswith("override PerfAssumptions"), name
    assert fields["profile_band_same_gpu"].description.endswith("(model default: [0.9, 1.15])")
    assert "GB/s" in fields["checkpoint_write_gb_s_per_instance"].description
