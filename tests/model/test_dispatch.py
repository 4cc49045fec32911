"""The host's floor under an eager training step (optimizer.model.dispatch): kernels counted by
hand from Hugging Face's eager Llama layer and peft's LoRA linear, × the host's time per kernel.

Llama layer, forward: 2 RMSNorms × 8 (to fp32, pow, mean, + eps, rsqrt, ×, to bf16, × weight)
= 16; q, k, v, o = 4; rotary on q and k = 2 × 5 = 10; attention = 2 (the fused kernel and the
output's transpose copy); gate, up, down = 3; act and × = 2; two residual adds = 2: 39.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.model.cluster import Cluster
from optimizer.model.dispatch import forward_kernels_per_layer, host_dispatch_s
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_model import DecoderStepModel

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from cases import build_cases, load_rows  # noqa: E402

H100 = get_gpu("H100-80GB")
A = PerfAssumptions(use_fitted=False)  # host_s_per_kernel: its 20 µs default
# Qwen3-0.6B's shape (config.json: 28 layers, hidden 1024, 16 heads, 8 KV heads, head_dim 128,
# intermediate 3072, vocab 151,936)
QWEN3_06B = ModelSpec(layers=28, hidden=1024, heads=16, kv_heads=8, head_dim=128, ffn=3072, vocab=151936)
LLAMA2_7B = ModelSpec(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000)
GPT2 = ModelSpec(
    layers=12, hidden=768, heads=12, kv_heads=12, ffn=3072, vocab=50257,
    ffn_kind="plain", norm="layernorm", learned_positions=1024,
)  # fmt: skip


def test_kernels_of_an_eager_llama_layer() -> None:
    assert forward_kernels_per_layer(LLAMA2_7B, TrainingSetup(seq_len=4096), "flash") == 39
    # LoRA on all seven linears: lora_A, lora_B, × scaling, + base = 4 each: 39 + 28
    lora = TrainingSetup(seq_len=4096, method="lora")
    assert forward_kernels_per_layer(LLAMA2_7B, lora, "flash") == 67
    # eager attention: Q·Kᵀ, scale, mask, softmax, ·V + the copy = 6 instead of 2
    assert forward_kernels_per_layer(LLAMA2_7B, TrainingSetup(seq_len=4096), "eager") == 43


def test_kernels_of_a_gpt2_layer_and_a_compiled_one() -> None:
    # 2 LayerNorms × 1, q/k/v/o 4, attention 2, fc1 + fc2 2, GELU 1, residuals 2, no rotary: 13;
    # LoRA finds no gate projection to adapt: 6 adapted linears × 4 = 24 more
    assert forward_kernels_per_layer(GPT2, TrainingSetup(seq_len=1024), "flash") == 13
    assert forward_kernels_per_layer(GPT2, TrainingSetup(seq_len=1024, method="lora"), "flash") == 37
    # compiled Llama: 7 matmuls + attention 2 + 4 fused pointwise groups
    assert forward_kernels_per_layer(LLAMA2_7B, TrainingSetup(seq_len=4096, compile=True), "flash") == 13
    # Megatron-Core's fused layer (Transformer Engine) launches as few: 32 layers × 3 passes × 13
    mcore = DecoderStepModel(LLAMA2_7B, TrainingSetup(seq_len=4096, stack="megatron-core"), H100, A)
    assert mcore.host_s(Layout(micro_batch=1)) == pytest.approx(32 * 3 * 13 * 20e-6)


def test_host_time_of_a_recomputed_lora_micro_batch() -> None:
    # 28 layers × (forward + recomputed forward + 2 × backward = 4 passes) × 67 kernels × 20 µs
    setup = TrainingSetup(seq_len=2048, method="lora")
    layout = Layout(micro_batch=2, grad_accum=4, checkpointing="full")
    assert host_dispatch_s(QWEN3_06B, setup, layout, "flash", A) == pytest.approx(28 * 4 * 67 * 20e-6)
    # pipeline stages launch only their own layers: ceil(28 / 3) = 10
    staged = Layout(micro_batch=2, pp=3, checkpointing="full")
    assert host_dispatch_s(QWEN3_06B, setup, staged, "flash", A) == pytest.approx(10 * 4 * 67 * 20e-6)


def test_an_engine_without_host_launches_has_no_floor() -> None:
    layout = Layout(micro_batch=2)
    engine = TrainingSetup(seq_len=2048, method="lora", host_launches=False)
    assert host_dispatch_s(QWEN3_06B, engine, layout, "flash", A) == 0.0
    off = PerfAssumptions(use_fitted=False, host_s_per_kernel=0.0)
    assert host_dispatch_s(QWEN3_06B, TrainingSetup(seq_len=2048), layout, "flash", off) == 0.0


def test_a_small_lora_step_runs_at_the_hosts_pace() -> None:
    # 4,096 tokens a micro-batch on an H100: far less GPU work than 0.15008 s of launches, so
    # the step is 4 micro-batches × 0.15008 s (+ the optimizer): at most 4,096 / 0.15008 tokens/s
    setup = TrainingSetup(seq_len=2048, method="lora")
    layout = Layout(micro_batch=2, grad_accum=4, checkpointing="full")
    step = DecoderStepModel(QWEN3_06B, setup, H100, A).step_time(layout, Cluster(H100, 1))
    host_mb = 28 * 4 * 67 * 20e-6
    gpu_mb = step.parts_s["compute"] / 4 + step.parts_s["tp"] / 4 + step.parts_s["pp"] / 4
    assert gpu_mb < host_mb
    assert step.parts_s["host_wait"] == pytest.approx(4 * (host_mb - gpu_mb))
    assert step.time_s / step.centre >= 4 * host_mb
    assert step.tokens_per_s * step.centre <= 4096 / host_mb


def test_a_7b_step_is_not_host_bound() -> None:
    # 32 layers × 3 passes × 39 kernels × 20 µs = 0.075 s of launches against ~0.3 s of GEMMs
    # (6 × 6.7e9 × 4,096 FLOPs at half of 989 TFLOPS) per micro-batch
    setup = TrainingSetup(seq_len=4096)
    step = DecoderStepModel(LLAMA2_7B, setup, H100, A).step_time(Layout(micro_batch=1), Cluster(H100, 1))
    assert step.parts_s["host_wait"] == 0.0


def test_validation_rows_of_engines_launch_no_kernels_from_python() -> None:
    # Surogate "is a C++/CUDA training engine" with use_cuda_graphs true; Unsloth runs eager
    rows = [r for r in load_rows(BENCH / "validation" / "aside10") if r.source_id.startswith("surogate")]
    cases, _ = build_cases(rows)
    by_engine = {c.row.case_id.split("-")[2]: c.train[0].host_launches for c in cases}
    assert by_engine == {"surogate": False, "unsloth": None}
