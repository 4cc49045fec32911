"""The RTX 5090 (GeForce Blackwell, GB202) against the B200 it used to share a generation with.

Datasheet: RTX Blackwell whitepaper Table 3 (as quoted second-hand, pricing_data/gpus_consumer.csv):
dense BF16 with FP32 accumulation 209.5 TFLOPS = 170 SM x 512 FLOP/clk/SM x 2.407 GHz (rated
boost). Measured cuBLAS bf16 GEMM rate, one script on every card (torch.mm on random square
bf16 matrices, best of 1024..10240; zzc0721/torch-performance-test-data database.md, read
2026-12-05): RTX 5090 236.03 and 242.18 TFLOPS; RTX 4090 (24 GB) 170.06, 173.31, 162.39, 163.09
(datasheet 165.2 = 128 SM x 512 x 2.52 GHz); B200 1696.03 (datasheet 2250). A GeForce card's
GEMMs run above its datasheet peak, a data-centre part's below it. The 5090's achievable fraction
is the RTX 4090's 0.7 (same 512 FLOP/clk/SM mma.sync tensor cores) scaled by the ratio of the
two cards' measured fractions; the B200's 0.5 it was copied from did not carry that uplift.
"""

from __future__ import annotations

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.bands import band_for, tier_of
from optimizer.model.cluster import Cluster
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_model import DecoderStepModel

RTX5090, B200 = get_gpu("RTX5090"), get_gpu("B200")
#: the published numbers the 5090's row rests on (module doc), typed from their pages
DATASHEET_5090 = 170 * 512 * 2.407 / 1000  # TFLOPS, = 209.505
CUBLAS_5090 = (236.03 + 242.18) / 2  # TFLOPS, two desktop RTX 5090 rows
CUBLAS_4090, DATASHEET_4090 = (170.06 + 173.31 + 162.39 + 163.09) / 4, 128 * 512 * 2.52 / 1000
CUBLAS_B200, DATASHEET_B200 = 1696.03, 2250.0
RTX4090_GUESS = 0.7  # the RTX 4090's default_efficiency (pricing_data/gpus.csv), the analogue


def test_the_bf16_peak_is_the_whitepapers_fp32_accumulate_rate() -> None:
    assert RTX5090.bf16_tflops == pytest.approx(round(DATASHEET_5090, 1))
    assert RTX5090.fp16_tflops == RTX5090.bf16_tflops  # FP32 accumulate, as PyTorch runs it
    assert get_gpu("RTX4090").bf16_tflops == pytest.approx(round(DATASHEET_4090, 1))
    # cuBLAS runs above a GeForce datasheet peak: 239.1 / 209.5 = 1.141, 167.2 / 165.2 = 1.012;
    # below a data-centre one: the B200's 1696 / 2250 = 0.754
    assert CUBLAS_5090 / DATASHEET_5090 == pytest.approx(1.141, abs=0.001)
    assert CUBLAS_4090 / DATASHEET_4090 == pytest.approx(1.012, abs=0.001)
    assert CUBLAS_B200 / DATASHEET_B200 == pytest.approx(0.754, abs=0.001)


def test_the_efficiency_is_the_4090s_scaled_by_the_measured_gemm_fractions() -> None:
    # 0.7 x 1.1413 / 1.0122 = 0.789 -> 0.79 (two digits, as the table's guesses)
    derived = RTX4090_GUESS * (CUBLAS_5090 / DATASHEET_5090) / (CUBLAS_4090 / DATASHEET_4090)
    assert derived == pytest.approx(0.789, abs=0.001)
    assert RTX5090.default_efficiency == pytest.approx(round(derived, 2))
    assert get_gpu("RTX4090").default_efficiency == RTX4090_GUESS
    # the B200's 0.5 by the same rule would have been 0.757: well above the 0.5 it copied
    assert 0.5 * (CUBLAS_5090 / DATASHEET_5090) / (CUBLAS_B200 / DATASHEET_B200) == pytest.approx(
        0.757, abs=0.001
    )


def test_consumer_blackwell_is_fitted_and_banded_apart_from_the_b200() -> None:
    assert RTX5090.generation != B200.generation
    assert tier_of(RTX5090.generation) == tier_of(get_gpu("RTX4090").generation) == "nvidia-ws"
    band = band_for(RTX5090, "bf16", "generic", PerfAssumptions())
    assert band.basis != band_for(B200, "bf16", "generic", PerfAssumptions()).basis


def test_one_micro_batch_on_the_5090_takes_the_b200s_time_times_the_effective_peak_ratio() -> None:
    # un-fitted, flash attention (no kernel fraction for either generation), same model and
    # micro-batch: same FLOPs and size factor, so compute time ∝ 1 / (peak × efficiency):
    # B200 / 5090 = (209.5 × 0.79) / (2250 × 0.5) = 165.51 / 1125 = 0.14712
    a = PerfAssumptions(use_fitted=False)
    spec = ModelSpec(layers=28, hidden=2048, heads=16, kv_heads=8, ffn=6144, vocab=151936)
    setup = TrainingSetup(seq_len=4096, precision="bf16")
    layout = Layout(micro_batch=2)
    times = {
        g.gpu_id: DecoderStepModel(spec, setup, g, a).microbatch_times_s(layout, Cluster(g, 1))[0]
        for g in (RTX5090, B200)
    }
    assert times["B200"] / times["RTX5090"] == pytest.approx(209.5 * 0.79 / (2250 * 0.5), rel=1e-9)
