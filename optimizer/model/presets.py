"""Preset model shapes, each from the model's published config.json or paper."""

from __future__ import annotations

from typing import Any

from optimizer.errors import ConfigError, did_you_mean
from optimizer.model.profile import SampleProfile
from optimizer.model.profile_presets import PROFILE_PRESETS
from optimizer.model.spec import ModelSpec

__all__ = ["PRESETS", "PROFILE_PRESETS", "get_preset", "preset_names"]

_LLAMA2: dict[str, Any] = dict(vocab=32000, ffn_kind="gated", norm="rmsnorm", max_seq_len=4096)
_LLAMA3: dict[str, Any] = dict(vocab=128256, ffn_kind="gated", norm="rmsnorm", kv_heads=8, max_seq_len=8192)
_GPT: dict[str, Any] = dict(
    ffn_kind="plain", norm="layernorm", qkv_bias=True, out_bias=True, mlp_bias=True, tied_embeddings=True
)

_MISTRAL_7B: dict[str, Any] = dict(
    layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, max_seq_len=32768
)


def _plain(name: str, layers: int, hidden: int, heads: int, **shape: Any) -> ModelSpec:
    """A GPT-2-style block (plain MLP of 4 × hidden, LayerNorm, biases, tied embeddings)."""
    return ModelSpec(name=name, layers=layers, hidden=hidden, heads=heads, ffn=4 * hidden, **shape, **_GPT)


def _bert(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    """A BERT encoder (Devlin et al. 2019; bert-*-uncased config.json): vocab 30522, 512 learned
    positions, 2 token types, the pooler (hidden² + hidden) as extra_params."""
    shape = dict(vocab=30522, learned_positions=512, extra_embedding_rows=2, max_seq_len=512)
    return _plain(name, layers, hidden, heads, extra_params=hidden * hidden + hidden, **shape)


def _vit16(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    """A ViT-*/16 at 224² (Dosovitskiy et al. 2021 Table 1): 196 patches + [CLS] = 197 tokens.
    Counted as a transformer: the patch projection (3·16·16 = 768 inputs) and [CLS] are
    embedding rows, the 1000-class head is the tied "vocabulary", its bias and the projection
    bias extra_params."""
    shape = dict(vocab=1000, learned_positions=197, extra_embedding_rows=3 * 16 * 16 + 1, max_seq_len=197)
    return _plain(name, layers, hidden, heads, extra_params=hidden + 1000, sample_tokens=197, **shape)


def _gpt(name: str, layers: int, hidden: int, heads: int, positions: int) -> ModelSpec:
    """A GPT-2/3 decoder: vocab 50257, `positions` learned positions."""
    return _plain(
        name, layers, hidden, heads, vocab=50257, learned_positions=positions, max_seq_len=positions
    )


PRESETS: dict[str, ModelSpec] = {
    s.name: s
    for s in (
        # BERT-base: bert-base-uncased config.json; BERT-large: Devlin et al. 2019 Sec. 3
        # (L=24, H=1024, A=16) / bert-large-uncased config.json
        _bert("bert-base", layers=12, hidden=768, heads=12),
        _bert("bert-large", layers=24, hidden=1024, heads=16),
        # ViT-B/16 and ViT-L/16: Dosovitskiy et al. 2021 Table 1 (layers, hidden, MLP, heads):
        # 86,567,656 and 304,326,632 parameters, torchvision's num_params exactly
        _vit16("vit-b16", layers=12, hidden=768, heads=12),
        _vit16("vit-l16", layers=24, hidden=1024, heads=16),
        # GPT-2 small: openai-community/gpt2 config.json
        _gpt("gpt2", layers=12, hidden=768, heads=12, positions=1024),
        # GPT-3 175B: Brown et al. 2020, Table 2.1 (n_vocab 50257, learned positions 2048)
        _gpt("gpt3-175b", layers=96, hidden=12288, heads=96, positions=2048),
        # Llama 2: meta-llama/Llama-2-*-hf config.json (Touvron et al. 2023)
        ModelSpec(name="llama-2-7b", layers=32, hidden=4096, heads=32, ffn=11008, **_LLAMA2),
        ModelSpec(name="llama-2-13b", layers=40, hidden=5120, heads=40, ffn=13824, **_LLAMA2),
        ModelSpec(name="llama-2-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, **_LLAMA2),
        # Llama 3 / 3.1: meta-llama/Meta-Llama-3-*, Llama-3.1-405B config.json
        ModelSpec(name="llama-3-8b", layers=32, hidden=4096, heads=32, ffn=14336, **_LLAMA3),
        ModelSpec(name="llama-3-70b", layers=80, hidden=8192, heads=64, ffn=28672, **_LLAMA3),
        ModelSpec(
            name="llama-3.1-405b",
            layers=126,
            hidden=16384,
            heads=128,
            ffn=53248,
            **{**_LLAMA3, "max_seq_len": 131072},
        ),
        # Mistral 7B v0.1: mistralai/Mistral-7B-v0.1 config.json (Jiang et al. 2023)
        ModelSpec(name="mistral-7b", **_MISTRAL_7B),
        # Mixtral 8x7B: mistralai/Mixtral-8x7B-v0.1 config.json (Jiang et al. 2024): Mistral
        # 7B's shape with 8 experts, 2 active
        ModelSpec(name="mixtral-8x7b", moe_experts=8, moe_active=2, **_MISTRAL_7B),
        # Qwen2.5-7B: Qwen/Qwen2.5-7B config.json (qkv bias, untied head)
        ModelSpec(
            name="qwen2.5-7b",
            layers=28,
            hidden=3584,
            heads=28,
            kv_heads=4,
            ffn=18944,
            vocab=152064,
            qkv_bias=True,
            max_seq_len=131072,
        ),
    )
}


def preset_names() -> list[str]:
    """Names of the bundled presets (transformer shapes, then per-sample profiles)."""
    return list(PRESETS) + list(PROFILE_PRESETS)


def get_preset(name: str, field: str = "model") -> ModelSpec | SampleProfile:
    """Preset by name (case-insensitive). Raises ConfigError listing close matches."""
    key = name.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    if key in PROFILE_PRESETS:
        return PROFILE_PRESETS[key]
    names = preset_names()
    raise ConfigError(
        f"{field}: unknown model {name!r}{did_you_mean(name, names)} "
        f"Presets: {', '.join(names)}; or pass the path of a Hugging Face config.json"
    )
