"""ModelSpec from a Hugging Face `config.json` (Llama/Mistral/Mixtral/Qwen2, GPT-2, GPT-NeoX, BERT).

Parsing only: the caller passes the decoded JSON dict (file reading lives in `optimizer.inputs.models`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

from optimizer.errors import ConfigError
from optimizer.model.spec import ModelSpec

__all__ = ["spec_from_hf_config", "SUPPORTED_MODEL_TYPES"]

_LLAMA_LIKE = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "qwen3"}
SUPPORTED_MODEL_TYPES = tuple(sorted(_LLAMA_LIKE | {"gpt2", "gpt_neox", "bert"}))


def _get(cfg: dict[str, Any], source: str, *keys: str, default: Any = ...) -> Any:
    """First present key's value; `default` if none (raises when no default)."""
    for key in keys:
        if cfg.get(key) is not None:
            return cfg[key]
    if default is ...:
        raise ConfigError(
            f"{source}: missing field {keys[0]!r} (also tried: {', '.join(keys[1:]) or 'none'})"
        )
    return default


def _positive_int(value: object, source: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value <= 0:
        raise ConfigError(f"{source}: field {key!r} must be a positive integer, got {value!r}")
    return int(value)


#: a config reader: the first of `keys` present as a positive integer, else `default`
#: (raises ConfigError naming the first key when none is present and there is no default)
_Num = Callable[..., Any]
#: the GPT-2 / GPT-NeoX / BERT block: a plain MLP, LayerNorm, biases everywhere
_PLAIN_BIASED: dict[str, Any] = dict(
    ffn_kind="plain", norm="layernorm", qkv_bias=True, out_bias=True, mlp_bias=True
)


def spec_from_hf_config(cfg: dict[str, Any], name: str = "custom", source: str = "config.json") -> ModelSpec:
    """Build a ModelSpec from a decoded Hugging Face config dict.

    Raises:
        ConfigError: unknown `model_type`, missing or non-positive sizes (names the key).
    """
    if not isinstance(cfg, dict):
        raise ConfigError(f"{source}: expected a JSON object at top level")
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigError(
            f"{source}: field 'model_type' is {model_type or 'missing'!r}; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )

    def num(*keys: str, default: Any = ...) -> Any:
        value = _get(cfg, source, *keys, default=default)
        return value if value is default else _positive_int(value, source, keys[0])

    if model_type in _LLAMA_LIKE:
        spec = _llama_like(cfg, num, name, model_type)
    elif model_type == "gpt2":
        spec = _gpt2(num, name)
    elif model_type == "gpt_neox":
        spec = _gpt_neox(cfg, num, name)
    else:
        spec = _bert(num, name)
    return spec.with_head("task") if _task_head(cfg) else spec


def _task_head(cfg: dict[str, Any]) -> bool:
    """Whether the config's architecture ends in a task head rather than an LM/MLM head
    (transformers class names: BertForSequenceClassification, BertForQuestionAnswering,
    ...ForTokenClassification / ForMultipleChoice: Linear(hidden, labels), no vocabulary)."""
    names = cfg.get("architectures") or []
    heads = (
        "ForSequenceClassification",
        "ForQuestionAnswering",
        "ForTokenClassification",
        "ForMultipleChoice",
    )
    return bool(names) and all(isinstance(n, str) and n.endswith(heads) for n in names)


def _llama_like(cfg: dict[str, Any], num: _Num, name: str, model_type: str) -> ModelSpec:
    """Llama, Mistral, Mixtral, Qwen2 (MoE) and their kin: gated MLP, RMSNorm, GQA."""
    hidden = num("hidden_size")
    heads = num("num_attention_heads")
    experts = num("num_local_experts", "num_experts", default=0)
    ffn = (
        num("moe_intermediate_size", default=0)
        if experts and model_type == "qwen2_moe"
        else num("intermediate_size")
    )
    return ModelSpec(
        name=name,
        layers=num("num_hidden_layers"),
        hidden=hidden,
        heads=heads,
        kv_heads=num("num_key_value_heads", default=heads),
        head_dim=num("head_dim", default=hidden // heads),
        ffn=ffn,
        ffn_kind="gated",
        vocab=num("vocab_size"),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        norm="rmsnorm",
        qkv_bias=model_type.startswith("qwen2") or bool(cfg.get("attention_bias", False)),
        moe_experts=experts,
        moe_active=num("num_experts_per_tok", default=0) if experts else 0,
        max_seq_len=num("max_position_embeddings", default=None),
    )


def _gpt2(num: _Num, name: str) -> ModelSpec:
    """GPT-2: learned positions, tied embeddings, its own key names (n_embd, n_layer, ...)."""
    hidden = num("n_embd", "hidden_size")
    return ModelSpec(
        name=name,
        layers=num("n_layer", "num_hidden_layers"),
        hidden=hidden,
        heads=num("n_head", "num_attention_heads"),
        ffn=num("n_inner", default=4 * hidden),
        vocab=num("vocab_size"),
        tied_embeddings=True,
        learned_positions=num("n_positions", "max_position_embeddings"),
        max_seq_len=num("n_positions", "max_position_embeddings"),
        **_PLAIN_BIASED,
    )


class _Sizes(TypedDict):
    layers: int
    hidden: int
    heads: int
    ffn: int
    vocab: int


def _common_sizes(num: _Num) -> _Sizes:
    """The sizes GPT-NeoX and BERT configs name alike (hidden_size read first, as every
    reader here does): layers, hidden, heads, ffn, vocab."""
    hidden = num("hidden_size")
    return _Sizes(
        layers=num("num_hidden_layers"),
        hidden=hidden,
        heads=num("num_attention_heads"),
        ffn=num("intermediate_size"),
        vocab=num("vocab_size"),
    )


def _gpt_neox(cfg: dict[str, Any], num: _Num, name: str) -> ModelSpec:
    """GPT-NeoX (Pythia): rotary positions, embeddings tied when the config says so."""
    return ModelSpec(
        name=name,
        **_common_sizes(num),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        max_seq_len=num("max_position_embeddings", default=None),
        **_PLAIN_BIASED,
    )


def _bert(num: _Num, name: str) -> ModelSpec:
    """BERT: learned positions, token-type rows and the pooler (hidden² + hidden)."""
    sizes = _common_sizes(num)
    hidden = sizes["hidden"]
    return ModelSpec(
        name=name,
        **sizes,
        tied_embeddings=True,
        learned_positions=num("max_position_embeddings"),
        extra_embedding_rows=num("type_vocab_size", default=2),
        extra_params=hidden * hidden + hidden,
        max_seq_len=num("max_position_embeddings"),
        **_PLAIN_BIASED,
    )
