"""torchtitan's FSDP2 reduces gradients in fp32 (job_config.py mixed_precision_reduce: only
"float32") and in every micro-batch (train.py: no set_requires_gradient_sync(False)), and a
ZeRO-2 run reshards after each backward, so it gathers its weights again in every forward.
Compared with a stack that reduces 16-bit gradients once per step (PyTorch FSDP with bf16
reduce_dtype, stacks.toml [fsdp])."""

from __future__ import annotations

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.cluster import Cluster
from optimizer.model.comms import ring_allgather_s, ring_reduce_scatter_s
from optimizer.model.pcie import dp_bus_bandwidth_gb_s
from optimizer.model.presets import PRESETS
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.step_model import DecoderStepModel, DpTraffic

H100 = get_gpu("H100-80GB")
RAW = PerfAssumptions(use_fitted=False)
CLUSTER = Cluster(H100, 8)
LLAMA2_7B = PRESETS["llama-2-7b"]
# one GPU's shard is gathered by 8 ranks: the whole model, 6,738,415,616 parameters
PARAMS = 6_738_415_616


def _traffic(stack: str, zero: int, accumulation: int) -> tuple[DpTraffic, DecoderStepModel, Layout]:
    setup = TrainingSetup(seq_len=4096, precision="bf16", stack=stack, attention="flash")
    model = DecoderStepModel(LLAMA2_7B, setup, H100, RAW)
    layout = Layout(dp=8, zero_stage=zero, micro_batch=1, grad_accum=accumulation)
    return model.dp_traffic(layout, CLUSTER, 1.0), model, layout


def test_torchtitan_zero3_reduce_scatters_fp32_gradients_every_micro_batch() -> None:
    lat = RAW.small_message_latency_s
    titan, model, layout = _traffic("torchtitan", zero=3, accumulation=4)
    assert model.held_params(layout) == pytest.approx(PARAMS, rel=1e-9)
    bw = dp_bus_bandwidth_gb_s(CLUSTER, False, RAW)  # one node's bus, whatever the stack
    gathers = 2 * 4 * ring_allgather_s(PARAMS * 2, 8, bw, lat)  # bf16 weights, forward + backward
    expected = gathers + 4 * ring_reduce_scatter_s(PARAMS * 4, 8, bw, lat)  # fp32, 4 micro-batches
    assert titan.total_s == pytest.approx(expected, rel=1e-9)
    fsdp, _, _ = _traffic("fsdp", zero=3, accumulation=4)  # bf16 gradients, reduced once
    assert fsdp.total_s == pytest.approx(gathers + ring_reduce_scatter_s(PARAMS * 2, 8, bw, lat), rel=1e-9)


def test_torchtitan_zero2_gathers_and_reduces_in_every_micro_batch() -> None:
    one, _, _ = _traffic("torchtitan", zero=2, accumulation=1)
    four, _, _ = _traffic("torchtitan", zero=2, accumulation=4)
    assert four.total_s == pytest.approx(4 * one.total_s, rel=1e-9)
    assert four.window_s == pytest.approx(4 * one.window_s, rel=1e-9)
    once, _, _ = _traffic("fsdp", zero=2, accumulation=4)  # FSDP1 no_sync-style: once per step
    assert once.total_s == pytest.approx(_traffic("fsdp", zero=2, accumulation=1)[0].total_s, rel=1e-9)


def test_torchtune_reduce_scatters_its_bf16_gradients_every_micro_batch() -> None:
    """torchtune's recipes call backward per micro-batch with no no-sync either (bd2a0fc), on
    bf16 parameters: 16-bit gradients, reduced in every micro-batch."""
    lat = RAW.small_message_latency_s
    tune, model, layout = _traffic("torchtune", zero=3, accumulation=4)
    bw = dp_bus_bandwidth_gb_s(CLUSTER, False, RAW)
    gathers = 2 * 4 * ring_allgather_s(model.held_params(layout) * 2, 8, bw, lat)
    assert tune.total_s == pytest.approx(
        gathers + 4 * ring_reduce_scatter_s(PARAMS * 2, 8, bw, lat), rel=1e-9
    )
