"""Saved-tensor corrections of optimizer.model.activations, numbers derived by hand.

Llama-2-7B-like layer: h = 4096, ffn = 11008, MHA (q = kv = 4096). Bytes per token of one layer
relative to the full-training count (2 B per linear input: qkv-in h, o-in q, ffn-in h, down-in ffn).
"""

from optimizer.model.activations import extra_bytes_per_token
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack

H, F = 4096, 11008
SPEC = ModelSpec(name="l2-7b-like", layers=32, hidden=H, heads=32, kv_heads=32, ffn=F, vocab=32000)


def test_generic_full_training_is_the_korthikanti_count():
    assert extra_bytes_per_token(SPEC, "full", (), get_stack("generic"), 0.0, False) == (0.0, 0.0)


def test_litgpt_lora_qv_with_dropout():
    # qkv: one fused LoRA branch, dropout output 2 B + mask 1 B = 3 B instead of 2 B -> +h
    # o, ffn-in, down: frozen, input not saved -> -2h, -2h, -2ffn
    # eager fp32 RMSNorm (frozen weight): 2 norms x (4 - 2) B -> +4h; eager SwiGLU -> +2ffn
    out, inside = extra_bytes_per_token(SPEC, "lora", ("q", "v"), get_stack("litgpt"), 0.05, False)
    assert out == H - 2 * H + 4 * H
    assert inside == -2 * H - 2 * F + 2 * F


def test_litgpt_bnb_qlora_keeps_every_linear_input():
    # bitsandbytes MatMul4Bit keeps A: qkv 2 B input + 3 B dropout branch (+3h vs 2 B), others 0
    out, inside = extra_bytes_per_token(SPEC, "qlora", ("q", "v"), get_stack("litgpt"), 0.05, False)
    assert out == 3 * H + 4 * H
    assert inside == 2 * F


def test_torchtune_nf4_qlora_saves_no_base_input_and_compile_drops_eager_terms():
    # torchao linear_nf4 saves only the weight; q and v LoRA share the saved input (no dropout)
    out, inside = extra_bytes_per_token(SPEC, "qlora", ("q", "v"), get_stack("torchtune"), 0.0, True)
    assert out == -2 * H  # ffn input not saved; qkv input kept by the LoRA matmuls
    assert inside == -2 * H - 2 * F


def test_gqa_expansion_saves_kv_at_query_width():
    gqa = ModelSpec(name="gqa", layers=32, hidden=H, heads=32, kv_heads=8, ffn=F, vocab=32000)
    _, inside = extra_bytes_per_token(gqa, "full", (), get_stack("litgpt"), 0.0, False)
    assert inside == 2 * F + 4 * (H - 1024)


def test_fused_norm_and_swiglu_keep_only_their_16_bit_inputs():
    """Liger / flash-attn fused kernels in an eager HF model: the fp32 norm copies (2 norms x 6 B
    = 12h) and the saved silu output (2 ffn) go; the GQA expansion (an attention matter) stays."""
    gqa = ModelSpec(name="gqa", layers=32, hidden=H, heads=32, kv_heads=8, ffn=F, vocab=32000)
    prof = get_stack("hf-trainer")
    assert extra_bytes_per_token(gqa, "full", (), prof, 0.0, False) == (12 * H, 2 * F + 4 * (H - 1024))
    assert extra_bytes_per_token(gqa, "full", (), prof, 0.0, False, fused=True) == (0.0, 4 * (H - 1024))
