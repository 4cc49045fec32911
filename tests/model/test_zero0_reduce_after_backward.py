"""DeepSpeed without ZeRO all-reduces the gradients after backward has finished (engine.py
backward -> allreduce_gradients -> buffered_allreduce_fallback at the accumulation boundary): no
compute is left to hide it behind, where PyTorch DDP's bucket hooks overlap it with the last
micro-batch's backward (Li et al. 2020 §3.2.3)."""

from __future__ import annotations

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.cluster import Cluster
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.step_model import DecoderStepModel, DpTraffic

A100 = get_gpu("A100-80GB")
RAW = PerfAssumptions(use_fitted=False)
CLUSTER = Cluster(A100, 8)
COMPUTE_MB_S = 1.0  # the last micro-batch's compute, a round figure for the window


def _traffic(stack: str, zero: int = 0) -> DpTraffic:
    setup = TrainingSetup(seq_len=4096, precision="bf16", stack=stack, attention="flash")
    model = DecoderStepModel(PRESETS["llama-2-7b"], setup, A100, RAW)
    layout = Layout(dp=8, zero_stage=zero, micro_batch=1, grad_accum=4)
    return model.dp_traffic(layout, CLUSTER, COMPUTE_MB_S)


def test_deepspeed_at_zero0_hides_none_of_its_all_reduce() -> None:
    ds = _traffic("deepspeed")
    assert ds.total_s > 0 and ds.window_s == 0.0
    assert ds.exposed_s == ds.total_s


def test_ddp_and_deepspeed_zero_stages_still_overlap() -> None:
    ddp = _traffic("generic")  # torch DDP: min(0.8 × all-reduce, 2/3 of the last backward) hidden
    assert ddp.window_s == pytest.approx(2.0 / 3.0 * COMPUTE_MB_S)
    assert ddp.exposed_s == pytest.approx(ddp.total_s - min(0.8 * ddp.total_s, ddp.window_s))
    assert ddp.exposed_s < ddp.total_s
    zero2 = _traffic("deepspeed", zero=2)  # overlap_comm, as the export writes it
    assert zero2.exposed_s == pytest.approx(zero2.total_s - min(0.7 * zero2.total_s, zero2.window_s))
    assert zero2.exposed_s < zero2.total_s
