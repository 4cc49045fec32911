"""Parameter counts from the shape against the published totals (within 1%)."""

from pathlib import Path

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.models import load_hf_config, load_model
from optimizer.model.presets import PRESETS, get_preset
from optimizer.model.spec import ModelSpec

DATA = Path(__file__).parent / "data"

# published totals: model cards / papers (Touvron et al. 2023; Meta Llama 3 model card;
# Jiang et al. 2023/2024; Brown et al. 2020; Devlin et al. 2019)
PUBLISHED = [
    ("llama-2-7b", 6.74e9, None),
    ("llama-2-13b", 13.0e9, None),
    ("llama-2-70b", 69.0e9, None),
    ("llama-3-8b", 8.03e9, None),
    ("llama-3-70b", 70.6e9, None),
    ("mistral-7b", 7.24e9, None),
    ("mixtral-8x7b", 46.7e9, 12.9e9),
    ("gpt3-175b", 175e9, None),
    ("bert-base", 110e6, None),
    ("gpt2", 124e6, None),
    ("llama-3.1-405b", 405e9, None),
    ("qwen2.5-7b", 7.61e9, None),
]


@pytest.mark.parametrize(("name", "total", "active"), PUBLISHED)
def test_param_counts_within_one_percent(name: str, total: float, active: float | None) -> None:
    spec = PRESETS[name]
    assert spec.params() == pytest.approx(total, rel=0.01)
    if active is not None:
        assert spec.active_params() == pytest.approx(active, rel=0.01)
    else:
        assert spec.active_params() == spec.params()


def test_llama2_7b_exact_count_by_hand() -> None:
    # embeddings 32000·4096 ×2 (untied head) + 32 layers × (4·4096² + 3·4096·11008 + 2·4096)
    # + final norm 4096 = 262,144,000 + 32 × 202,383,360 + 4,096 = 6,738,415,616
    assert PRESETS["llama-2-7b"].params() == 6_738_415_616


def test_gqa_shrinks_kv_projections() -> None:
    spec = PRESETS["llama-2-70b"]
    assert spec.kv_dim == 8 * 128 and spec.q_dim == 8192
    # attention: q 8192², k and v 8192·1024 each, o 8192²
    assert spec.attention_params() == 2 * 8192 * 8192 + 2 * 8192 * 1024


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("llama2_7b_config.json", 6_738_415_616),
        ("mixtral_config.json", 46_702_792_704),
        ("qwen2_7b_config.json", PRESETS["qwen2.5-7b"].params()),
        ("gpt2_config.json", 124_439_808),  # GPT-2 small, published 124M
        ("pythia_1b_config.json", 1_011_781_632),  # EleutherAI Pythia-1B: 1,011,781,632
        ("bert_base_config.json", 109_482_240),  # bert-base-uncased: 109,482,240 (BertModel)
    ],
)
def test_hf_config_loader(file: str, expected: int) -> None:
    spec = load_hf_config(DATA / file)
    assert spec.params() == expected


def test_hf_config_mixtral_active() -> None:
    spec = load_model(str(DATA / "mixtral_config.json"))
    assert spec.is_moe and spec.moe_active == 2
    assert spec.active_params() == pytest.approx(12.9e9, rel=0.01)


@pytest.mark.parametrize(
    ("file", "phrase"),
    [
        ("malformed.json", "not valid JSON"),
        ("missing_field.json", "num_hidden_layers"),
        ("negative_size.json", "hidden_size"),
        ("unknown_type.json", "model_type"),
        ("does_not_exist.json", "not found"),
    ],
)
def test_bad_config_files(file: str, phrase: str) -> None:
    with pytest.raises(ConfigError, match=phrase):
        load_hf_config(DATA / file)


def test_unknown_preset_suggests() -> None:
    with pytest.raises(ConfigError, match="did you mean 'llama-2-7b'"):
        get_preset("llama2-7b")


def test_shape_validation() -> None:
    with pytest.raises(ValueError, match="kv_heads"):
        ModelSpec(layers=2, hidden=64, heads=8, kv_heads=3, ffn=128, vocab=100)
    with pytest.raises(ValueError):
        ModelSpec(layers=0, hidden=64, heads=8, ffn=128, vocab=100)
