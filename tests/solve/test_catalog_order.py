"""The answer does not depend on the order of the price catalog's rows: the same offerings
shuffled give the same plan, alternatives and rejection reasons (each reason is the
offering's own, not inherited from whichever offering of its hardware class came first)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from optimizer import api

ROOT = Path(__file__).resolve().parents[2]
VOLATILE = {"wall_s", "solve_s", "enumerate_s", "age_days", "path", "source", "catalog"}


def _mask(obj):
    if isinstance(obj, dict):
        return {k: _mask(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_mask(v) for v in obj]
    return obj


@pytest.fixture(scope="module")
def shuffled(tmp_path_factory) -> Path:
    head, *rows = (ROOT / "pricing_data" / "offerings.csv").read_text().splitlines(True)
    random.Random(7).shuffle(rows)
    out = tmp_path_factory.mktemp("catalog") / "offerings.csv"
    out.write_text(head + "".join(rows))
    return out


@pytest.mark.parametrize("example", ["llama7b_10days", "qlora_70b_single_node"])
def test_shuffled_catalog_gives_the_same_plan(example, shuffled, no_user_state) -> None:
    job = ROOT / "examples" / f"{example}.toml"
    bundled = api.plan(job, offline=True, pareto=True)
    again = api.plan(job, prices=shuffled, pareto=True)
    assert _mask(again) == _mask(bundled)
    assert bundled["rejected"]  # the reasons are compared too, not an empty list


def test_shuffled_catalog_gives_the_same_comparison(shuffled, no_user_state) -> None:
    job = ROOT / "examples" / "llama7b_10days.toml"
    assert _mask(api.compare(job, prices=shuffled)) == _mask(api.compare(job, offline=True))
