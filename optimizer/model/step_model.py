"""One trained model's step on one GPU type, with everything that does not depend on the layout
or the instance count computed once (the planner builds one per offering × model).

`DecoderStepModel` times a transformer (ModelSpec); `ProfileStepModel`
(optimizer/model/profile_time.py) a per-sample profile. Both answer the `StepModel` protocol,
and `step_model_for` picks the one of a model's kind: the planner never asks which kind it has.

step = m·(compute + TP/CP comm + PP p2p) per micro-batch + bubble (p−1)/v micro-batches
       + exposed DP communication + optimizer update (memory-bound),
a micro-batch taking at least the host's time to launch its kernels (optimizer.model.dispatch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Protocol

from optimizer.errors import ConfigError
from optimizer.model.bands import point_centre
from optimizer.model.calibrated import comm_key
from optimizer.model.ceilings import MfuCeiling, mfu_ceiling
from optimizer.model.cluster import Cluster, StepTime
from optimizer.model.comms import (
    all_to_all_s,
    p2p_s,
    ring_allgather_s,
    ring_allreduce_s,
    ring_reduce_scatter_s,
)
from optimizer.model.dispatch import host_s_per_layer_pass, stage_host_s
from optimizer.model.efficiency import (
    ATTENTION_KERNEL_FRACTION,
    base_efficiency,
    calibrated_curve,
    hidden_half,
    size_factor,
    uncalibrated_efficiency,
)
from optimizer.model.flops import (
    attention_flops_per_token_layer,
    model_flops_per_token,
    training_flops_per_token,
)
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import lora_params, params_per_gpu, qlora_bytes_per_param, sharded_params
from optimizer.model.pcie import dp_bus_bandwidth_gb_s, intra_node_bw_gb_s, p2p_bandwidth_gb_s
from optimizer.model.profile import AnyModel, is_profile
from optimizer.model.profile_time import ProfileStepModel
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import Knobs, knobs, optimizer_sharding_stage
from optimizer.units import BYTES_PER_DTYPE, GB

__all__ = [
    "MicrobatchTimes",
    "StepModel",
    "DecoderStepModel",
    "DpTraffic",
    "step_model_for",
    "comm_multiplier",
    "clip_to_ceiling",
    "COMM_BYTES",
    "ADAM_STATE_BYTES",
]

#: (compute, exposed tensor/context-parallel comm, exposed pipeline p2p, efficiency) of one
#: micro-batch on one GPU
MicrobatchTimes = tuple[float, float, float, float]
#: activations and gradients travel as bf16 (Megatron/FSDP mixed precision: 2-byte values)
COMM_BYTES = BYTES_PER_DTYPE["bf16"]
#: optimizer update traffic per parameter: fp32 master + two Adam moments + fp32 gradient
#: (Rajbhandari et al. 2020 §3: 16 bytes of mixed-precision Adam state), read and written
ADAM_STATE_BYTES = 16.0


class StepModel(Protocol):
    """What the planner asks of one model's step on one GPU type, whatever the model's kind."""

    @property
    def own_band(self) -> bool:
        """Whether the step has a band of its own (a profile's, or a GPU type the user
        calibrated), which the GPU's fitted band does not bound."""
        ...

    @property
    def base_efficiency(self) -> float:
        """The efficiency before the size curve: an upper bound of every layout's achieved one."""
        ...

    @property
    def efficiency_ceiling(self) -> float:
        """An upper bound of every layout's achieved efficiency at least as tight as
        base_efficiency (what a cost floor may assume of any layout)."""
        ...

    @property
    def model_flops_per_token(self) -> float:
        """Model FLOPs per trained token (one sample of a profile); 0 when unknown."""
        ...

    @property
    def centre(self) -> float:
        """The multiplier every step time carries (its fitted band's P50; 1: none)."""
        ...

    def microbatch_times_s(self, layout: Layout, cluster: Cluster) -> MicrobatchTimes:
        """One micro-batch of `layout` on one GPU of `cluster` (MicrobatchTimes)."""
        ...

    def step_time(self, layout: Layout, cluster: Cluster, micro: MicrobatchTimes | None = None) -> StepTime:
        """Seconds per optimizer step of `layout` on `cluster` (`micro`: its micro-batch times)."""
        ...


def comm_multiplier(cluster: Cluster, setup: TrainingSetup, a: PerfAssumptions) -> float:
    """The calibrated multiplier of the modelled communication time (before the overlap hides
    part of it) of `setup` on `cluster`'s fabric (optimizer.api.calibrate_comm: stored runs on
    the same GPUs per node and network); 1 elsewhere. An explicit efficiency overrides compute,
    not this."""
    if not a.calibrated_comm:
        return 1.0
    key = comm_key(
        cluster.gpu.gpu_id, setup.precision, setup.stack, cluster.gpus_per_node, cluster.inter_node_gbps
    )
    return a.calibrated_comm.get(key, 1.0)


def scale_step(step: StepTime, f: float) -> StepTime:
    """`step` with its time and every part multiplied by `f` and its throughputs divided."""
    if f == 1.0:
        return step
    return replace(
        step,
        time_s=step.time_s * f,
        tokens_per_s=step.tokens_per_s / f,
        tokens_per_s_per_gpu=step.tokens_per_s_per_gpu / f,
        mfu=step.mfu / f,
        hfu=step.hfu / f,
        compute_s=step.compute_s * f,
        communication_s=step.communication_s * f,
        bubble_s=step.bubble_s * f,
        host_wait_s=step.host_wait_s * f,
        parts_s={k: v * f for k, v in step.parts_s.items()},
    )


def clip_to_ceiling(step: StepTime, gpu: GpuSpec, precision: str, ceiling: MfuCeiling) -> StepTime:
    """`step` slowed to `ceiling` (the MFU ceiling of `gpu` × `precision`) when it predicts more
    (every part scaled alike: which part is optimistic is unknown), flagged; else `step` itself."""
    if step.mfu <= ceiling.mfu:
        return step
    return replace(
        scale_step(step, step.mfu / ceiling.mfu),
        mfu=ceiling.mfu,
        mfu_unclipped=step.mfu,
        ceiling_note=(
            f"predicted MFU {step.mfu:.0%} clipped to {ceiling.mfu:.0%}, {ceiling.describe(gpu, precision)}"
        ),
    )


def _flop_split(
    model: ModelSpec, setup: TrainingSetup, checkpointing: str, attention: str
) -> tuple[float, float, float]:
    """(GEMM, attention-core, all) hardware FLOPs per token: fp8 applies to the GEMMs only, the
    attention core (Q·Kᵀ, softmax·V) runs in bf16 (Transformer Engine fp8 recipe)."""
    total = training_flops_per_token(model, setup, checkpointing)
    attn = model.layers * attention_flops_per_token_layer(model, setup.seq_len)
    passes = 2.0 if setup.is_adapter else 3.0  # forward + backward (input grads [+ weight grads])
    if checkpointing == "full" or (checkpointing == "selective" and attention == "eager"):
        passes += 1.0
    attn_total = min(attn * passes, total)
    return total - attn_total, attn_total, total


@dataclass(frozen=True)
class DpTraffic:
    """The data-parallel part of a step: all its communication, the compute window that can hide
    it, and what stays exposed."""

    total_s: float
    window_s: float
    exposed_s: float


class DecoderStepModel:
    """The step time of a transformer (ModelSpec) on one GPU type (module doc)."""

    def __init__(self, model: ModelSpec, setup: TrainingSetup, gpu: GpuSpec, a: PerfAssumptions) -> None:
        self.model, self.setup, self.gpu, self.a = model, setup, gpu, a
        self.knobs: Knobs = knobs(setup, a)
        self._precision_setup(gpu, setup, a)
        self._flops_setup(model, setup, a)
        self._update_setup(model, setup, gpu, a)

    def _precision_setup(self, gpu: GpuSpec, setup: TrainingSetup, a: PerfAssumptions) -> None:
        """Peaks and efficiencies of the GPU at the setup's precision."""
        precision = setup.precision
        self.peak_tflops = gpu.peak_tflops(precision, setup.tf32_on)
        peak = self.peak_tflops or 0.0
        self.peak16_tflops = (gpu.peak_tflops("bf16") or peak) if precision == "fp8" else peak
        self.base_efficiency, self._calibrated = base_efficiency(gpu, precision, a, setup.stack)
        self.curve = calibrated_curve(gpu, precision, a, setup.stack)
        self.uncalibrated = (
            uncalibrated_efficiency(gpu, precision, a, setup.stack) if self.curve is not None else 0.0
        )
        # IEEE fp32 on the CUDA cores (TF32 off): no tensor-core tile for a small hidden size to
        # underfill, so the hidden-size term of the size factor is off (GUESS, like the term)
        self.hidden_half = 0.0 if precision == "fp32" and not setup.tf32_on else hidden_half(a)
        kernel = self.knobs.stack.attention_kernel
        fused = self.knobs.attention != "eager"
        self.attention_fraction = ATTENTION_KERNEL_FRACTION.get((gpu.generation, kernel)) if fused else None
        self.intra_bw_gb_s = intra_node_bw_gb_s(gpu, a)
        self.hbm_bytes_per_s = gpu.mem_bandwidth_gb_s * GB * a.bw_efficiency
        clipped = not self._calibrated and a.efficiency is None
        self.ceiling = mfu_ceiling(gpu, precision, a) if clipped else None
        #: the fitted band's P50: the point is the band's centre (optimizer/model/bands.py)
        self.centre = point_centre(gpu, precision, a) if clipped else 1.0

    def _flops_setup(self, model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions) -> None:
        """FLOPs per token: the model's now, the hardware's per checkpointing level (GEMM and
        attention core apart) when a layout first asks for that level (flops_at)."""
        self._model_flops = model_flops_per_token(model, setup)
        self._flops_at: dict[str, tuple[float, float, float]] = {}

    def flops_at(self, checkpointing: str) -> tuple[float, float, float]:
        """(GEMM, attention-core, all) hardware FLOPs per token at `checkpointing` (_flop_split;
        QLoRA's GEMMs dequantize their weights first)."""
        found = self._flops_at.get(checkpointing)
        if found is None:
            gemm_tok, attn_tok, total = _flop_split(
                self.model, self.setup, checkpointing, self.knobs.attention
            )
            if self.setup.method == "qlora":
                gemm_tok *= self.a.qlora_dequant_factor
            found = self._flops_at[checkpointing] = (gemm_tok, attn_tok, total)
        return found

    def _update_setup(self, model: ModelSpec, setup: TrainingSetup, gpu: GpuSpec, a: PerfAssumptions) -> None:
        """Per-parameter bytes of the gradient traffic and the optimizer update."""
        stack = self.knobs.stack
        self.adapter_params = (
            lora_params(model, setup.lora_rank, setup.lora_targets) if setup.is_adapter else 0
        )
        fp32_grads = stack.fp32_grad_buffer or stack.fp32_grad_reduce
        self.grad_value_bytes = 4.0 if fp32_grads and setup.precision != "fp32" else COMM_BYTES
        self.qlora_weight_bytes = qlora_bytes_per_param(stack.qlora_double_quant)
        self.state_bytes = ADAM_STATE_BYTES if stack.fp32_master else ADAM_STATE_BYTES / 2
        self._held: dict[tuple[int, int, int, int], float] = {}
        fused = self.knobs.stack.fused_layer_kernels
        #: the host's time to launch one layer's forward kernels (dispatch.host_s_per_layer_pass)
        self.host_layer_pass_s = host_s_per_layer_pass(model, setup, self.knobs.attention, a, fused)

    @property
    def own_band(self) -> bool:
        return self._calibrated

    @property
    def efficiency_ceiling(self) -> float:
        """base_efficiency × the size curve's hidden-size term h / (h + half), which no layout
        escapes (efficiency.size_factor: the micro-batch term is below 1); base_efficiency
        under a calibrated curve, whose shape this model does not bound."""
        if self.curve is not None:
            return self.base_efficiency
        hidden = self.model.hidden
        return self.base_efficiency * (hidden / (hidden + self.hidden_half))

    @property
    def model_flops_per_token(self) -> float:
        return self._model_flops

    def size_factor(self, layout: Layout) -> float:
        """The size factor (efficiency.size_factor) of one micro-batch on one GPU: its b·s/cp
        tokens and the model's hidden size (what a calibrated curve is a function of)."""
        tokens_mb = layout.micro_batch * self.setup.seq_len / layout.cp
        return size_factor(tokens_mb, self.model.hidden, self.hidden_half)

    def achieved_efficiency(self, size: float) -> float:
        """Achieved fraction of the dense peak at size factor `size` (efficiency.achieved_efficiency)."""
        if self.curve is not None:
            return self.curve.efficiency(size, self.uncalibrated)
        return self.base_efficiency * size

    def held_params(self, layout: Layout) -> float:
        """Parameters of this GPU's stage / tp slice (memory.params_per_gpu), per (pp, tp, ep)."""
        key = (layout.pp, layout.tp, layout.ep, layout.expert_tp)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = params_per_gpu(self.model, layout)
        return held

    def microbatch_times_s(self, layout: Layout, cluster: Cluster) -> MicrobatchTimes:
        """(compute, exposed tensor/context-parallel comm, exposed pipeline p2p, efficiency) of one
        micro-batch on one GPU (per virtual stage chunk summed over the GPU's layers).

        The step time is at least (grad_accum + (pp − 1) / vp) × their sum (micro-batches plus
        bubble), which the planner uses as a cheap lower bound before the full model."""
        if self.peak_tflops is None:
            raise ConfigError(f"{self.gpu.gpu_id} has no {self.setup.precision} tensor path")
        tokens_mb = layout.micro_batch * self.setup.seq_len / layout.cp
        eff = self.achieved_efficiency(self.size_factor(layout))
        layers_stage = math.ceil(self.model.layers / layout.pp)
        compute_mb = self._compute_s(layout, tokens_mb, eff, layers_stage)
        tp_mb = self._tensor_context_s(layout, cluster, tokens_mb, layers_stage)
        pp_mb = self._pipeline_s(layout, cluster, tokens_mb)
        mu = comm_multiplier(cluster, self.setup, self.a)  # a calibrated fabric's (api.calibrate_comm)
        return compute_mb, tp_mb * mu, pp_mb * mu, eff

    def _compute_s(self, layout: Layout, tokens_mb: float, eff: float, layers_stage: int) -> float:
        """Compute of one micro-batch: GEMMs at the precision's peak, the attention core in 16
        bit when training in fp8; eager attention adds its memory-bound score passes."""
        peak = self.peak_tflops or 0.0
        eff16 = eff / self.a.fp8_gemm_factor if self.setup.precision == "fp8" else eff
        if self.attention_fraction is not None:  # fused kernel: its own published fraction of the peak
            eff16 = min(eff16, self.attention_fraction)
        gemm_tok, attn_tok, _ = self.flops_at(layout.checkpointing)
        work = tokens_mb / (layout.tp * layout.pp)
        compute_mb = work * (gemm_tok / (peak * 1e12 * eff) + attn_tok / (self.peak16_tflops * 1e12 * eff16))
        if self.knobs.attention == "eager":
            # materialised a·s² scores: softmax/mask/dropout passes are memory-bound (Dao et al.
            # 2022 §1: standard attention is bound by HBM reads/writes of the s×s matrix)
            elements = self.model.heads / layout.tp * tokens_mb * self.setup.seq_len * layers_stage
            compute_mb += elements * self.a.eager_score_bytes / self.hbm_bytes_per_s
        return compute_mb

    def _tensor_context_s(
        self, layout: Layout, cluster: Cluster, tokens_mb: float, layers_stage: int
    ) -> float:
        """Exposed tensor- and context-parallel communication of one micro-batch."""
        a, model = self.a, self.model
        # tensor parallel: 4 all-reduces (SP: reduce-scatter + all-gather, same volume) of b·s·h
        # 2-byte values per layer per micro-batch (Megatron §3; Korthikanti 2022 §4.2.2), +2 with
        # full recompute; the stack hides tp_overlap of it (TE userbuffers); GPUs without
        # peer-to-peer all-reduce through host memory (model.pcie)
        tp_mb = 0.0
        if layout.tp > 1:
            tp_msgs = 4 + (2 if layout.checkpointing == "full" else 0)
            message = tokens_mb * model.hidden * COMM_BYTES
            tp_mb = (
                layers_stage
                * tp_msgs
                * ring_allreduce_s(message, layout.tp, self.intra_bw_gb_s, a.small_message_latency_s)
            )
            tp_mb *= 1.0 - self.knobs.tp_overlap
        # context parallel: ring attention passes each GPU's K, V chunk cp−1 times forward and
        # K, V + their gradients backward (Liu et al. 2023 "Ring Attention" §3), 2-byte values
        cp = layout.cp
        if cp > 1:
            chunk = 2 * tokens_mb * model.kv_dim / layout.tp * COMM_BYTES
            passes = 3 + (1 if layout.checkpointing == "full" else 0)
            cp_bw = p2p_bandwidth_gb_s(cluster, layout.tp * cp > cluster.gpus_per_node, a)
            cp_mb = layers_stage * passes * (cp - 1) * p2p_s(chunk, cp_bw, a.small_message_latency_s)
            tp_mb += cp_mb * (1.0 - self.knobs.cp_overlap)
        return tp_mb + self._expert_parallel_s(layout, cluster, tokens_mb, layers_stage)

    def _expert_parallel_s(
        self, layout: Layout, cluster: Cluster, tokens_mb: float, layers_stage: int
    ) -> float:
        """Exposed expert-parallel all-to-all of one micro-batch: each MoE layer dispatches its
        tokens' k copies to the experts' GPUs and combines them back, in forward and again in
        backward (4 all-to-alls; +2 with full recompute) of tokens/tp × k × hidden 2-byte values
        (Megatron-Core token_dispatcher.py MoEAlltoAllTokenDispatcher; GShard §2.2)."""
        ep, model, a = layout.ep, self.model, self.a
        if ep <= 1 or not model.is_moe:
            return 0.0
        msgs = 4 + (2 if layout.checkpointing == "full" else 0)
        message = tokens_mb / layout.tp * model.moe_active * model.hidden * COMM_BYTES
        # EP ranks are data-parallel ranks tp·cp apart (Megatron rank order tp, cp, ep/dp, pp)
        in_node = max(1, cluster.gpus_per_node // (layout.tp * layout.cp))
        rail = p2p_bandwidth_gb_s(cluster, True, a)
        a2a = all_to_all_s(message, ep, in_node, self.intra_bw_gb_s, rail, a.small_message_latency_s)
        return layers_stage * msgs * a2a * (1.0 - a.ep_overlap)

    def _pipeline_s(self, layout: Layout, cluster: Cluster, tokens_mb: float) -> float:
        """Exposed pipeline p2p of one micro-batch: activation send forward + gradient send
        backward per boundary (vp chunks per GPU: vp times the sends, Narayanan 2021 §2.2.2)."""
        if layout.pp <= 1:
            return 0.0
        pp_spans_nodes = layout.tp * layout.cp * layout.pp > cluster.gpus_per_node
        pp_bw = p2p_bandwidth_gb_s(cluster, pp_spans_nodes, self.a)
        message = tokens_mb * self.model.hidden * COMM_BYTES / layout.tp
        pp_mb = 2 * layout.vp * p2p_s(message, pp_bw, self.a.small_message_latency_s)
        return pp_mb * (1.0 - self.knobs.pp_overlap)

    def host_s(self, layout: Layout) -> float:
        """The host's time to launch one micro-batch's kernels on one GPU (dispatch.stage_host_s
        of the layer pass worked out once: host_dispatch_s)."""
        return stage_host_s(self.model, layout, self.host_layer_pass_s)

    def trained_params(self, layout: Layout) -> float:
        """Parameters this GPU trains: its held slice, or its share of the adapters."""
        if self.setup.is_adapter:
            return self.adapter_params / (layout.tp * layout.pp)
        return self.held_params(layout)

    def dp_traffic(self, layout: Layout, cluster: Cluster, compute_mb: float) -> DpTraffic:
        """Data-parallel communication over dp × cp GPUs (context-parallel ranks hold the same
        weights), the window that hides it and what stays exposed."""
        setup, a, m = self.setup, self.a, layout.grad_accum
        dp_group = layout.dp * layout.cp
        dp_bw = dp_bus_bandwidth_gb_s(cluster, layout.gpus > cluster.gpus_per_node, a)
        held = self.held_params(layout)
        trained = self.trained_params(layout)
        grad_bytes = trained * self.grad_value_bytes
        lat = a.small_message_latency_s
        if layout.zero_stage >= 3:
            # ZeRO-3/FSDP: all-gather the (sharded) weights in forward and backward of every
            # micro-batch + grad reduce-scatter (Rajbhandari 2020 §7: 1.5× the all-reduce volume
            # per step). Adapter methods shard and gather the frozen base too (NF4 for QLoRA).
            weight_bytes = held * (self.qlora_weight_bytes if setup.method == "qlora" else COMM_BYTES)
            gathers = 2 * m * ring_allgather_s(weight_bytes, dp_group, dp_bw, lat)
            syncs = m if self.knobs.stack.fsdp2_microbatch_sync else 1  # reduce-scatters per step
            dp_comm = gathers + syncs * ring_reduce_scatter_s(grad_bytes, dp_group, dp_bw, lat)
            window = compute_mb * m  # gathers prefetch during the whole step
        elif layout.zero_stage == 0 and self.optimizer_stage(layout) >= 1:
            # DeepSpeed BF16_Optimizer without ZeRO: the fp32 gradients are all-reduced whole
            # (engine.py allreduce_gradients: get_grads_for_reduction), then each rank steps its
            # partition and the bf16 parameters are all-gathered (bf16_optimizer.py update_lp_params)
            dp_comm = ring_allreduce_s(grad_bytes, dp_group, dp_bw, lat) + ring_allgather_s(
                trained * COMM_BYTES, dp_group, dp_bw, lat
            )
            # DDP's window (the last micro-batch's backward) for both: the all-gather follows the
            # step and cannot hide there, which this simplification does not separate
            window = compute_mb * (2.0 / 3.0)
        elif layout.zero_stage >= 1 and not setup.is_adapter:
            # distributed optimizer / ZeRO-1/2: reduce-scatter the gradients, all-gather the
            # updated 16-bit parameters (Megatron dist_optimizer.md; ZeRO §5: an all-reduce's volume)
            dp_comm = ring_reduce_scatter_s(grad_bytes, dp_group, dp_bw, lat) + ring_allgather_s(
                trained * COMM_BYTES, dp_group, dp_bw, lat
            )
            window = compute_mb  # RS in the last backward, AG in the next forward
            if self.knobs.stack.fsdp2_microbatch_sync:  # both in every micro-batch (stacks.toml)
                dp_comm, window = dp_comm * m, compute_mb * m
        else:
            dp_comm = ring_allreduce_s(grad_bytes, dp_group, dp_bw, lat)  # DDP: one all-reduce
            # the last micro-batch's backward hides the reduce, unless it starts after backward
            after = layout.zero_stage == 0 and self.knobs.stack.zero0_reduce_after_backward
            window = 0.0 if after else compute_mb * (2.0 / 3.0)
        dp_comm *= comm_multiplier(cluster, setup, a)  # a calibrated fabric's (api.calibrate_comm)
        hidden = min(dp_comm * self.knobs.dp_overlap, window)
        return DpTraffic(dp_comm, window, dp_comm - hidden)

    def optimizer_stage(self, layout: Layout) -> int:
        """The ZeRO stage that shards the optimizer states (stacks.optimizer_sharding_stage)."""
        return optimizer_sharding_stage(layout.zero_stage, self.knobs.stack, self.setup)

    def optimizer_s(self, layout: Layout) -> float:
        """The optimizer update: read + write master and moments, memory-bound (16 B/param r+w
        with fp32 master; 8 B for bf16-only stacks)."""
        shard = layout.dp * layout.cp if self.optimizer_stage(layout) >= 1 else 1
        trained = self.trained_params(layout)
        if shard > 1 and (layout.ep > 1 or layout.expert_tp != layout.tp) and not self.setup.is_adapter:
            trained = sharded_params(self.model, layout)  # experts shard over dp·cp/ep GPUs
        opt_s = trained / shard * self.state_bytes * 2 / self.hbm_bytes_per_s
        if self.setup.offload_optimizer:
            opt_s *= self.a.cpu_adam_slowdown
        return opt_s

    def step_time(self, layout: Layout, cluster: Cluster, micro: MicrobatchTimes | None = None) -> StepTime:
        """Seconds per optimizer step of `layout` on `cluster`, with breakdown (module doc);
        `micro` passes a precomputed microbatch_times_s result (the planner keeps them)."""
        compute_mb, tp_mb, pp_mb, eff = micro or self.microbatch_times_s(layout, cluster)
        m = layout.grad_accum
        # the host launches while the GPU runs: a micro-batch takes the longer of the two
        host_wait_mb = max(0.0, self.host_s(layout) - (compute_mb + tp_mb + pp_mb))
        per_mb = compute_mb + tp_mb + pp_mb + host_wait_mb
        bubble = (layout.pp - 1) / layout.vp * per_mb  # interleaved 1F1B (Narayanan 2021 §2.2.2)
        dp = self.dp_traffic(layout, cluster, compute_mb)
        opt_s = self.optimizer_s(layout)
        compute_s = m * compute_mb
        comm_s = m * (tp_mb + pp_mb) + dp.exposed_s
        time_s = compute_s + m * host_wait_mb + comm_s + bubble + opt_s
        tokens_per_s = layout.global_batch * self.setup.seq_len / time_s
        peak_total = (self.peak_tflops or 0.0) * 1e12 * layout.gpus
        # the band's P50: the parts stay the model's, time and rates carry the centre
        # (StepTime.centre records it: time_s = parts × centre)
        c = self.centre
        step = StepTime(
            time_s=time_s * c,
            compute_s=compute_s + opt_s,
            communication_s=comm_s,
            bubble_s=bubble,
            tokens_per_s=tokens_per_s / c,
            tokens_per_s_per_gpu=tokens_per_s / layout.gpus / c,
            mfu=self._model_flops * tokens_per_s / peak_total / c,
            hfu=self.flops_at(layout.checkpointing)[2] * tokens_per_s / peak_total / c,
            efficiency=eff,
            calibrated=self._calibrated,
            centre=c,
            host_wait_s=m * host_wait_mb,
            parts_s={
                "compute": compute_s,
                "optimizer": opt_s,
                "tp": m * tp_mb,
                "pp": m * pp_mb,
                "dp_total": dp.total_s,
                "dp_exposed": dp.exposed_s,
                "bubble": bubble,
                "host_wait": m * host_wait_mb,
            },
        )
        if self.ceiling is None:
            return step
        return clip_to_ceiling(step, self.gpu, self.setup.precision, self.ceiling)


def step_model_for(model: AnyModel, setup: TrainingSetup, gpu: GpuSpec, a: PerfAssumptions) -> StepModel:
    """The step model of `model`'s kind on `gpu`: a profile's or a transformer's."""
    if is_profile(model):
        return ProfileStepModel(model, setup, gpu, a)
    return DecoderStepModel(model, setup, gpu, a)
