"""The conformal band of benchmarks/folds.py (sources as the exchangeable unit), on tiny
hand-made sets of sources with every number derived by hand."""

from __future__ import annotations

import math

import pytest

from benchmarks.folds import (
    borrowed_scores,
    conformal_bands,
    conformal_quantiles,
    held_out_bands,
    held_out_scores,
    unit_quantile,
)


def test_each_unit_weighs_one_at_weibull_plotting_positions() -> None:
    # four units of one value: the i-th smallest sits at i/5
    four = [("a", 0.1), ("b", 0.4), ("c", 0.2), ("d", 0.3)]
    assert unit_quantile(four, 0.8) == pytest.approx(0.4)
    assert unit_quantile(four, 0.5) == pytest.approx(0.25)  # half-way between 2/5 and 3/5
    # unit a has two values of weight 1/2 each: positions (cum − w/2 + 1/2)/3 = 1/4, 1/2, 3/4
    two = [("a", 1.0), ("a", 3.0), ("b", 2.0)]
    assert unit_quantile(two, 0.5) == pytest.approx(2.0)
    assert unit_quantile(two, 0.625) == pytest.approx(2.5)


# five sources of one group, one log residual each
FIVE = [("a", "g", 0.0), ("b", "g", 0.1), ("c", "g", 0.2), ("d", "g", 0.3), ("e", "g", 1.0)]


def test_held_out_scores_by_hand() -> None:
    # without a: others 0.1 0.2 0.3 1.0, centre (0.2 + 0.3)/2 = 0.25, |dev| 0.05 0.05 0.15 0.75,
    # spread (0.05 + 0.15)/2 = 0.10: score |0 − 0.25| / 0.10 = 2.5. Likewise b: 0.15/0.15 = 1,
    # c: 0/0.15 = 0, d: 0.15/0.10 = 1.5, e: 0.85/0.10 = 8.5 (each group keeps 4 >= 4 sources)
    scores = {u: s for _, u, s in held_out_scores(FIVE)}
    assert scores == pytest.approx({"a": 2.5, "b": 1.0, "c": 0.0, "d": 1.5, "e": 8.5})
    assert {c for c, _, _ in held_out_scores(FIVE)} == {"g"}


def test_the_conformal_quantile_and_band_by_hand() -> None:
    # scores 0, 1, 1.5, 2.5, 8.5 at 1/6 ... 5/6: 0.8 lies 4/5 of the way from 2.5 to 8.5
    q = 2.5 + 0.8 * 6.0
    assert conformal_quantiles(held_out_scores(FIVE))["g"] == pytest.approx(q)
    # with all five: centre 0.2 (the 3rd of 5, pooled = own median), spread median of
    # 0.2 0.1 0 0.1 0.8 = 0.1
    p10, p50, p90, cases, sources = conformal_bands(FIVE, "any")["g"]
    assert (p10, p50, p90) == pytest.approx(
        (math.exp(0.2 - q * 0.1), math.exp(0.2), math.exp(0.2 + q * 0.1)), rel=1e-9
    )
    assert (cases, sources) == (5, 5)


def test_a_source_is_scored_against_the_others_alone() -> None:
    # e held out: the other four give centre 0.15 and scores (without e) by hand:
    # a: others 0.1 0.2 0.3 → 3 sources < 4: thin (the pooled spread), so every held-out score
    # of this fold is thin, and e's band is that of the four sources a-d
    lo, mid, hi = held_out_bands(FIVE)[4]
    assert mid == pytest.approx(0.15)
    assert lo < mid < hi < 1.0  # e (1.0) falls outside the band of the others


# three data-centre NVIDIA groups of one source each, two runs per source (issue 44 tiers)
TIERED = [
    ("a", "hopper/16", 0.2),
    ("a", "hopper/16", 0.4),
    ("b", "ampere-dc/16", -0.1),
    ("b", "ampere-dc/16", 0.1),
    ("c", "blackwell/fp8", 0.0),
    ("c", "blackwell/fp8", 0.2),
    ("d", "ada/16", 1.0),
    ("d", "ada/16", 1.2),
]


def test_a_group_borrows_from_its_tier_without_itself() -> None:
    # a's runs scored as a new data-centre group would get them: the tier's spread without
    # hopper/16 and without a = median |r − own group median| of b (0.1, 0.1) and c (0.1, 0.1)
    # = 0.1, centre 0: scores 0.2/0.1 = 2 and 0.4/0.1 = 4. d (ada) is the only unit of its
    # tier: no evidence of transfer inside it, no borrowed score
    scores = borrowed_scores(TIERED)
    assert sorted(s for _, u, s in scores if u == "a") == pytest.approx([2.0, 4.0])
    assert {c for c, _, _ in scores} == {"borrow:nvidia-dc"}
    bands = conformal_bands(TIERED, "any")
    # the data-centre tier has a pooled band of its own; the workstation tier (one unit) has none
    assert "any:nvidia-dc" in bands and "any:nvidia-ws" not in bands
