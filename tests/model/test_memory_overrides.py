"""Per-run overrides of training memory (TrainingSetup.fp32_master, offload for adapters,
activation offloading), expected bytes by hand."""

from optimizer.model.memory import GIB, training_memory
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec

SPEC = ModelSpec(name="m", layers=8, hidden=1024, heads=8, kv_heads=8, ffn=2816, vocab=32000)
A = PerfAssumptions(use_fitted=False)


def test_pure_bf16_without_amp_keeps_8_bytes_per_param():
    # bf16 params + bf16 grads + torch AdamW moments in the param dtype: 2 + 2 + 4 B
    m = training_memory(SPEC, TrainingSetup(seq_len=128, fp32_master=False), Layout(), A)
    n = SPEC.params()
    assert abs(m.weights * GIB - 2 * n) < 1
    assert abs(m.gradients * GIB - 2 * n) < 1
    assert abs(m.optimizer * GIB - 4 * n) < 1


def test_adapter_with_zero3_param_offload_keeps_prefetched_layers_only():
    setup = TrainingSetup(
        seq_len=128,
        method="lora",
        lora_rank=8,
        lora_targets=("q", "v"),
        offload_params=True,
        offload_optimizer=True,
    )
    m = training_memory(SPEC, setup, Layout(zero_stage=3), A)
    adapters = SPEC.layers * 2 * 8 * (1024 + 1024)  # r·(d_in + d_out) for q and v
    expected = 2 * SPEC.layer_params() * 2 + adapters * 2  # 2 gathered layers + bf16 adapters
    assert abs(m.weights * GIB - expected) < 1


def test_activation_offloading_keeps_two_checkpointed_layers():
    base = TrainingSetup(seq_len=128, stack="torchtune")
    off = TrainingSetup(seq_len=128, stack="torchtune", offload_activations=True)
    lay = Layout(checkpointing="full")
    full, kept = training_memory(SPEC, base, lay, A), training_memory(SPEC, off, lay, A)
    layer_input = 2 * 128 * 1024  # full recompute keeps the 16-bit layer input (2·s·b·h)
    assert abs((full.activations - kept.activations) * GIB - (8 - 2) * layer_input) < 1


def test_fused_kernels_drop_the_eager_norm_and_swiglu_bytes():
    # hf-trainer (eager transformers Llama): 2 RMSNorms keep fp32 input + fp32 normalised
    # (6 B more than the 2 B count, each) and SwiGLU keeps silu's output (2 B × ffn); fused
    # kernels save 16-bit inputs only: per token per layer 12·h + 2·ffn bytes fewer (MHA here)
    seq, micro = 128, 2
    plain = TrainingSetup(seq_len=seq, stack="hf-trainer")
    fused = TrainingSetup(seq_len=seq, stack="hf-trainer", fused_kernels=True)
    lay = Layout(micro_batch=micro)
    before, after = training_memory(SPEC, plain, lay, A), training_memory(SPEC, fused, lay, A)
    saved = SPEC.layers * seq * micro * (12 * 1024 + 2 * 2816)
    assert before.activation_factor == after.activation_factor
    factor = before.activation_factor or 1.0
    assert abs((before.activations - after.activations) * GIB - factor * saved) < 1


def test_job_file_fused_kernels_reach_the_setup():
    from optimizer.inputs.jobs.train import Workload  # noqa: PLC0415 - lazy: one test needs it

    w = Workload(kind="finetune", tokens=1e6, seq_len=2048, global_batch=8, fused_kernels=True)
    assert w.setup().fused_kernels is True and w.setup().loss_kernel == "liger"
    assert Workload(kind="finetune", tokens=1e6, seq_len=2048, global_batch=8).setup().fused_kernels is False


def test_liger_fused_linear_cross_entropy_holds_one_chunk_of_logits():
    # Liger: chunk = next_power_of_2(cdiv(BT, cdiv(V, H))); BT = 128 × 2 = 256 tokens, V = 32,000,
    # H = 1,024: cdiv(V, H) = 32, cdiv(256, 32) = 8 -> 8 tokens' logits instead of 256
    from optimizer.model.memory import logits_tokens  # noqa: PLC0415 - lazy: one test needs it

    lay = Layout(micro_batch=2)
    plain = TrainingSetup(seq_len=128, stack="hf-trainer")
    liger = TrainingSetup(seq_len=128, stack="hf-trainer", fused_kernels=True, loss_kernel="liger")
    assert logits_tokens(SPEC, plain, lay) == 256
    assert logits_tokens(SPEC, liger, lay) == 8
    # Liger's own example (fused_linear_cross_entropy.py): BT 16,384, V 32,000, H 4,096 -> 2,048
    big = ModelSpec(name="b", layers=2, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000)
    assert logits_tokens(big, TrainingSetup(seq_len=4096, loss_kernel="liger"), Layout(micro_batch=4)) == 2048
