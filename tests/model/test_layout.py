"""The layout rulebook (model/layout.py): its generators yield only layouts its rules accept,
and every such layout over the degree lists (exhaustive against a brute-force filter)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.model.layout import (
    PIPELINE_DEGREES,
    TP_DEGREES,
    BatchRule,
    Split,
    parallel_problems,
    planned_layout,
    split_sizes,
    splits,
    tensor_degrees,
    training_layouts,
)
from optimizer.model.setup import Layout
from optimizer.model.spec import ModelSpec
from optimizer.solve.serve.options import tp_degrees
from optimizer.solve.train.search_space import instance_counts


@dataclass(frozen=True)
class Shape:
    """The parts of a model the rules read."""

    name: str
    layers: int
    heads: int
    n_kv_heads: int


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    kv = draw(st.sampled_from([1, 2, 3, 4, 8, 12]))
    heads = kv * draw(st.integers(1, 8))
    return Shape("m", draw(st.integers(1, 40)), heads, kv)


GPUS_PER_INSTANCE = st.sampled_from([1, 2, 3, 4, 6, 8, 16])
ZERO = st.lists(st.sampled_from([0, 1, 2, 3]), min_size=1, max_size=4, unique=True)


@settings(max_examples=300, deadline=None)
@given(
    shapes(),
    GPUS_PER_INSTANCE,
    st.integers(1, 12),
    st.integers(1, 4),
    ZERO,
    st.integers(1, 512),
    st.sampled_from([0.0, 0.05]),
)
def test_every_generated_layout_passes_the_rules(spec, gpn, instances, vp, zero, sequences, tolerance):
    batch = BatchRule(sequences, tolerance)
    for lay in training_layouts(spec, instances * gpn, gpn, batch, zero, (8, 4, 2, 1), vp):
        assert lay.gpus == instances * gpn
        problems = parallel_problems(
            spec,
            num_gpus=lay.gpus,
            gpus_per_instance=gpn,
            tp=lay.tp,
            pp=lay.pp,
            vp=lay.vp,
            zero_stage=lay.zero_stage,
        )
        assert problems == []
        # the batch it realises is within the tolerance of the asked one
        assert abs(lay.global_batch - sequences) <= tolerance * sequences + 1e-9


def _brute_splits(spec: Shape, num_gpus: int, gpn: int, vp: int) -> set[Split]:
    """Every (tp, pp) of the degree lists the rules accept, dp = the GPUs left."""
    return {
        Split(tp, pp, num_gpus // (tp * pp))
        for tp in TP_DEGREES
        for pp in PIPELINE_DEGREES
        if not parallel_problems(spec, num_gpus=num_gpus, gpus_per_instance=gpn, tp=tp, pp=pp, vp=vp)
    }


@settings(max_examples=300, deadline=None)
@given(shapes(), GPUS_PER_INSTANCE, st.integers(1, 8), st.integers(1, 3))
def test_splits_are_exhaustive_over_the_degree_lists(spec, gpn, instances, vp):
    got = splits(spec, instances * gpn, gpn, vp)
    assert len(set(got)) == len(got)
    assert set(got) == _brute_splits(spec, instances * gpn, gpn, vp)


@settings(max_examples=200, deadline=None)
@given(shapes(), GPUS_PER_INSTANCE)
def test_serving_degrees_are_exactly_the_valid_replicas(spec, gpn):
    # a serving replica is tp GPUs of one instance (instances need not be whole)
    brute = [
        tp
        for tp in TP_DEGREES
        if not parallel_problems(spec, num_gpus=tp, gpus_per_instance=gpn, tp=tp, whole_instances=False)
    ]
    assert list(tensor_degrees(spec, gpn)) == brute == tp_degrees(spec, gpn)


def test_hand_counted_splits():
    # 12 heads / 4 KV heads: tp ∈ {1, 2, 4} (8 and 16 do not divide 12); 6 layers: pp ∈ {1, 2, 4}
    # (8, 16 > 6); 16 GPUs on 8-GPU instances: all 3 × 3 products divide 16
    spec = Shape("m", 6, 12, 4)
    got = splits(spec, 16, 8)
    assert {(s.tp, s.pp) for s in got} == {(t, p) for t in (1, 2, 4) for p in (1, 2, 4)}
    assert Split(4, 4, 1) in got and Split(1, 1, 16) in got
    # interleaving 3 virtual stages: pp × 3 must divide 6 layers -> pp = 2 only
    assert {(s.tp, s.pp) for s in splits(spec, 16, 8, vp=3)} == {(1, 2), (2, 2), (4, 2)}
    # 6-GPU instances: tp 4 would straddle two instances; tp ∈ {1, 2}
    assert {s.tp for s in splits(spec, 12, 6)} == {1, 2}
    # replica sizes tp × pp on 8-GPU instances: {1, 2, 4} × {1, 2, 4}
    assert split_sizes(spec, 8) == (1, 2, 4, 8, 16)


def test_hand_counted_layouts():
    # 2 GPUs, batch 8, micro-batches (4, 2, 1): splits (tp 1, pp 1, dp 2), (2, 1, 1), (1, 2, 1)
    # dp 2: mb 4 -> ga 1, mb 2 -> ga 2, mb 1 -> ga 4, each with ZeRO 0 and 3 = 6 layouts;
    # dp 1 (two splits): 3 micro-batches each, ZeRO 0 only (nothing to shard) = 6 layouts
    spec = Shape("m", 4, 4, 4)
    got = training_layouts(spec, 2, 2, BatchRule(8), (0, 3), (4, 2, 1))
    assert len(got) == 12
    assert {(lay.micro_batch, lay.grad_accum) for lay in got if lay.dp == 2} == {(4, 1), (2, 2), (1, 4)}
    assert {lay.zero_stage for lay in got if lay.dp == 1} == {0}


def test_model_spec_and_instance_counts_use_the_rulebook():
    # Llama-2-7B shape: 32 layers, 32 heads: on 8-GPU instances tp × pp ∈ {1, 2, 4, 8} × {1, 2,
    # 4, 8, 16}; a batch of 12 (2^2 · 3) is realised by dp ∈ {1, 2, 3, 4, 6, 12}: 3 instances =
    # 24 GPUs = dp 3 × 8 or dp 6 × 4 or dp 12 × 2
    spec = ModelSpec(name="l", layers=32, hidden=4096, heads=32, ffn=11008, vocab=32000)
    assert 3 in instance_counts(1, 4, 8, BatchRule(12), spec)
    assert split_sizes(spec, 8) == (1, 2, 4, 8, 16, 32, 64, 128)


def test_planned_layout_is_the_dataclass_built_normally():
    """The generators' constructor sets every field of Layout, so its layouts compare,
    hash and print as Layout(...) does and stay frozen (a field added to Layout fails here)."""
    fast = planned_layout(8, 2, 4, 1, 2, 16, 2)
    slow = Layout(dp=8, tp=2, pp=4, zero_stage=1, micro_batch=2, grad_accum=16, vp=2)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert set(vars(fast)) == {f.name for f in dataclasses.fields(Layout)}
    assert (fast.checkpointing, fast.cp, fast.gpus, fast.global_batch) == ("none", 1, 64, 256)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.tp = 1  # type: ignore[misc]
