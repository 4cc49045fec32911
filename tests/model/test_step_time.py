"""Step-time model: FLOPs, collectives, bubble, monotonic properties, calibration."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.inputs.calibration import fit_efficiency
from optimizer.inputs.calibration_store import add_point, load_points
from optimizer.inputs.gpus import get_gpu
from optimizer.model.comms import ring_allgather_s, ring_allreduce_s
from optimizer.model.fitted import FittedConstants
from optimizer.model.flops import model_flops_per_token, training_flops_per_token
from optimizer.model.memory import training_memory
from optimizer.model.presets import PRESETS
from optimizer.model.setup import CHECKPOINTING, Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_time import Cluster, bubble_fraction, training_step_time

# GPT-3 175B shape without biases, to compare with Narayanan et al. 2021, eq. 3
GPT3 = ModelSpec(
    layers=96,
    hidden=12288,
    heads=96,
    ffn=4 * 12288,
    ffn_kind="plain",
    vocab=51200,
    norm="layernorm",
    tied_embeddings=True,
)


def test_flops_full_recompute_narayanan_eq3() -> None:
    s, l, h, V = 2048, 96, 12288, 51200  # noqa: E741 - the paper's symbols
    setup = TrainingSetup(seq_len=s)
    # F = 96·B·s·l·h²·(1 + s/6h + V/16lh) per iteration -> divide by B·s tokens
    per_token = 96 * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert training_flops_per_token(GPT3, setup, "full") == pytest.approx(per_token, rel=1e-12)


def test_flops_without_recompute_by_hand() -> None:
    s, l, h, V = 2048, 96, 12288, 51200  # noqa: E741 - the paper's symbols
    # no recompute: 3 passes of (24·h² + 4·s·h) per layer per token + 3 × 2·V·h for the head
    # = 72·l·h²·(1 + s/6h + V/12lh). (The issue text quotes V/16lh, which keeps the 96-variant's
    # head term; by the same derivation the 72-variant's head term is V/12lh.)
    per_token = 72 * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h))
    setup = TrainingSetup(seq_len=s)
    assert training_flops_per_token(GPT3, setup, "none") == pytest.approx(per_token, rel=1e-12)
    assert model_flops_per_token(GPT3, setup) == pytest.approx(per_token, rel=1e-12)


def test_moe_uses_active_params_and_lora_costs_4n() -> None:
    mix = PRESETS["mixtral-8x7b"]
    setup = TrainingSetup(seq_len=1)
    # with s = 1 attention is negligible: ≈ 6 × active matmul params
    assert model_flops_per_token(mix, setup) == pytest.approx(6 * 12.88e9, rel=0.02)
    lora = TrainingSetup(seq_len=1, method="lora", lora_rank=8, lora_targets=("q", "v"))
    spec = PRESETS["llama-2-7b"]
    # frozen base: forward + input-gradient backward = 2 × forward. Forward per token: layer
    # matmuls 2 × 32 × (4·4096² + 3·4096·11008 = 202,375,168) + LM head 2 × 131,072,000 +
    # attention 4·s·4096·32 with s = 1 -> 2 × (6,607,077,376 + 262,144); adapters 6 × 4,194,304
    expected = 2 * 2 * (6_607_077_376 + 262_144) + 6 * 4_194_304
    assert expected == 26_454_523_904
    assert model_flops_per_token(spec, lora) == expected


def test_ring_allreduce_by_hand() -> None:
    # 1 GB over 8 GPUs at 100 GB/s: 2 × 7/8 × 1e9 / 1e11 = 0.0175 s
    assert ring_allreduce_s(1e9, 8, 100.0) == pytest.approx(0.0175)
    assert ring_allgather_s(1e9, 8, 100.0) == pytest.approx(0.00875)
    assert ring_allreduce_s(1e9, 1, 100.0) == 0.0


def test_bubble_fraction() -> None:
    assert bubble_fraction(4, 8) == pytest.approx(3 / 11)  # (p−1)/(m+p−1)
    assert bubble_fraction(1, 8) == 0.0


def test_compute_time_by_hand() -> None:
    # one A100 (312 TFLOPS bf16), efficiency forced to 0.5, GPT-2 small, 1 × 1024 tokens:
    # FLOPs/token = 3 × (2·12·(12·768²) + 4·1024·768·12 + 2·50257·768) = 3 × 284,491,776 ...
    spec = PRESETS["gpt2"]
    setup = TrainingSetup(seq_len=1024)
    flops_tok = 3 * (2 * 12 * 12 * 768**2 + 4 * 1024 * 768 * 12 + 2 * 50257 * 768)
    a = PerfAssumptions(efficiency=0.5, use_fitted=False)
    step = training_step_time(spec, setup, Layout(micro_batch=1), Cluster(get_gpu("a100"), 1), a)
    size = 768 / (768 + 1000) / (1 + 256 / 1024)  # the stated small-matmul factor
    assert step.parts_s["compute"] == pytest.approx(flops_tok * 1024 / (312e12 * 0.5 * size))


def test_fitted_shape_scales_the_half_efficiency_width() -> None:
    # a fitted shape term c makes the size curve h/(h + 1000·e^c): with c = ln 0.5 the
    # half-efficiency width is 500, so GPT-2 small (h = 768) runs at 768/1268 instead of 768/1768
    spec = PRESETS["gpt2"]
    setup = TrainingSetup(seq_len=1024)
    flops_tok = 3 * (2 * 12 * 12 * 768**2 + 4 * 1024 * 768 * 12 + 2 * 50257 * 768)
    fit = FittedConstants(shape={"all": math.log(0.5)})
    a = PerfAssumptions(efficiency=0.5, fitted=fit)
    step = training_step_time(spec, setup, Layout(micro_batch=1), Cluster(get_gpu("a100"), 1), a)
    size = 768 / (768 + 500) / (1 + 256 / 1024)
    assert step.parts_s["compute"] == pytest.approx(flops_tok * 1024 / (312e12 * 0.5 * size))


def test_slow_network_makes_data_parallel_communication_dominate() -> None:
    spec, setup = PRESETS["llama-2-7b"], TrainingSetup(seq_len=4096)
    layout = Layout(dp=64, micro_batch=1, grad_accum=16, zero_stage=2, checkpointing="full")
    fast = training_step_time(spec, setup, layout, Cluster(get_gpu("h100"), 8, 8, 3200.0))
    slow = training_step_time(
        spec,
        setup,
        Layout(dp=64, micro_batch=1, grad_accum=16, zero_stage=2, checkpointing="full"),
        Cluster(get_gpu("h100"), 1, 64, 25.0),
    )
    # 13.5 GB of bf16 gradients over 25 Gbit/s Ethernet at 80% link efficiency:
    # 2·63/64·13.48e9/(3.125e9·0.8) ≈ 10.6 s, plus 2·63 launches × 10 µs latency
    assert slow.parts_s["dp_total"] == pytest.approx(
        2 * 63 / 64 * spec.params() * 2 / (25 / 8 * 0.8 * 1e9) + 2 * 63 * 10e-6, rel=1e-9
    )
    assert slow.time_s > fast.time_s


LAYOUT = st.builds(
    lambda mb, ck, z: (mb, ck, z),
    st.sampled_from([1, 2, 4]),
    st.sampled_from(CHECKPOINTING),
    st.sampled_from([0, 1, 2, 3]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["gpt2", "llama-2-7b", "mistral-7b"]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from(["a100", "h100", "4090", "l40s"]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from([0, 1, 2]),
)
def test_more_gpus_in_a_node_never_lower_tokens_per_s(model, mb, gpu, dp, zero) -> None:
    # ZeRO-3 is left out on purpose: it re-gathers the weights every micro-batch, so over a
    # PCIe link two GPUs can be slower than one (a real effect, Rajbhandari et al. 2020 §7)
    spec, setup = PRESETS[model], TrainingSetup(seq_len=1024)
    g = get_gpu(gpu)
    batch = 64
    small = Layout(dp=dp, micro_batch=mb, grad_accum=batch // (dp * mb), zero_stage=zero)
    large = Layout(dp=2 * dp, micro_batch=mb, grad_accum=batch // (2 * dp * mb), zero_stage=zero)
    t_small = training_step_time(spec, setup, small, Cluster(g, 8, 1))
    t_large = training_step_time(spec, setup, large, Cluster(g, 8, 1))
    assert t_large.tokens_per_s >= t_small.tokens_per_s


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["llama-2-7b", "llama-2-13b"]), LAYOUT, st.floats(10, 3200), st.floats(1.01, 10))
def test_more_bandwidth_never_slows_a_step(model, layout, gbps, factor) -> None:
    mb, ckpt, zero = layout
    spec, setup = PRESETS[model], TrainingSetup(seq_len=2048)
    lay = Layout(dp=16, micro_batch=mb, grad_accum=4, zero_stage=zero, checkpointing=ckpt)
    g = get_gpu("a100")
    slow = training_step_time(spec, setup, lay, Cluster(g, 8, 2, gbps))
    fast = training_step_time(spec, setup, lay, Cluster(g, 8, 2, gbps * factor))
    assert fast.time_s <= slow.time_s


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["gpt2", "llama-2-7b", "mixtral-8x7b"]),
    st.sampled_from([1, 2, 8]),
    st.sampled_from([1, 2]),
    st.sampled_from([1, 4]),
    st.sampled_from(["flash", "eager"]),
)
def test_more_checkpointing_never_raises_memory_or_speeds_up(model, mb, tp, pp, attention) -> None:
    spec, setup = PRESETS[model], TrainingSetup(seq_len=2048, attention=attention)
    cluster = Cluster(get_gpu("h100"), 8, 1)
    mems, times = [], []
    for ckpt in CHECKPOINTING:  # none < selective < full
        lay = Layout(dp=8 // (tp * pp) or 1, tp=tp, pp=pp, micro_batch=mb, grad_accum=8, checkpointing=ckpt)
        mems.append(training_memory(spec, setup, lay).total)
        times.append(training_step_time(spec, setup, lay, cluster).time_s)
    assert mems[0] >= mems[1] >= mems[2]
    assert times[0] <= times[1] <= times[2]


def test_calibration_reproduces_the_measured_point(tmp_path) -> None:
    spec, setup = PRESETS["llama-2-7b"], TrainingSetup(seq_len=4096)
    g = get_gpu("a100")
    layout = Layout(dp=8, micro_batch=2, grad_accum=8, zero_stage=1, checkpointing="selective")
    cluster = Cluster(g, 8, 1, 400.0)
    measured = 30.0  # seconds per step a user measured
    eff = fit_efficiency(spec, setup, layout, cluster, measured)
    calibrated = PerfAssumptions(calibrated={(g.gpu_id, "bf16"): eff})
    step = training_step_time(spec, setup, layout, cluster, calibrated)
    assert step.time_s == pytest.approx(measured, rel=1e-9)
    assert step.calibrated
    # another configuration on the same GPU: its compute scales by default/calibrated efficiency
    other = Layout(dp=8, micro_batch=1, grad_accum=16, zero_stage=3, checkpointing="full")
    before = training_step_time(spec, setup, other, cluster)
    after = training_step_time(spec, setup, other, cluster, calibrated)
    assert after.parts_s["compute"] == pytest.approx(
        before.parts_s["compute"] * before.efficiency / after.efficiency, rel=1e-9
    )
    # stored atomically and read back
    record = {"gpu": g.gpu_id, "precision": "bf16", "stack": "generic", "efficiency": eff}
    add_point({**record, "size_factor": 0.8, "measured": {"step_time_s": measured}}, tmp_path / "c.json")
    (point,) = load_points(tmp_path / "c.json")
    assert (point["gpu"], point["efficiency"], point["size_factor"]) == (g.gpu_id, eff, 0.8)


def test_calibration_rejects_impossible_measurement() -> None:
    from optimizer.errors import ConfigError

    spec, setup = PRESETS["llama-2-7b"], TrainingSetup(seq_len=4096)
    with pytest.raises(ConfigError, match="faster than the model allows"):
        fit_efficiency(spec, setup, Layout(dp=8), Cluster(get_gpu("a100"), 8), 0.001)


def test_explicit_efficiency_override_scales_compute() -> None:
    spec, setup, cluster = PRESETS["gpt2"], TrainingSetup(seq_len=1024), Cluster(get_gpu("a100"), 1)
    a = training_step_time(spec, setup, Layout(), cluster, PerfAssumptions(efficiency=0.6))
    b = training_step_time(spec, setup, Layout(), cluster, PerfAssumptions(efficiency=0.3))
    assert b.parts_s["compute"] == pytest.approx(2 * a.parts_s["compute"])
