"""An fp32 run's matmuls: on TF32 tensor cores (the default, which an fp32 plan's exported
scripts turn on) or, with TF32 off (PyTorch ≥ 1.12's own default), IEEE fp32 on the CUDA cores,
where a small hidden size leaves no tensor-core tile to underfill. Numbers from the H100 SXM's
data sheet: 67 fp32 and 494.5 dense TF32 TFLOPS."""

from __future__ import annotations

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.cluster import Cluster
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_model import DecoderStepModel

H100 = get_gpu("H100-80GB")
# GPT-2-small-shaped: hidden 768 (the size factor's hidden term h / (h + 1000) = 768 / 1768)
GPT2 = ModelSpec(layers=12, hidden=768, heads=12, kv_heads=12, ffn=3072, vocab=50257, ffn_kind="plain")


def test_fp32_peak_is_tf32_unless_it_is_off() -> None:
    assert H100.peak_tflops("fp32") == pytest.approx(494.5)
    assert H100.peak_tflops("fp32", tf32=False) == pytest.approx(67.0)
    assert get_gpu("V100-32GB").peak_tflops("fp32") == get_gpu("V100-32GB").fp32_tflops  # no TF32


def test_tf32_off_runs_at_the_cuda_core_peak_without_the_tile_term() -> None:
    # the GEMMs' achieved efficiency = base × size factor; the base is the same, the size factor
    # loses its hidden term h / (h + 1000) = 768 / 1768 with TF32 off: eff_off / eff_on = 1768 / 768
    a = PerfAssumptions(use_fitted=False)
    layout, cluster = Layout(micro_batch=8), Cluster(H100, 1)
    models = {
        tf32: DecoderStepModel(GPT2, TrainingSetup(seq_len=512, precision="fp32", tf32=tf32), H100, a)
        for tf32 in (None, False)
    }
    assert models[None].peak_tflops == pytest.approx(494.5)
    assert models[False].peak_tflops == pytest.approx(67.0)
    eff = {k: m.microbatch_times_s(layout, cluster)[3] for k, m in models.items()}
    assert eff[False] / eff[None] == pytest.approx(1768 / 768, rel=1e-9)
