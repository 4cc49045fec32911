"""Per-GPU memory of training and serving, one pure function per term (bytes unless _gib).

Sources: model-state bytes and ZeRO sharding from Rajbhandari et al. 2020 ("ZeRO", §3, Fig. 1);
activations from Korthikanti et al. 2022 ("Reducing Activation Recomputation", §4, Table 2);
QLoRA storage from Dettmers et al. 2023 (§3, double quantisation); KV cache from the
attention definition (2 tensors × layers × kv_heads × head_dim per token).
"""

from __future__ import annotations

import math
from typing import Protocol

from optimizer.model.activations import activation_bytes_per_layer, kept_kv_bytes, moe_routing_bytes_per_token
from optimizer.model.efficiency import fitted_constants
from optimizer.model.fitted import memory_multiplier
from optimizer.model.grad_lifetime import BF16_LOSS_BYTES_PER_LOGIT, gradients_at_peak, unsynced_grad_bytes
from optimizer.model.held import expert_params, lora_params, params_per_gpu, sharded_params
from optimizer.model.memory_breakdown import MemoryBreakdown
from optimizer.model.pipeline_stages import (
    in_flight_microbatches,
    interleave_factor,
    last_stage_layer_microbatches,
)
from optimizer.model.profile import AnyModel, is_profile
from optimizer.model.profile_memory import ProfileMemoryModel
from optimizer.model.setup import (
    WEIGHT_PRECISIONS,
    Layout,
    PerfAssumptions,
    ServeSetup,
    TrainingSetup,
)
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import Knobs, StackProfile, get_stack, knobs, optimizer_sharding_stage
from optimizer.model.states import model_state_bytes_per_param
from optimizer.units import BYTES_PER_DTYPE, GIB

_DEFAULT_ASSUMPTIONS = PerfAssumptions()

__all__ = [
    "GIB",
    "MemoryBreakdown",
    "training_memory",
    "MemoryModel",
    "TrainingMemoryModel",
    "memory_model_for",
    "serving_memory",
    "model_state_bytes_per_param",
    "activation_bytes_per_layer",
    "moe_routing_bytes_per_token",
    "kv_cache_bytes_per_token",
    "lora_params",
    "params_per_gpu",
    "expert_params",
    "sharded_params",
    "setup_state_bytes",
    "qlora_bytes_per_param",
    "interleave_factor",
    "kv_tokens_held",
]


# ---- model states -----------------------------------------------------------------------


def dequantized_weight_bytes(model: ModelSpec, prof: StackProfile) -> float:
    """The transient 16-bit copy of the largest 4-bit weight: bitsandbytes MatMul4Bit
    dequantizes the whole weight for each matmul, forward and backward (autograd/_functions.py:
    F.dequantize_4bit(B, quant_state).to(A.dtype)), at the peak for the LM head when the stack
    quantises it (its backward starts with every activation held)."""
    shapes = model.linear_shapes()
    sizes = [i * o for i, o in shapes.values()]
    if prof.fused_qkv_lora:  # one fused QKV linear (litgpt CausalSelfAttention.attn)
        sizes.append(model.hidden * (model.q_dim + 2 * model.kv_dim))
    if prof.qlora_quantizes_head and model.logits_width:
        sizes.append(model.logits_width * model.hidden)
    return max(sizes) * prof.qlora_dequant_bytes


def qlora_bytes_per_param(double_quant: bool = True) -> float:
    """NF4 storage per base weight: 4 bits + block-64 absmax constants.

    Dettmers et al. 2023 §3: fp32 absmax per 64 weights = 0.5 bit/param; double quantisation
    stores them in 8 bit with one fp32 constant per 256 blocks: 8/64 + 32/(64·256) = 0.127 bit.
    """
    const_bits = 8 / 64 + 32 / (64 * 256) if double_quant else 32 / 64
    return (4 + const_bits) / 8


# ---- activations --------------------------------------------------------------------------


def logits_bytes(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    assumptions: PerfAssumptions,
    k: Knobs | None = None,
) -> float:
    """Logits held for the loss on the last stage (vocab-parallel /t, s/cp tokens per GPU), at the
    stack's bytes per logit (fused losses hold less; loss_chunks: one chunk's); a task head none."""
    k = k or knobs(setup, assumptions)
    per_value = k.logits_bytes_per_value
    compiled_loss = k.stack.compile_loss if setup.compile_loss is None else setup.compile_loss
    if setup.compile and compiled_loss and assumptions.logits_bytes_per_value is None:
        per_value = k.stack.compile_logits_bytes_per_value
    # Cut Cross-Entropy (blockwise, no full logits) or a fused kernel on them (setup.py)
    kernel = {
        "cce": k.stack.cce_logits_bytes_per_value,
        "fused": k.stack.fused_logits_bytes_per_value,
        # Liger's fused linear cross-entropy writes each chunk's gradient into its 16-bit logits
        # (liger_kernel/ops/fused_linear_cross_entropy.py: the cross-entropy kernel stores the
        # gradient in X_ptr = logits_chunk): a fused kernel's bytes, on one chunk (logits_tokens)
        "liger": k.stack.fused_logits_bytes_per_value,
        "bf16": BF16_LOSS_BYTES_PER_LOGIT,  # an eager loss on 16-bit logits (grad_lifetime)
    }
    per_value = min(per_value, kernel.get(setup.loss_kernel or "", per_value))
    vocab_split = 1 if setup.logits_gathered else layout.tp
    return logits_tokens(model, setup, layout) * model.logits_width * per_value / vocab_split


def logits_tokens(model: ModelSpec, setup: TrainingSetup, layout: Layout) -> float:
    """Tokens whose logits one GPU holds at once: its micro-batch's s/cp × b, or one chunk of
    them. Liger Kernel's fused linear cross-entropy (fused_linear_cross_entropy.py) runs
    chunk_size = next_power_of_2(cdiv(BT, cdiv(V, H))) tokens at a time, "the same memory
    consumption as BT x H"; a loss run in `loss_chunks` chunks holds one of them."""
    tokens = setup.seq_len / layout.cp * layout.micro_batch
    if setup.loss_kernel == "liger" and model.logits_width:
        bt = math.ceil(tokens)
        chunk = 1 << max(0, math.ceil(bt / math.ceil(model.logits_width / model.hidden)) - 1).bit_length()
        return float(min(chunk, bt))
    return tokens / max(1, setup.loss_chunks)


# ---- totals -------------------------------------------------------------------------------


class MemoryModel(Protocol):
    """Training memory of one model × setup × assumptions, whatever the model's kind."""

    def memory(self, layout: Layout) -> MemoryBreakdown:
        """Peak memory of the busiest GPU of `layout` (GiB per term)."""
        ...


def memory_model_for(model: AnyModel, setup: TrainingSetup, a: PerfAssumptions) -> MemoryModel:
    """The memory model of `model`'s kind: a per-sample profile's or a transformer's."""
    if is_profile(model):
        return ProfileMemoryModel(model, setup, a)
    return TrainingMemoryModel(model, setup, a)


def training_memory(
    model: AnyModel, setup: TrainingSetup, layout: Layout, assumptions: PerfAssumptions | None = None
) -> MemoryBreakdown:
    """Peak memory of the busiest GPU of a training layout (GiB per term): MemoryModel.memory
    of the model's kind (TrainingMemoryModel for a transformer)."""
    return memory_model_for(model, setup, assumptions or _DEFAULT_ASSUMPTIONS).memory(layout)


class TrainingMemoryModel:
    """Peak memory of a transformer's training layouts under one setup and assumptions.

    Model states follow the stack (fp32 grad buffer, bf16-only optimizer state); `overhead`
    holds allocated workspaces; `cache` the allocator cache and `context` the CUDA context of
    the stack's profile (stacks.toml), so `reserved` and `device` are as frameworks report them.
    The states depend on a layout's sharding, the activations on its micro-batch shape: each
    is worked out once per object (a plan asks ~3,000 layouts sharing ~600 activation shapes
    and ~300 shardings).
    """

    def __init__(self, model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions) -> None:
        self.model, self.setup, self.a = model, setup, a
        self.knobs = knobs(setup, a)
        self._states: dict[tuple[int, int, int, int, int, int], tuple[float, float, float]] = {}
        self._activations: dict[tuple, tuple[float, float | None]] = {}  # key: activations()

    def states(self, layout: Layout) -> tuple[float, float, float]:
        """(weights, gradients, optimizer states) in bytes on the busiest GPU (_state_bytes)."""
        key = (layout.tp, layout.pp, layout.dp * layout.cp, layout.zero_stage, layout.ep, layout.expert_tp)
        found = self._states.get(key)
        if found is None:
            found = self._states[key] = _state_bytes(self.model, self.setup, self.a, self.knobs, *key)
        return found

    def activations(self, layout: Layout) -> tuple[float, float | None]:
        """Activation bytes on the busiest stage and the calibrated factor (_activation_bytes)."""
        key = (
            layout.tp,
            layout.pp,
            layout.cp,
            layout.vp,
            layout.micro_batch,
            layout.checkpointing,
            in_flight_microbatches(layout),
            layout.expert_tp,
        )
        found = self._activations.get(key)
        if found is None:
            found = self._activations[key] = _activation_bytes(
                self.model, self.setup, self.a, self.knobs, *key
            )
        return found

    def memory(self, layout: Layout) -> MemoryBreakdown:
        """Peak memory of the busiest GPU of `layout` (GiB per term; class doc)."""
        setup, a, k = self.setup, self.a, self.knobs
        weights, gradients, optimizer = self.states(layout)
        acts, factor = self.activations(layout)
        managed = 0.0
        if not setup.optimizer_steps:
            # torch.optim creates its state at the first step() (AdamW _init_group: "Lazy
            # state initialization"): a loop that never steps holds none
            optimizer = 0.0
        gradients = self._gradients_at_peak(layout, gradients, acts)
        if setup.paged_optimizer:
            # bitsandbytes paged optimizers allocate their states with cudaMallocManaged
            # (bitsandbytes functional.get_paged), invisible to torch.cuda.max_memory_allocated
            managed, optimizer = optimizer, 0.0

        overhead = a.workspace_gib * GIB
        if setup.method == "qlora":
            overhead += dequantized_weight_bytes(self.model, k.stack) / layout.tp
        allocated = weights + gradients + optimizer + acts + overhead
        # buffers allocated once at start-up are outside the cache's growth (stacks.toml
        # static_state_buffers: Megatron-Core param_and_grad_buffer.py); ZeRO-3 gathers churn
        static = k.stack.static_state_buffers and layout.zero_stage < 3 and not setup.is_adapter
        churned = allocated - (weights + gradients if static else 0.0)
        return MemoryBreakdown.from_bytes(
            weights,
            gradients,
            optimizer,
            acts,
            0.0,
            overhead,
            cache_bytes=k.allocator_cache * churned,
            context_gib=k.context_gib,
            managed_bytes=managed,
            activation_factor=factor,
        )

    def _gradients_at_peak(self, layout: Layout, gradients: float, acts: float) -> float:
        """The gradient bytes held at the peak: freed between steps or kept unsharded across
        micro-batches, as the setup says (grad_lifetime)."""
        setup, model = self.setup, self.model
        if setup.grads_freed or self.knobs.stack.grads_freed:
            g_b = setup_state_bytes(model, setup, self.knobs)[1]
            head = model.head_params() * g_b / layout.tp
            one = Layout(tp=layout.tp, micro_batch=layout.micro_batch, cp=layout.cp)
            last = activation_bytes_per_layer(model, setup, one, self.knobs)
            gradients = gradients_at_peak(layout, gradients, acts, head, last)
        # the unsharded accumulation is reduce-scattered into the sharded gradients layer by
        # layer in the last micro-batch's backward: the larger of the two is held
        return max(gradients, unsynced_grad_bytes(model, setup, layout))


def setup_state_bytes(model: ModelSpec, setup: TrainingSetup, k: Knobs) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per trained parameter of a run: its precision and
    optimizer with the stack's (or the run's) master copy, gradient dtype and fp8 parameters
    (states.model_state_bytes_per_param); the device's (_state_bytes) and the host's
    (host.offloaded_gib_per_gpu) counts."""
    return model_state_bytes_per_param(
        setup.precision,
        setup.optimizer,
        model.hidden,
        k.stack.fp32_grad_buffer if setup.fp32_grads is None else setup.fp32_grads,
        k.stack.fp32_master if setup.fp32_master is None else setup.fp32_master,
        k.stack.fp8_params,
        setup.master_remainders,
    )


def _state_bytes(
    model: ModelSpec,
    setup: TrainingSetup,
    a: PerfAssumptions,
    k: Knobs,
    tp: int,
    pp: int,
    dp_cp: int,
    zero: int,
    ep: int = 1,
    etp: int | None = None,
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) in bytes on the busiest GPU of a tp × pp stage
    whose states ZeRO stage `zero` shards over `dp_cp` = dp × cp GPUs, experts split over
    `ep` of them, each over `etp` (training_memory)."""
    layout = Layout(tp=tp, pp=pp, dp=dp_cp, zero_stage=zero, ep=ep, etp=etp)
    dp = dp_cp  # ZeRO shards over dp × cp (Megatron CP)
    p_gpu = params_per_gpu(model, layout)
    p_shard = sharded_params(model, layout)  # = p_gpu without expert parallelism

    def held(stage: int, sharding: int = zero) -> float:
        """Parameters whose state this GPU keeps when ZeRO (stage `sharding`) shards it from
        `stage` on."""
        return p_shard / dp if sharding >= stage else p_gpu

    master = k.stack.fp32_master if setup.fp32_master is None else setup.fp32_master
    w_b, g_b, o_b = setup_state_bytes(model, setup, k)

    if setup.is_adapter:
        base = p_gpu / (dp if zero >= 3 else 1)  # the frozen base, sharded by ZeRO-3
        return _adapter_state_bytes(model, setup, a, k, layout, base, (w_b, g_b, o_b))
    # bytes per parameter this GPU's shard holds of each state
    shard_w, shard_g, shard_o = w_b, g_b, o_b
    fsdp_shards = k.stack.fp32_param_shards and not setup.master_remainders
    if zero >= 3 and fsdp_shards and master and setup.precision in ("fp16", "bf16", "fp8"):
        # FSDP mixed precision (torch.distributed.fsdp MixedPrecision / FSDP2 MixedPrecisionPolicy:
        # param_dtype is the dtype of the unsharded copy for compute; the sharded parameter stays
        # fp32 and is what the optimizer steps, its gradient reduced into an fp32 shard): the
        # shard holds 4 B of weights (the master), 4 B of gradients and the moments only
        shard_w, shard_g, shard_o = 4.0, 4.0, o_b - 4.0
    weights = held(3) * shard_w
    autocast = k.stack.autocast_weight_cache if setup.autocast_weights is None else setup.autocast_weights
    if autocast and master and setup.precision in ("fp16", "bf16"):
        # torch.autocast over fp32 params: the cached 16-bit weight casts are saved for
        # backward (torch.amp autocast cache_enabled=True): +2 B/param on this GPU's shard.
        # Not under torch FSDP as a run states it (setup.autocast_weights, ZeRO-3): its forward
        # computes on Tensor views of the flat parameter (FSDP1 _use_unsharded_flat_param: "We
        # use `Tensor` views in the forward"), which autocast never caches (ATen
        # autocast_mode.cpp cached_cast: "arg.is_leaf() && !arg.is_view()")
        weights += (0.0 if zero >= 3 and setup.autocast_weights else held(3)) * 2.0
    gradients = held(2) * shard_g
    optimizer = held(1, optimizer_sharding_stage(zero, k.stack, setup)) * shard_o
    if zero >= 3:  # gathered full-size parameters of the layers being computed
        weights += _gathered_layer_bytes(model, a, layout, min(w_b, 2.0))
    if k.optimizer_in_backward:
        # each parameter is stepped as its gradient is produced (torchtune optimizer_in_bwd):
        # about one layer of gradients is resident
        gradients = min(gradients, model.layer_params() / layout.tp * g_b)
    if setup.offload_optimizer:
        # ZeRO-Offload (Ren et al. 2021, §4): fp32 master + moments live in CPU RAM and
        # gradients stream to the CPU as they are produced; the GPU keeps ~one layer of them
        optimizer = 0.0
        gradients = min(gradients, model.layer_params() / layout.tp * g_b)
    if setup.offload_params and zero >= 3:
        weights = _gathered_layer_bytes(model, a, layout, min(w_b, 2.0))

    return weights, gradients, optimizer


def _gathered_layer_bytes(
    model: ModelSpec, a: PerfAssumptions, layout: Layout, bytes_per_param: float
) -> float:
    """Full-size parameters of the layers ZeRO-3 / FSDP has gathered at once on one GPU (the
    layers being computed and prefetched, a.zero3_prefetch_layers), of its tensor-parallel slice."""
    return min(a.zero3_prefetch_layers, model.layers) * model.layer_params() / layout.tp * bytes_per_param


def _adapter_state_bytes(
    model: ModelSpec,
    setup: TrainingSetup,
    a: PerfAssumptions,
    k: Knobs,
    layout: Layout,
    base_params: float,
    per_param: tuple[float, float, float],
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) of a LoRA / QLoRA run on one GPU: the frozen base's
    `base_params` (ZeRO-3 shard) as stored, the adapters at the stack's `per_param` bytes."""
    w_b, g_b, o_b = per_param
    # a frozen base under torch.autocast over fp32 parameters (stated by the run) stays fp32
    fp32_base = setup.precision == "fp32" or bool(setup.autocast_weights)
    base_b = 4.0 if fp32_base else 2.0
    if setup.method == "qlora":
        base_b = qlora_bytes_per_param(k.stack.qlora_double_quant)
    # QLoRA leaves embeddings (and, unless the stack quantises it, the LM head) in 16 bit
    # (bitsandbytes quantises Linear layers)
    head_16bit = 0 if k.stack.qlora_quantizes_head else model.head_params()
    dense_fraction = (model.embedding_params() + head_16bit) / model.params()
    base_bytes = (
        base_params * ((1 - dense_fraction) * base_b + dense_fraction * 2.0)
        if setup.method == "qlora"
        else base_params * base_b
    )
    n_adapter = lora_params(model, setup.lora_rank, setup.lora_targets) / (layout.tp * layout.pp)
    # adapters: 16-bit weights + grads + optimizer state as the stack keeps it
    weights = base_bytes + n_adapter * w_b
    if layout.zero_stage >= 3 and not setup.offload_params and setup.method != "qlora":
        # the frozen base is gathered layer by layer as the full path's are (FSDP / ZeRO-3
        # all-gather of the layers being computed and prefetched), at its stored dtype
        weights += _gathered_layer_bytes(model, a, layout, base_b)
    if setup.offload_params and layout.zero_stage >= 3:  # ZeRO-3 param offload: ~2 layers gathered
        weights = _gathered_layer_bytes(model, a, layout, base_b) + n_adapter * w_b
    return weights, n_adapter * g_b, n_adapter * o_b


def _activation_bytes(
    model: ModelSpec,
    setup: TrainingSetup,
    a: PerfAssumptions,
    k: Knobs,
    tp: int,
    pp: int,
    cp: int,
    vp: int,
    micro_batch: int,
    checkpointing: str,
    in_flight: int,
    etp: int | None = None,
) -> tuple[float, float | None]:
    """Activation bytes on the busiest pipeline stage of a layout with `in_flight` micro-batches
    of its activations held on the first stage (in_flight_microbatches), the logits on the last
    (last_stage_layer_microbatches), and the calibrated factor applied to them (None without
    one) (training_memory)."""
    # grad_accum = in_flight holds as many micro-batches as the layout (min(pp, grad_accum))
    layout = Layout(
        tp=tp,
        pp=pp,
        cp=cp,
        vp=vp,
        micro_batch=micro_batch,
        checkpointing=checkpointing,
        grad_accum=in_flight,
        etp=etp,
    )
    layers_per_stage = math.ceil(model.layers / layout.pp)
    if setup.offload_activations and layout.checkpointing == "full":
        # torchtune OffloadActivations: checkpointed inputs go to CPU RAM as they are made
        layers_per_stage = min(layers_per_stage, a.offload_resident_layers)
    if setup.offload_layers:
        # Megatron-Core CPU offloading (Transformer Engine get_cpu_offload_context): the
        # activations of that many layers of the stage are copied to host memory in forward
        # and brought back for their backward; at least one layer stays resident
        layers_per_stage = max(1, layers_per_stage - setup.offload_layers)
    per_layer = activation_bytes_per_layer(model, setup, layout, k)
    first = per_layer * layers_per_stage * in_flight_microbatches(layout) * interleave_factor(layout)
    logits = logits_bytes(model, setup, layout, a, k)
    recomputed = 0.0
    if layout.checkpointing == "full" or (
        layout.checkpointing == "selective" and k.stack.selective_ac in ("op", "block")
    ):
        # one layer is recomputed at a time (torchtitan op SAC recomputes the rest of a block)
        recomputed = activation_bytes_per_layer(
            model, setup, Layout(tp=layout.tp, micro_batch=layout.micro_batch, cp=layout.cp, etp=etp), k
        )
    if layout.pp == 1:
        acts = first + logits + recomputed
    else:
        # the logits are on the last stage, which holds fewer micro-batches than the first;
        # its loss backward frees them before its last layer is recomputed
        last = per_layer * last_stage_layer_microbatches(layout, layers_per_stage) + max(logits, recomputed)
        acts = max(first + recomputed, last)
    fit = fitted_constants(a)
    if fit is not None:  # fitted per stack / method / checkpointing (data/fitted.toml)
        acts *= memory_multiplier(fit, setup.stack, setup.method, layout.checkpointing)
    # a measured peak of this model × stack scales what the model cannot count exactly: the
    # activations (weights, gradients and optimizer states are exact byte counts)
    factor = a.memory_calibrated.get((model.name, setup.stack))
    if factor is not None:
        acts *= factor
    return acts + kept_kv_bytes(model, setup, layout), factor  # exact bytes: not scaled


def kv_cache_bytes_per_token(model: ModelSpec, kv_precision: str = "fp16") -> float:
    """2 (K and V) × layers × kv_heads × head_dim × bytes per value."""
    return 2 * model.layers * model.n_kv_heads * model.d_head * BYTES_PER_DTYPE[kv_precision]


def serving_weight_bytes(model: ModelSpec, weight_precision: str) -> float:
    """Weights at the serving format; quantised formats keep embeddings/LM head in 16 bit."""
    bits = WEIGHT_PRECISIONS[weight_precision]
    dense = model.embedding_params() + model.head_params()
    if bits >= 16:
        return model.params() * bits / 8
    return (model.params() - dense) * bits / 8 + dense * 2


def kv_tokens_held(serve: ServeSetup) -> float:
    """KV tokens a sequence holds: all of `context` when the scheduler reserves the maximum
    (contiguous caches; TensorRT-LLM's GUARANTEED_NO_EVICT admission); with paged attention and
    on-demand blocks (vLLM) only the tokens present, prompt + output/2 over a request's life;
    paged caches waste half a block per sequence (Kwon et al. 2023 §4.2: only the last block)."""
    prof = get_stack(serve.stack)
    occupancy = serve.kv_occupancy or (prof.kv_reservation if prof.paged_kv else "max")
    waste = prof.kv_block_tokens / 2.0 if prof.paged_kv else 0.0
    if occupancy == "max":
        return float(serve.context) + waste
    return serve.context - serve.output_tokens / 2.0 + waste


def serving_memory(
    model: ModelSpec, serve: ServeSetup, tp: int = 1, assumptions: PerfAssumptions | None = None
) -> MemoryBreakdown:
    """Per-GPU memory of an inference replica split over `tp` GPUs (GiB per term)."""
    a = assumptions or PerfAssumptions()
    k = knobs(serve, a)
    weights = serving_weight_bytes(model, serve.weight_precision) / tp
    kv = kv_cache_bytes_per_token(model, serve.kv_precision) * serve.batch * kv_tokens_held(serve) / tp
    # activations of one prefill chunk: residual, QKV, FFN intermediates (16-bit), plus fp32
    # logits of the last token of each sequence
    chunk = min(serve.prefill_chunk_tokens, serve.batch * serve.context)
    ffn_width = model.ffn * (3 if model.ffn_kind == "gated" else 2)
    acts = chunk * (4 * model.hidden + ffn_width) * 2 / tp + serve.batch * model.logits_width * 4
    overhead = a.workspace_gib * GIB
    # the KV pool is allocated once at start-up, at its full size (vLLM CacheEngine
    # _allocate_kv_cache: one torch.zeros per layer; TensorRT-LLM KVCacheManager pools, docs
    # reference/memory.md): the allocator cache only grows around the other buffers
    cached = weights + acts + overhead
    return MemoryBreakdown.from_bytes(
        weights,
        0.0,
        0.0,
        acts,
        kv,
        overhead,
        cache_bytes=k.allocator_cache * cached,
        context_gib=k.context_gib,
    )
