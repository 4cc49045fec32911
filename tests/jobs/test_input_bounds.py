"""Every number a job file gives has a plausible range stated once (issue 47, inputs): absurd
magnitudes (1e300 seconds, 1e-300 GB/s, a $1e-12 price) are one line and exit 2, never a plan;
a UTF-8 byte-order mark is not an error; a load past the solver's integer scale is exit 2, not 3;
a long bad value is echoed short."""

from __future__ import annotations

import importlib
import pkgutil
import typing
from pathlib import Path

import annotated_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typer.testing import CliRunner

import optimizer.inputs.jobs as jobs_package
from optimizer.cli import app
from optimizer.inputs.jobs.common import _BOUNDS, AssumptionOverrides

ROOT = Path(__file__).resolve().parents[2]
HEADLINE = (ROOT / "examples" / "llama7b_10days.toml").read_text()
CHATBOT = (ROOT / "examples" / "serve_mistral7b_chatbot.toml").read_text()
runner = CliRunner()

#: numeric fields whose range a validator of their own states (with the reason)
CHECKED_BY_A_VALIDATOR = {
    "Search.virtual_stages",  # a list: each value in 1..MAX_VIRTUAL_STAGES (field_validator)
    "Constraints.zero_stages",  # a list: each value in 0..3
    "ServeConstraints.redundancy",  # "n", "n+1".."n+k" or k (≤ the stated maximum)
}


def _job_models() -> list[type[BaseModel]]:
    seen: dict[str, type[BaseModel]] = {}
    for info in pkgutil.iter_modules(jobs_package.__path__):
        module = importlib.import_module(f"optimizer.inputs.jobs.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__ == module.__name__
            ):
                seen[value.__name__] = value
    return list(seen.values())


def test_every_numeric_field_of_every_job_model_states_both_ends() -> None:
    missing = []
    for model in _job_models():
        for name, field in model.model_fields.items():
            kinds = typing.get_args(field.annotation) or (field.annotation,)
            if not any(kind in (int, float) for kind in kinds):
                continue
            low = any(isinstance(m, annotated_types.Gt | annotated_types.Ge) for m in field.metadata)
            high = any(isinstance(m, annotated_types.Lt | annotated_types.Le) for m in field.metadata)
            if not (low and high) and f"{model.__name__}.{name}" not in CHECKED_BY_A_VALIDATOR:
                missing.append(f"{model.__name__}.{name}")
    assert missing == []
    assert len(_job_models()) >= 25  # the walk found the job models (not an empty pass)


def test_every_overridable_constant_states_its_range() -> None:
    fields = set(AssumptionOverrides.model_fields)
    numeric = {
        name
        for name, f in AssumptionOverrides.model_fields.items()
        if typing.get_args(f.annotation)[0] in (int, float)
    }
    assert numeric <= set(_BOUNDS) and numeric, sorted(numeric - set(_BOUNDS))
    assert fields  # generated from PerfAssumptions


def _with_assumption(name: str, value: float) -> str:
    return HEADLINE + f"\n[assumptions]\n{name} = {value!r}\n"


def _plan(tmp_path: Path, text: str, command: str = "plan") -> tuple[int, str]:
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    result = runner.invoke(
        app, [command, str(job), "--offline"] if command == "plan" else [command, str(job)]
    )
    return result.exit_code, result.stderr


NUMERIC = sorted(name for name, bound in _BOUNDS.items())


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(NUMERIC), absurd=st.sampled_from([1e300, 1e-300, -1e300]))
def test_absurd_assumptions_are_refused_in_one_line(tmp_path_factory, name: str, absurd: float) -> None:
    bound = _BOUNDS[name]
    low = bound.get("gt", bound.get("ge"))
    if absurd == 1e-300 and low == 0:  # zero is allowed there, so 1e-300 is in range
        return
    integer = name in {"zero3_prefetch_layers", "offload_resident_layers", "checkpoints_kept"}
    value = int(absurd) if integer and abs(absurd) > 1 else absurd
    code, err = _plan(tmp_path_factory.mktemp("a"), _with_assumption(name, value))
    assert code == 2, (name, value, err)
    assert f"assumptions.{name}" in err and "allowed" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("table", "row"),
    [
        ("[[pricing.prices]]", 'provider = "aws"\ninstance = "p5.48xlarge"\nusd_per_gpu_hour = 1e-12'),
        ("[[pricing.prices]]", 'provider = "aws"\ninstance = "p5.48xlarge"\nusd_per_hour = 1e-9'),
    ],
)
def test_a_price_below_a_cent_per_gpu_hour_is_refused(tmp_path: Path, table: str, row: str) -> None:
    code, err = _plan(tmp_path, HEADLINE + f"\n{table}\n{row}\n")
    assert code == 2 and "≥ 0.01" in err, err


def test_a_held_reservation_price_has_a_ceiling(tmp_path: Path) -> None:
    held = (
        '\n[[constraints.reserved_held]]\nprovider = "aws"\ninstance = "p5.48xlarge"\n'
        "count = 1\nusd_per_hour = 1e9\n"
    )
    code, err = _plan(tmp_path, HEADLINE + held)
    assert code == 2 and "reserved_held[0].usd_per_hour" in err, err


def test_a_utf8_byte_order_mark_is_not_an_error(tmp_path: Path) -> None:
    job = tmp_path / "bom.toml"
    job.write_bytes(b"\xef\xbb\xbf" + HEADLINE.encode())
    result = runner.invoke(app, ["plan", str(job), "--offline", "--json"])
    assert result.exit_code == 0, result.stderr


def test_a_serving_load_past_the_solvers_scale_is_bad_input_not_a_bug(tmp_path: Path) -> None:
    text = CHATBOT.replace("concurrent_users = 100", "concurrent_users = 1000000000")
    code, err = _plan(tmp_path, text, "serve")
    assert code == 2 and "integer scale" in err and "internal error" not in err, err


def test_too_many_buckets_is_one_short_line(tmp_path: Path) -> None:
    text = CHATBOT.replace("prompt_tokens = 512", "").replace("output_tokens = 256", "")
    buckets = "".join(
        f"\n[[workload.buckets]]\nshare = {1 / 40!r}\nprompt_tokens = {100 + i}\noutput_tokens = 50\n"
        for i in range(40)
    )
    at = text.index("[constraints]")
    code, err = _plan(tmp_path, text[:at] + buckets + "\n" + text[at:], "serve")
    assert code == 2 and "at most 32 items" in err and "40 items" in err
    assert len(err) < 400, err  # the 40 buckets are not echoed whole
