"""Serving launch lines run the plan's replica: its KV-cache precision, its batch, its KV pool,
and no request-length cap at the buckets' mean (each rule cited in report/export/launchers.py)."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from export_cases import SERVE

from optimizer.errors import ConfigError
from optimizer.report.export.launchers import serve_command, serve_notes

#: one deployment of the chatbot example (mistral-7b fp16 on RTX 3090s, batch 32, tp 1)
RESULT = SERVE["serve_mistral7b_chatbot"]
DEPLOYMENT = RESULT["plan"]["deployments"][0]


def _words(stack: str, **job: Any) -> list[str]:
    d = {**DEPLOYMENT, "replicas": DEPLOYMENT["instances"]}  # one replica per instance: any engine
    return shlex.split(serve_command(d, {**RESULT["job"], "stack": stack, **job}))


def _flag(words: list[str], name: str) -> str:
    return words[words.index(name) + 1]


def test_no_engine_caps_requests_at_the_buckets_mean_length() -> None:
    """vLLM refuses a prompt + max_tokens above --max-model-len and TGI above --max-total-tokens:
    at the buckets' mean (768 tokens here) every longer request would fail."""
    assert RESULT["job"]["buckets"]  # mean lengths, the plan's only figures
    for stack, cap in (
        ("vllm", "--max-model-len"),
        ("tgi", "--max-total-tokens"),
        ("tensorrt-llm", "--max_seq_len"),
    ):
        assert cap not in _words(stack), stack
    assert not any("context_window_size" in w for w in _words("mlc-llm"))
    assert "request length: the engine's own limit (the model's context)" in serve_notes(
        DEPLOYMENT, RESULT["job"]
    )


def test_an_fp8_kv_cache_is_switched_on_where_the_plan_counts_it() -> None:
    """vLLM's cache_dtype "auto" and TGI's unset --kv-cache-dtype keep 16-bit K/V: twice the
    bytes per token of the fp8 cache the plan sized its batch with."""
    assert _flag(_words("vllm", kv_cache_precision="fp8"), "--kv-cache-dtype") == "fp8"
    assert _flag(_words("tgi", kv_cache_precision="fp8"), "--kv-cache-dtype") == "fp8_e4m3fn"
    assert "--kv-cache-dtype" not in _words("vllm", kv_cache_precision="fp16")
    with pytest.raises(ConfigError, match="int8 KV cache"):
        _words("vllm", kv_cache_precision="int8")
    with pytest.raises(ConfigError, match="fp8 KV cache.*not for tensorrt-llm"):
        _words("tensorrt-llm", kv_cache_precision="fp8")


def test_engines_hold_the_planned_batch_and_kv_pool() -> None:
    tgi = _words("tgi")
    assert _flag(tgi, "--max-batch-size") == str(DEPLOYMENT["batch"])
    # arrivals beyond --max-concurrent-requests get HTTP 429: never below TGI's default 128
    assert int(_flag(tgi, "--max-concurrent-requests")) >= max(128, DEPLOYMENT["batch"])
    trt = _words("tensorrt-llm")
    assert float(_flag(trt, "--kv_cache_free_gpu_memory_fraction")) == 0.95  # stacks.toml, not 0.9
    mlc = _words("mlc-llm")
    assert _flag(mlc, "--mode") == "server"  # "local" holds one context window in all


def test_vllm_fp8_weights_need_compute_capability_8() -> None:
    turing = {**DEPLOYMENT, "replicas": DEPLOYMENT["instances"], "gpu": "T4", "gpu_generation": "turing"}
    job = {**RESULT["job"], "stack": "vllm"}
    with pytest.raises(ConfigError, match="vLLM refuses fp8 weights on T4"):
        serve_command({**turing, "quantization": "fp8", "precision": "fp8"}, job)
    ampere = {**turing, "gpu": "A10G", "gpu_generation": "ampere", "quantization": "fp8", "precision": "fp8"}
    assert "--quantization fp8" in serve_command(ampere, job)


def test_a_quantized_plan_says_which_checkpoint_it_needs() -> None:
    int4 = {**DEPLOYMENT, "quantization": "int4", "precision": "int4"}
    (note,) = [n for n in serve_notes(int4, RESULT["job"]) if n.startswith("weights:")]
    assert "checkpoint quantized to int4" in note and "4x the memory" in note


def test_model_id_is_the_checkpoint_an_engine_downloads() -> None:
    """vLLM, TGI and TensorRT-LLM load a Hugging Face repository by name; the preset name is not
    one. llama.cpp (a GGUF file) and MLC-LLM (a compiled model) keep it as the placeholder."""
    from optimizer.report.export.base_configs import serve_model_id

    assert RESULT["job"]["model"] == "mistral-7b"  # a serving result names its model so
    for stack in ("generic", "vllm", "tgi", "tensorrt-llm"):
        assert serve_model_id({**RESULT["job"], "stack": stack}) == "mistralai/Mistral-7B-v0.1"
    for stack in ("llama.cpp", "mlc-llm"):
        assert serve_model_id({**RESULT["job"], "stack": stack}) == "mistral-7b"
    own = {**RESULT["job"], "model": "/models/mine", "model_ref": "/models/mine"}
    assert serve_model_id(own) == "/models/mine"
