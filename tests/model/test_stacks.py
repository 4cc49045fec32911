"""Stack profiles, fabric defaults, fitted constants and the mechanisms they switch.

Expected numbers come from the sources named on each test (Megatron docs, papers, NVIDIA
user guides), never from the code's output.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import get_gpu
from optimizer.model.efficiency import attention_efficiency
from optimizer.model.fabric import default_fabric, default_inter_node_gbps
from optimizer.model.fitted import (
    FittedConstants,
    load_fitted,
    train_features,
)
from optimizer.model.memory import (
    activation_bytes_per_layer,
    interleave_factor,
    kv_cache_bytes_per_token,
    kv_tokens_held,
    model_state_bytes_per_param,
    training_memory,
)
from optimizer.model.presets import PRESETS
from optimizer.model.serving import serving_max_batch
from optimizer.model.setup import Layout, PerfAssumptions, ServeSetup, TrainingSetup
from optimizer.model.stacks import get_stack, stack_names
from optimizer.model.step_time import Cluster, training_step_time
from optimizer.units import GIB

RAW = PerfAssumptions(use_fitted=False, zero3_prefetch_layers=0)
ISSUE_STACKS = (
    "megatron-core",
    "megatron-deepspeed",
    "deepspeed",
    "fsdp",
    "torchtitan",
    "llm-foundry",
    "hf-trainer",
    "torchtune",
    "unsloth",
    "vllm",
    "tensorrt-llm",
    "tgi",
    "llama.cpp",
)


def test_every_stack_of_the_issue_has_a_profile() -> None:
    assert set(ISSUE_STACKS) <= set(stack_names())
    assert get_stack("nemo").name == "megatron-core"  # NeMo runs on Megatron-Core


def test_every_number_in_the_profile_file_has_a_source_and_a_guess_flag() -> None:
    text = resources.files("optimizer.model").joinpath("data/stacks.toml").read_text("utf-8")
    for stack, row in tomllib.loads(text).items():
        for key, value in row.items():
            if key in ("kind", "description"):
                continue
            assert set(value) == {"value", "guess", "source"}, (stack, key)
            assert value["source"].strip() and isinstance(value["guess"], bool), (stack, key)


def test_unknown_stack_names_the_allowed_ones() -> None:
    with pytest.raises(ConfigError, match="did you mean 'vllm'"):
        get_stack("vlm")


def test_bloom_era_megatron_deepspeed_has_no_sequence_parallelism_and_eager_attention() -> None:
    # bigscience tr11-176B-ml README: no sequence parallelism in that fork; 2022 fused softmax
    prof = get_stack("megatron-deepspeed")
    assert prof.sequence_parallel is False and prof.attention == "eager"
    spec = PRESETS["gpt3-175b"]
    layout = Layout(tp=4, micro_batch=1)
    with_sp = activation_bytes_per_layer(spec, TrainingSetup(seq_len=2048, stack="megatron-core"), layout)
    no_sp = activation_bytes_per_layer(spec, TrainingSetup(seq_len=2048, stack="megatron-deepspeed"), layout)
    assert no_sp > with_sp  # replicated layer-norm/dropout activations + the a·s² scores


def test_megatron_distributed_optimizer_is_6_plus_12_over_d_bytes_per_param() -> None:
    # Megatron-LM docs/source/api-guide/dist_optimizer.md: "bf16 param, fp32 grads":
    # 18 bytes/param without, 6 + 12/d with the distributed optimizer
    d = 8
    w, g, o = model_state_bytes_per_param("bf16", "adamw", fp32_grad_buffer=True)
    assert w + g + o == pytest.approx(18)
    assert w + g + o / d == pytest.approx(6 + 12 / d)


def test_nemo_performance_recipes_reduce_bf16_grads_and_keep_fp8_params() -> None:
    # NeMo scripts/llm/performance: grad_reduce_in_fp32 = False ("bf16 grad dtype"):
    # 2 + 2 + 12/d with the distributed optimizer; fp8 runs (bf16_with_fp8_mixed,
    # fp8_param_gather): 1 B fp8 weight + 1 B fp8 transpose, bf16 grads -> 4 + 12/d as well
    spec, d = PRESETS["llama-2-7b"], 8
    for precision in ("bf16", "fp8"):
        setup = TrainingSetup(seq_len=128, precision=precision, stack="megatron-core")
        mem = training_memory(spec, setup, Layout(dp=d, zero_stage=1), RAW)
        per_param = (mem.weights + mem.gradients + mem.optimizer) * GIB / spec.params()
        assert per_param == pytest.approx(4 + 12 / d)
    # without fp8 parameters (no stack named): 16-bit weight + cached fp8 copy = 3 B
    generic = training_memory(spec, TrainingSetup(seq_len=128, precision="fp8"), Layout(), RAW)
    assert generic.weights * GIB / spec.params() == pytest.approx(3)


def test_transformer_engine_fp8_saves_gemm_inputs_in_fp8() -> None:
    # Korthikanti et al. 2022 Table 2 count (no dropout, flash attention, t = 1) of one layer of
    # llama-2-7b (h = 4096, ffn = 11008, MHA): 2 norm inputs + QKV input + FFN input = 8 sbh,
    # Q, K, V, attention output = 8 sbh, gate, up, act·up = 6·ffn·sb; with TE fp8 the QKV,
    # FC1 and FC2 inputs are saved in fp8 (-1 B each) and the attention output once more in
    # fp8 (+1 B): per token 16·4096 + 6·11008 - 4096 - 4096 - 11008 + 4096 = 116,480 B
    spec, s = PRESETS["llama-2-7b"], 1024
    layout = Layout(micro_batch=1)
    bf16 = activation_bytes_per_layer(spec, TrainingSetup(seq_len=s, stack="megatron-core"), layout)
    fp8 = activation_bytes_per_layer(
        spec, TrainingSetup(seq_len=s, precision="fp8", stack="megatron-core"), layout
    )
    assert bf16 == pytest.approx(s * (16 * 4096 + 6 * 11008))
    assert fp8 == pytest.approx(s * 116_480)


def test_torchtune_bf16_adamw_keeps_8_bytes_per_param() -> None:
    # torchtune trains in bf16: weights 2 + grads 2 + AdamW m, v in bf16 2 + 2 (no fp32 master)
    spec = PRESETS["llama-2-7b"]
    mem = training_memory(spec, TrainingSetup(seq_len=128, stack="torchtune"), Layout(), RAW)
    assert (mem.weights + mem.gradients + mem.optimizer) * GIB / spec.params() == pytest.approx(8)


def test_reserved_and_device_memory_follow_the_stated_rule() -> None:
    # reserved = allocated × (1 + allocator cache); device = reserved + context (stacks.toml)
    prof = get_stack("fsdp")
    mem = training_memory(PRESETS["gpt2"], TrainingSetup(seq_len=1024, stack="fsdp"), Layout(), RAW)
    assert mem.reserved == pytest.approx(mem.total * (1 + prof.allocator_cache))
    assert mem.device == pytest.approx(mem.reserved + prof.context_gib)
    assert mem.fits(mem.device) and not mem.fits(mem.device - 0.01)


def test_interleaved_schedule_bubble_is_p_minus_1_over_v_m() -> None:
    # Narayanan et al. 2021 §2.2.2: bubble fraction (p − 1)/(v·m) of the ideal step
    spec, setup = PRESETS["llama-2-7b"], TrainingSetup(seq_len=2048)
    a = PerfAssumptions(use_fitted=False, pp_overlap=1.0, efficiency=0.5)
    cluster = Cluster(get_gpu("h100"), 8)
    for vp in (1, 2, 4):
        step = training_step_time(spec, setup, Layout(pp=4, vp=vp, grad_accum=8), cluster, a)
        assert step.bubble_s / step.parts_s["compute"] == pytest.approx(3 / (vp * 8))


def test_interleaved_activation_factor_korthikanti() -> None:
    # Korthikanti et al. 2022 §4.2.3: interleaving stores 1 + (p − 1)/(p·m) times more
    assert interleave_factor(Layout(pp=4, vp=2)) == pytest.approx(1 + 3 / 8)
    assert interleave_factor(Layout(pp=4, vp=1)) == 1.0


def test_context_parallel_gpu_holds_activations_of_s_over_cp_tokens() -> None:
    # Megatron-Core context parallelism: each GPU processes s/cp tokens of every sequence
    spec = PRESETS["llama-3-8b"]
    split = activation_bytes_per_layer(spec, TrainingSetup(seq_len=8192), Layout(cp=4))
    short = activation_bytes_per_layer(spec, TrainingSetup(seq_len=2048), Layout())
    assert split == pytest.approx(short)


def test_fp8_speeds_up_the_gemms_only() -> None:
    # Transformer Engine fp8: GEMMs at the fp8 peak, the attention core stays in bf16
    spec = PRESETS["llama-2-7b"]
    gpu, e, s = get_gpu("h100"), 0.5, 4096
    a = PerfAssumptions(use_fitted=False, efficiency=e, fp8_gemm_factor=0.8)
    step = training_step_time(
        spec, TrainingSetup(seq_len=s, precision="fp8"), Layout(micro_batch=1), Cluster(gpu, 1), a
    )
    attn = 3 * spec.layers * 4 * s * spec.q_dim  # 4·s·(a·d) per token and layer, ×3 for training
    matmul = 3 * (2 * spec.layers * spec.layer_matmul_params() + 2 * spec.vocab * spec.hidden)
    size = s / (s + 256) * spec.hidden / (spec.hidden + 1000)
    # the attention core runs at FlashAttention-2's 35% of the H100 16-bit peak (FA3 paper,
    # arXiv:2407.08608 abstract), below the 16-bit GEMM efficiency e·size/0.8 ≈ 0.6
    attn_eff = min(e * size / 0.8, 0.35)
    assert attn_eff == 0.35
    expected = s * (matmul / (1979e12 * e * size) + attn / (989e12 * attn_eff))
    assert step.parts_s["compute"] == pytest.approx(expected, rel=1e-9)


def test_attention_core_runs_at_the_published_kernel_fraction() -> None:
    # FA2 reaches 35% of the H100 peak (Shah et al. 2024 abstract); the Hopper-native kernel of
    # Megatron-Core/TE (FA3 class) 0.60 (GUESS from FA3's 75% forward); never above the GEMMs
    h100, a100 = get_gpu("h100"), get_gpu("a100-80gb")
    assert attention_efficiency(h100, "fa2", 0.6) == 0.35
    assert attention_efficiency(h100, "fa3", 0.7) == 0.60
    assert attention_efficiency(h100, "fa3", 0.5) == 0.5
    assert attention_efficiency(a100, "fa2", 0.7) == 0.60  # FA2 paper: 50-73% of A100 peak
    assert get_stack("megatron-core").attention_kernel == "fa3"
    assert get_stack("torchtitan").attention_kernel == "fa2"
    # a long-sequence run is slower under FA2 than under the FA3-class kernel, same GEMMs
    spec = PRESETS["llama-3-8b"]
    a = PerfAssumptions(use_fitted=False, efficiency=0.7)
    times = [
        training_step_time(
            spec, TrainingSetup(seq_len=32768, stack=st), Layout(), Cluster(h100, 1), a
        ).compute_s
        for st in ("fsdp", "megatron-core")
    ]
    assert times[0] > times[1]


def test_fp8_kv_cache_is_one_byte_per_value() -> None:
    # KV cache = 2 × layers × kv_heads × head_dim × bytes: llama-2-7b 2·32·32·128 values/token
    spec = PRESETS["llama-2-7b"]
    assert kv_cache_bytes_per_token(spec, "fp8") == 2 * 32 * 32 * 128
    assert kv_cache_bytes_per_token(spec, "int8") == 2 * 32 * 32 * 128
    assert kv_cache_bytes_per_token(spec, "bf16") == 2 * 2 * 32 * 32 * 128


def test_paged_attention_holds_average_context_vllm_and_max_tensorrt_llm() -> None:
    # vLLM: blocks on demand -> prompt + output/2 on average + half a 16-token block;
    # TensorRT-LLM GUARANTEED_NO_EVICT reserves prompt + max output (+ half a 64-token block)
    vllm = ServeSetup(context=1024 + 512, output_tokens=512, stack="vllm")
    trt = ServeSetup(context=1024 + 512, output_tokens=512, stack="tensorrt-llm")
    assert kv_tokens_held(vllm) == 1024 + 256 + 8
    assert kv_tokens_held(trt) == 1024 + 512 + 32
    assert kv_tokens_held(ServeSetup(context=1536, output_tokens=512)) == 1536  # generic: max


def test_max_batch_respects_the_stack_scheduler_cap() -> None:
    spec, gpu = PRESETS["llama-2-7b"], get_gpu("h100")
    small = ServeSetup(weight_precision="fp16", context=256, output_tokens=128, stack="vllm")
    assert serving_max_batch(spec, small, gpu, 1, RAW) == 256  # vLLM max_num_seqs default
    one = ServeSetup(weight_precision="fp16", context=256, output_tokens=128, stack="llama.cpp")
    assert serving_max_batch(spec, one, gpu, 1, RAW) == 1  # llama-server --parallel 1
    huge = ServeSetup(weight_precision="fp16", context=4096, output_tokens=128, stack="vllm")
    fits = serving_max_batch(spec, huge, gpu, 1, RAW)
    # by hand: 0.9 × 80 GiB − 12.55 GiB weights ≈ 59 GiB for KV at 0.5 MiB/token × ~4040 tokens
    assert 25 <= fits <= 30


@pytest.mark.parametrize(
    ("gpu", "gbps"),
    [
        ("h100", 3200.0),
        ("b200", 3200.0),
        ("h200", 3200.0),
        ("a100", 1600.0),
        ("l4", 100.0),
        ("4090", 100.0),
        ("l40s", 100.0),
    ],
)
def test_default_fabric_per_gpu_class(gpu: str, gbps: float) -> None:
    # DGX H100/B200 user guides: 8 × 400 Gb/s; DGX A100: 8 × 200 Gb/s; PCIe boxes: 100 GbE
    assert default_inter_node_gbps(get_gpu(gpu)) == gbps
    assert f"{gbps:g} Gbit/s" in default_fabric(get_gpu(gpu)).assumption


def test_dgx_default_fabric_beats_commodity_ethernet_for_fsdp_on_8_nodes() -> None:
    # the issue's example: FSDP of an 8B on 8 H100 nodes is network-bound at 100 Gbit/s
    spec, setup, gpu = PRESETS["llama-3-8b"], TrainingSetup(seq_len=8192), get_gpu("h100")
    layout = Layout(dp=64, zero_stage=3, micro_batch=1, grad_accum=1)
    slow = training_step_time(spec, setup, layout, Cluster(gpu, 8, 8, 100.0), RAW)
    dgx = training_step_time(spec, setup, layout, Cluster(gpu, 8, 8, default_inter_node_gbps(gpu)), RAW)
    assert dgx.tokens_per_s > 1.5 * slow.tokens_per_s


def test_packaged_fit_loads_and_names_its_cases() -> None:
    fit = load_fitted()
    assert fit.meta["date"] and fit.meta["command"].startswith("python benchmarks/fit_constants")
    assert len(fit.meta["sources"]) >= 10 and fit.meta["cases"] == len(fit.meta["case_ids"])
    levels = {"all", "gen", "genprec", "stack", "cell", "method", "eager", "fused"}
    for table in (fit.train, fit.serve, fit.memory):
        assert all(k.split(":", 1)[0] in levels for k in table)
    for p10, p50, p90, cases, sources in fit.bands.values():
        assert 0 < p10 <= p50 <= p90 and cases >= 3 and 1 <= sources <= cases
    for mfu, runs, case_id in fit.ceilings.values():
        assert 0 < mfu <= 1 and runs >= 1 and case_id in fit.meta["case_ids"]


def test_fitted_multiplier_scales_efficiency() -> None:
    gpu = get_gpu("h100")
    names = train_features(gpu, "bf16", "fsdp")
    fit = FittedConstants(train={names[1]: 0.1})
    base = training_step_time(
        PRESETS["gpt2"],
        TrainingSetup(seq_len=1024, stack="fsdp"),
        Layout(),
        Cluster(gpu, 1),
        PerfAssumptions(fitted=FittedConstants()),
    )
    fitted = training_step_time(
        PRESETS["gpt2"],
        TrainingSetup(seq_len=1024, stack="fsdp"),
        Layout(),
        Cluster(gpu, 1),
        PerfAssumptions(fitted=fit),
    )
    assert fitted.efficiency == pytest.approx(base.efficiency * 1.1051709, rel=1e-6)


def test_autocast_weight_cache_adds_two_bytes_per_param_over_fp32_params() -> None:
    # HF Trainer fp16 = torch.autocast over fp32 params: fp32 weights 4 + fp32 grads 4 + Adam 8
    # = 16 B/param as any mixed-precision run, plus the cached fp16 weight casts saved for
    # backward (torch.amp autocast cache_enabled=True): 2 B/param more at the peak
    spec = PRESETS["llama-2-7b"]
    layout = Layout()
    hf = training_memory(spec, TrainingSetup(seq_len=512, precision="fp16", stack="hf-trainer"), layout, RAW)
    plain = training_memory(spec, TrainingSetup(seq_len=512, precision="fp16"), layout, RAW)
    assert (hf.weights - plain.weights) * GIB == pytest.approx(2 * spec.params())
    assert (hf.weights + hf.gradients + hf.optimizer) * GIB / spec.params() == pytest.approx(18)
    # pure bf16 parameters (no fp32 master, no AMP): nothing is cast, nothing cached
    pure = TrainingSetup(seq_len=512, precision="bf16", stack="hf-trainer", fp32_master=False)
    pure_plain = TrainingSetup(seq_len=512, precision="bf16", fp32_master=False)
    assert training_memory(spec, pure, layout, RAW).weights == pytest.approx(
        training_memory(spec, pure_plain, layout, RAW).weights
    )


def test_litgpt_qlora_keeps_fp32_absmax_constants() -> None:
    # litgpt quantize: bnb.nf4 = Lightning _NF4Linear(compress_statistics=False): 4 bits + one
    # fp32 absmax per 64 weights = 4.5 bit/param; the QLoRA recipe's double quantisation stores
    # them in 8 bit with an fp32 constant per 256 blocks: 4 + 8/64 + 32/(64·256) bit/param
    spec = PRESETS["llama-2-7b"]
    layout = Layout()
    quantised = spec.params() - spec.embedding_params() - spec.head_params()
    setups = {
        s: TrainingSetup(seq_len=512, method="qlora", lora_rank=8, stack=s) for s in ("litgpt", "generic")
    }
    mem = {s: training_memory(spec, setup, layout, RAW) for s, setup in setups.items()}
    per_param = (4.5 - (4 + 8 / 64 + 32 / (64 * 256))) / 8
    # Lightning's init_context makes every nn.Linear 4-bit, the LM head too (4.5 bit instead
    # of 16): 32,000 × 4,096 head weights
    head = spec.head_params()
    assert head == 32_000 * 4096
    assert (mem["litgpt"].weights - mem["generic"].weights) * GIB == pytest.approx(
        quantised * per_param + head * (4.5 / 8 - 2), rel=1e-9
    )
