"""Issue 44's aside3 mechanisms, each against numbers worked out by hand: MoE routing buffers
and torchtitan op SAC on MoE blocks, a loss run in chunks, task heads (no vocabulary logits or
FLOPs), expert parallelism (experts' weights split over ep, their ZeRO shards over dp/ep, the
all-to-all exchange)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.hf_config import spec_from_hf_config
from optimizer.inputs.jobs.common import ModelRef
from optimizer.model.activations import op_sac_bytes_per_token, op_sac_recomputed_params
from optimizer.model.cluster import Cluster
from optimizer.model.comms import all_to_all_s
from optimizer.model.flops import forward_flops_per_token
from optimizer.model.memory import (
    TrainingMemoryModel,
    logits_bytes,
    moe_routing_bytes_per_token,
    params_per_gpu,
    sharded_params,
)
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_model import DecoderStepModel

RAW = PerfAssumptions(use_fitted=False)
# a tiny MoE: h 64, 4 heads of 16, 2 KV heads (kv_dim 32), 4 experts of ffn 32 (gated), top-2
TINY_MOE = ModelSpec(layers=2, hidden=64, heads=4, kv_heads=2, ffn=32, vocab=100, moe_experts=4, moe_active=2)


def test_moe_routing_buffers_per_token() -> None:
    # k permuted token copies + k expert outputs, 2 B × h each: 2·2·64·2 = 512; fp32 router
    # logits and scores, 4 + 4 B per expert: 8·4 = 32 -> 544 B per token and layer
    assert moe_routing_bytes_per_token(TINY_MOE) == pytest.approx(544.0)


def test_torchtitan_op_sac_on_an_moe_block_keeps_attention_only() -> None:
    # kept: q (64) and v (32) outputs + the SDPA output (q_dim 64), 2 B each; the block input
    # (64, 2 B) outside TP; the grouped expert mms and the router are recomputed
    outside, inside = op_sac_bytes_per_token(TINY_MOE, tp=1)
    assert inside == pytest.approx(2 * (64 + 32 + 64))
    assert outside == pytest.approx(2 * 64)
    # recomputed weights: k (64×32 = 2048), o (64×64 = 4096), router (64×4 = 256) and the
    # 2 active experts' gate, up, down (2 × 3 × 64 × 32 = 12,288)
    assert op_sac_recomputed_params(TINY_MOE) == 2048 + 4096 + 256 + 12_288


def test_chunked_loss_holds_one_chunk_and_task_heads_none() -> None:
    # 128 tokens × micro-batch 2 × vocab 100 × 4 B per logit = 102,400 B; in 4 chunks: 25,600
    a = PerfAssumptions(use_fitted=False, logits_bytes_per_value=4.0)
    layout = Layout(micro_batch=2)
    whole = logits_bytes(TINY_MOE, TrainingSetup(seq_len=128), layout, a)
    chunked = logits_bytes(TINY_MOE, TrainingSetup(seq_len=128, loss_chunks=4), layout, a)
    assert whole == pytest.approx(102_400.0)
    assert chunked == pytest.approx(25_600.0)
    task = ModelSpec(**{**TINY_MOE.model_dump(), "head": "task"})
    assert logits_bytes(task, TrainingSetup(seq_len=128), layout, a) == 0.0


def test_task_head_has_no_vocabulary_flops_or_weights() -> None:
    dense = ModelSpec(layers=1, hidden=64, heads=4, ffn=128, vocab=1000)
    task = ModelSpec(**{**dense.model_dump(), "head": "task"})
    assert forward_flops_per_token(dense, 16)[2] == pytest.approx(2 * 1000 * 64)
    assert forward_flops_per_token(task, 16)[2] == 0.0
    # the untied LM head (1000 × 64) leaves; the input embedding stays
    assert dense.params() - task.params() == 1000 * 64


def test_task_head_from_config_and_job_file() -> None:
    cfg = {
        "model_type": "bert",
        "architectures": ["BertForQuestionAnswering"],
        "num_hidden_layers": 2,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 256,
        "vocab_size": 1000,
        "max_position_embeddings": 128,
    }
    assert spec_from_hf_config(cfg).head == "task"
    assert spec_from_hf_config({**cfg, "architectures": ["BertForMaskedLM"]}).head == "lm"
    llama = {**cfg, "model_type": "llama", "architectures": ["LlamaForSequenceClassification"]}
    assert spec_from_hf_config(llama).logits_width == 0
    job_model = ModelRef(preset="bert-large", head="task").resolve()
    assert isinstance(job_model, ModelSpec)
    assert job_model.head == "task" and job_model.logits_width == 0


def test_expert_parallel_splits_expert_weights_and_their_shards() -> None:
    # per layer: attention 64·64 + 2·64·32 + 64·64 = 12,288; 4 experts × 3·64·32 = 24,576;
    # router 64·4 = 256; 2 RMSNorms 128 -> 37,248. Model: 2 layers + embedding 6,400 + LM
    # head 6,400 + final norm 64 = 87,360
    assert TINY_MOE.params() == 87_360
    # ep 2: each GPU holds half of each layer's experts: 87,360 − 2 × 12,288 = 62,784
    assert params_per_gpu(TINY_MOE, Layout(dp=4, ep=2)) == pytest.approx(62_784)
    # ZeRO shards experts over dp/ep = 2 GPUs, the rest over 4: in dp-shard units the held
    # experts count ep times: 62,784 + 24,576 × (2 − 1) = 87,360 = all parameters
    assert sharded_params(TINY_MOE, Layout(dp=4, ep=2)) == pytest.approx(87_360)
    setup = TrainingSetup(seq_len=64)
    mem = TrainingMemoryModel(TINY_MOE, setup, RAW)
    w1, g1, o1 = mem.states(Layout(dp=4, zero_stage=1))
    w2, g2, o2 = mem.states(Layout(dp=4, zero_stage=1, ep=2))
    assert w2 / w1 == pytest.approx(62_784 / 87_360)  # unsharded weights: the held share
    assert g2 / g1 == pytest.approx(62_784 / 87_360)
    assert o2 == pytest.approx(o1)  # distributed optimizer: every state still 1/4 per GPU


def test_all_to_all_time() -> None:
    # 8 GB per GPU over 8 GPUs, 4 in the node: 3/8 of it over NVLink at 100 GB/s (0.03 s) and
    # 4/8 over the NIC rail at 10 GB/s (0.4 s), at once -> 0.4 s
    assert all_to_all_s(8e9, 8, 4, 100.0, 10.0) == pytest.approx(0.4)
    assert all_to_all_s(8e9, 4, 8, 100.0, 10.0) == pytest.approx(3 / 4 * 8e9 / 100e9)
    assert all_to_all_s(8e9, 1, 8, 100.0, 10.0) == 0.0


def test_expert_parallel_exchange_in_the_step() -> None:
    # one node of 8 GPUs with 100 GB/s links (link efficiency 0.8 -> 80 GB/s), ep 4 inside it:
    # 4 all-to-alls per layer of 4096 tokens × k 2 × h 64 × 2 B = 1,048,576 B, 3/4 of it over
    # NVLink: 1,048,576 × 3/4 / 80e9 s + 3 latencies of 10 µs each, × 2 layers × 4
    gpu = replace(get_gpu("H100-80GB"), intra_node_link="nvlink", intra_node_bw_gb_s=100.0)
    setup = TrainingSetup(seq_len=4096)
    cluster = Cluster(gpu, 8, 1, 400.0)
    step = DecoderStepModel(TINY_MOE, setup, gpu, RAW)
    base = step.microbatch_times_s(Layout(dp=8), cluster)[1]
    with_ep = step.microbatch_times_s(Layout(dp=8, ep=4), cluster)[1]
    a2a = 1_048_576 * 3 / 4 / 80e9 + 3 * 10e-6
    assert with_ep - base == pytest.approx(2 * 4 * a2a)
