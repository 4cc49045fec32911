"""Plain dataclasses describing what runs (workload setup) and how it is laid out (layout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from optimizer.model.calibrated import EfficiencyCurve
from optimizer.model.spec import LINEAR_MODULES

__all__ = [
    "TrainingSetup",
    "Layout",
    "ServeSetup",
    "PerfAssumptions",
    "Optimizer",
    "Method",
    "Checkpointing",
    "TrainPrecision",
    "Attention",
    "ATTENTION_KERNELS",
    "OPTIMIZERS",
    "METHODS",
    "CHECKPOINTING",
    "TRAIN_PRECISIONS",
    "WEIGHT_PRECISIONS",
    "KV_PRECISIONS",
    "RECOMPUTE_MODULES",
]

Optimizer = Literal["adamw", "adam-8bit", "sgd", "adafactor"]
Method = Literal["full", "lora", "qlora"]
Checkpointing = Literal["none", "selective", "full"]  # activation recomputation, least first
TrainPrecision = Literal["fp32", "bf16", "fp16", "fp8"]
Attention = Literal["flash", "eager"]
OPTIMIZERS: tuple[str, ...] = get_args(Optimizer)
METHODS: tuple[str, ...] = get_args(Method)
CHECKPOINTING: tuple[str, ...] = get_args(Checkpointing)
TRAIN_PRECISIONS: tuple[str, ...] = get_args(TrainPrecision)
ATTENTION_KERNELS: tuple[str, ...] = get_args(Attention)
#: serving weight formats -> bits per weight (int4: AWQ/GPTQ group-128 with fp16 scale+zero)
WEIGHT_PRECISIONS = {
    "fp32": 32.0,
    "fp16": 16.0,
    "bf16": 16.0,
    "fp8": 8.0,
    "int8": 8.0,
    "int4": 4.0 + 32.0 / 128,
    "awq": 4.0 + 32.0 / 128,
    "gptq": 4.0 + 32.0 / 128,
}

#: Megatron-Core's selective-recompute submodules (transformer_config.py recompute_modules:
#: "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"); this
#: model has no MLA and no shared experts, so those two change nothing here
RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")

#: KV-cache formats (fp8 e4m3 / int8 with per-tensor scales: 1 byte per value)
KV_PRECISIONS = ("fp16", "bf16", "fp8", "int8")


@dataclass(frozen=True)
class TrainingSetup:
    """What is trained: sequence length, precision, optimizer, method (full / LoRA / QLoRA)."""

    seq_len: int
    precision: str = "bf16"  # fp32 | bf16 | fp16 | fp8 (mixed precision with fp32 master weights)
    optimizer: str = "adamw"
    method: str = "full"
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = LINEAR_MODULES
    attention: str | None = "flash"  # flash (no s×s scores) | eager; None: the stack's kernel
    dropout: bool = False  # modern LLM pre-training runs without dropout
    #: Megatron sequence parallelism when tp > 1; None: the stack's default (stacks.toml)
    sequence_parallel: bool | None = None
    offload_optimizer: bool = False  # ZeRO-Offload: master weights + optimizer state in CPU RAM
    offload_params: bool = False  # ZeRO-Infinity: parameters in CPU RAM (needs zero_stage 3)
    #: bitsandbytes paged optimizer (PagedAdamW/PagedAdamW8bit): states in CUDA managed memory
    paged_optimizer: bool = False
    stack: str = "generic"  # software stack profile (optimizer/model/data/stacks.toml)
    #: optimizer step fused into backward (torchtune optimizer_in_bwd); None: stack default
    optimizer_in_backward: bool | None = None
    #: torch.compile: AOTAutograd recomputes pointwise ops, eager-only saved tensors drop
    #: (optimizer.model.activations)
    compile: bool = False
    #: the loss compiled with the model (fused upcast + log-softmax, logits kept in 16 bit);
    #: None: the stack's compile_loss when `compile` is on
    compile_loss: bool | None = None
    #: checkpointed layer inputs offloaded to CPU RAM (torchtune enable_activation_offloading)
    offload_activations: bool = False
    #: layers whose activations live in CPU RAM (Megatron-Core --cpu-offloading-num-layers,
    #: Megatron-Bridge cpu_offloading_num_layers)
    offload_layers: int = 0
    #: LoRA dropout probability; None: the stack's recipe default (stacks.toml lora_dropout)
    lora_dropout: float | None = None
    #: fp32 master weights + fp32 moments; None: the stack's (False: parameters loaded in bf16
    #: without AMP, torch AdamW keeps its states in the parameter dtype)
    fp32_master: bool | None = None
    #: the fp32 master kept as 16-bit remainders of the bf16 weights (Apex DistributedFusedAdam
    #: store_param_remainders: NeMo 1.x `optim.name: distributed_fused_adam` with bf16 O2)
    master_remainders: bool = False
    #: the loss kernel: "cce" = Cut Cross-Entropy (Wijmans et al. 2024, arXiv:2411.09009;
    #: apple/ml-cross-entropy), the logits never materialised; "liger" = Liger Kernel's fused
    #: linear cross-entropy, the tokens' logits one chunk at a time (memory.logits_tokens);
    #: "fused" = a fused softmax cross-entropy on the full logits (flash-attn's, Transformer
    #: Engine's / Megatron's loss fusion): no fp32 copies; "bf16" = an eager cross-entropy on
    #: the 16-bit logits, never upcast (F.cross_entropy on bf16 logits); None: the stack's loss
    loss_kernel: str | None = None
    #: chunks the output projection + loss run in, each chunk's forward and backward before the
    #: next (torchtitan ChunkedCELoss, PR #2937, 2026-04: "Each chunk's loss is backpropagated
    #: through lm_head immediately"): one chunk's logits are held at a time; 1: unchunked
    loss_chunks: int = 1
    #: fused RMSNorm and SwiGLU kernels patched into an eager model (Liger Kernel's
    #: apply_liger_kernel_to_llama, flash-attn's ops.rms_norm / ops.activations.swiglu): each
    #: saves its 16-bit inputs only (no fp32 norm copies, silu recomputed in backward)
    fused_kernels: bool = False
    #: gradients accumulated in fp32 (Megatron main_grad, DeepSpeed BF16_Optimizer); None: the
    #: stack's fp32_grad_buffer. False: DeepSpeed `data_types.grad_accum_dtype: bf16` (2 B)
    fp32_grads: bool | None = None
    #: with selective recompute, the submodules recomputed (Megatron-Core --recompute-modules,
    #: TransformerConfig.recompute_modules: RECOMPUTE_MODULES); (): the stack's selective
    #: recompute (stacks.toml selective_ac; Megatron's default is ["core_attn"])
    recompute_modules: tuple[str, ...] = ()
    #: torch.autocast over fp32 parameters (AMP without a sharded mixed-precision policy): the
    #: 16-bit cast of each trained weight stays cached; None: the stack's autocast_weight_cache
    autocast_weights: bool | None = None
    #: an fp32 run's matmuls on TF32 tensor cores (allow_tf32 / set_float32_matmul_precision
    #: ('high') / NGC's TORCH_ALLOW_TF32_CUBLAS_OVERRIDE); None: on, as an fp32 plan's exported
    #: scripts set it; False: IEEE fp32 on the CUDA cores, PyTorch ≥ 1.12's own default
    tf32: bool | None = None
    #: the output projection's logits gathered whole to every tensor-parallel rank for the loss
    #: (DTensor ColwiseParallel with output_layouts=Replicate()), not vocab-parallel as Megatron's
    #: and torchtitan's loss_parallel keep them: not divided by tp
    logits_gathered: bool = False
    #: eager PyTorch launches each kernel from the host (optimizer.model.dispatch: a micro-batch
    #: takes at least the launches' time); False: a C++/CUDA engine or CUDA graphs; None: as True
    host_launches: bool | None = None
    #: the run never calls optimizer.step() (VectorLM's profiling/benchmark.py calls
    #: Trainer.train_step, whose tr_step stays 0, so every micro-step takes the no_sync branch):
    #: torch optimizers create their states at the first step, so none are ever held
    optimizer_steps: bool = True
    #: gradients set to None after every optimizer step (torch >= 2.0 Optimizer.zero_grad
    #: set_to_none=True) with one micro-batch per step: they are produced during backward and
    #: never held beside the loss's logits at its start (optimizer.model.grad_lifetime)
    grads_freed: bool = False
    #: FSDP gradient accumulation without reduce-scatter on the non-last micro-batches (FSDP2
    #: set_requires_gradient_sync(False), FSDP1 no_sync()): each rank keeps the unsharded
    #: gradients of its whole model between micro-batches, in this dtype (FSDP2 upcasts them to
    #: MixedPrecisionPolicy.reduce_dtype); None: gradients reduce-scattered every micro-batch
    no_sync_grad_dtype: str | None = None
    #: a Hugging Face model trained with use_cache on (its config's default, left on when the
    #: recompute is applied outside HF's gradient_checkpointing flag): every layer's K and V go
    #: into outputs.past_key_values and stay referenced through backward
    kv_cache_kept: bool = False

    def __post_init__(self) -> None:
        unknown = sorted(set(self.recompute_modules) - set(RECOMPUTE_MODULES))
        if unknown:
            raise ValueError(f"recompute_modules: unknown {unknown}; allowed: {', '.join(RECOMPUTE_MODULES)}")

    @property
    def tf32_on(self) -> bool:
        """fp32 matmuls on TF32 tensor cores (`tf32` unset or True; GpuSpec.peak_tflops)."""
        return self.tf32 is not False

    @property
    def is_adapter(self) -> bool:
        return self.method in ("lora", "qlora")


@dataclass(frozen=True)
class Layout:
    """How the job is split over GPUs: dp × tp × pp GPUs, ZeRO stage, checkpointing, batch."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    zero_stage: int = 0
    checkpointing: str = "none"
    micro_batch: int = 1
    grad_accum: int = 1
    cp: int = 1  # context parallelism: the sequence split over cp GPUs (ring attention)
    vp: int = 1  # virtual pipeline stages per GPU (interleaved 1F1B, Narayanan et al. 2021 §2.2.2)
    #: expert parallelism: each MoE layer's experts split over ep GPUs of the data-parallel
    #: group, tokens exchanged all-to-all (Megatron-Core MoE docs, --expert-model-parallel-size;
    #: Lepikhin et al. 2020 "GShard" §2.2); 1: every GPU holds every expert
    ep: int = 1
    #: expert tensor parallelism: each expert's matrices split over etp GPUs (Megatron-Core
    #: --expert-tensor-parallel-size, "Default is None, which will be set to the value of
    #: --tensor-model-parallel-size"); None: tp, as there. Layouts the planner builds keep None.
    etp: int | None = None

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp * self.cp

    @property
    def expert_tp(self) -> int:
        """GPUs each expert's matrices are split over (etp, or tp when unset)."""
        return self.tp if self.etp is None else self.etp

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step."""
        return self.dp * self.micro_batch * self.grad_accum

    def as_dict(self) -> dict[str, int | str]:
        out: dict[str, int | str] = {
            "dp": self.dp,
            "tp": self.tp,
            "pp": self.pp,
            "zero_stage": self.zero_stage,
            "activation_checkpointing": self.checkpointing,
            "micro_batch": self.micro_batch,
            "grad_accum": self.grad_accum,
        }
        if self.cp > 1:
            out["cp"] = self.cp
        if self.vp > 1:
            out["vp"] = self.vp
        if self.ep > 1:
            out["ep"] = self.ep
        if self.expert_tp != self.tp:
            out["etp"] = self.expert_tp
        return out


@dataclass(frozen=True)
class ServeSetup:
    """An inference deployment: weight format, concurrent sequences, tokens per sequence."""

    weight_precision: str = "fp16"
    kv_precision: str = "fp16"  # fp16 | bf16 | fp8 | int8 (KV_PRECISIONS)
    batch: int = 1  # concurrent sequences
    context: int = 2048  # tokens per sequence held in the KV cache (prompt + output)
    prefill_chunk_tokens: int = 8192  # tokens in one prefill pass (vLLM max_num_batched_tokens)
    stack: str = "generic"  # serving stack profile (vllm, tensorrt-llm, tgi, llama.cpp, ...)
    #: KV memory held per sequence: "max" (prompt + output, contiguous) or "average" (paged
    #: attention: blocks of the tokens present, on average prompt + output/2); None: the stack's
    kv_occupancy: str | None = None
    output_tokens: int = 0  # generated tokens per sequence (part of `context`), for "average"
    #: tokens one in-flight-batching iteration may carry (decode + prompt chunks; TensorRT-LLM
    #: max_num_tokens, vLLM max_num_batched_tokens); None: unlimited
    max_num_tokens: int | None = None
    #: "continuous" (requests join as others finish) | "static" (a batch starts together and
    #: runs to its end: TensorRT-LLM gptSessionBenchmark before v0.10); None: continuous
    batching: str | None = None


@dataclass(frozen=True)
class PerfAssumptions:
    """Every guessed constant of the model, in one overridable place.

    Defaults are stated guesses unless a source is named.
    """

    #: device memory outside the allocator (CUDA context, cuBLAS/NCCL); None: the stack's
    #: context_gib (GUESS, stacks.toml)
    overhead_gib: float | None = None
    #: allocator cache, (reserved − allocated) / allocated; None: the stack's allocator_cache
    fragmentation: float | None = None
    #: bytes per logit at the loss; None: the stack's (14: an eager fp32 loss on 16-bit logits)
    logits_bytes_per_value: float | None = None
    workspace_gib: float = 0.25  # GUESS: allocated temporaries (cuBLAS workspace, comm buckets)
    zero3_prefetch_layers: int = 2  # DeepSpeed/FSDP keep ~2 layers gathered (prefetch)
    #: GUESS: layers of checkpointed inputs resident on the GPU with activation offloading
    #: (torchtune OffloadActivations copies each on a side stream as the next layer runs)
    offload_resident_layers: int = 2
    efficiency: float | None = None  # override of achievable compute efficiency (0..1]
    # GUESS: fraction of DP communication hidden behind compute (DDP gradient buckets and
    # FSDP prefetch overlap by design: Li et al. 2020, "PyTorch Distributed", §3.2.3)
    dp_overlap: float | None = None  # None: the stack's dp_overlap (stacks.toml)
    tp_overlap: float | None = None  # None: the stack's
    pp_overlap: float | None = None  # None: the stack's
    cp_overlap: float | None = None  # None: the stack's
    link_efficiency: float = 0.8  # GUESS: achieved / nominal bandwidth for collectives
    #: GPU-to-GPU copies staged through host memory (no peer-to-peer) reach this fraction of
    #: the PCIe link per direction: 3× RTX 4090 on gen 4 x16, p2pBandwidthLatencyTest
    #: "P2P=Disabled" bidirectional 25.6-26.2 GB/s (mean 25.8 → 12.9 per direction of 31.5;
    #: tinygrad/open-gpu-kernel-modules issue 6). Measured on one box; overridable
    host_staged_fraction: float = 0.41
    qlora_dequant_factor: float = 1.25  # GUESS: 4-bit dequantisation slows base matmuls 25%
    bw_efficiency: float = 0.8  # GUESS: achieved fraction of HBM bandwidth in decode
    small_message_latency_s: float = 10e-6  # GUESS: per collective launch latency
    #: GUESS: tokens per expert at which a grouped expert GEMM reaches half its dense-GEMM
    #: efficiency (tiles of 64-128 rows are mostly empty below it; CUTLASS grouped GEMM tiles)
    moe_expert_half_tokens: float = 32.0
    #: GUESS: share of the expert-parallel all-to-all hidden behind compute (Megatron-Core's
    #: 2024 alltoall dispatcher runs it between the router and the expert GEMMs, which wait for
    #: it; overlap came later with --overlap-moe-expert-parallel-comm): none
    ep_overlap: float = 0.0
    cpu_adam_slowdown: float = 20.0  # GUESS: CPU Adam over PCIe (ZeRO-Offload) vs on-GPU update time
    #: (gpu_id, precision) -> base efficiency of any stack: a job's [calibration] table and
    #: stores written before the runs were kept per stack (`entries`)
    calibrated: dict[tuple[str, str], float] = field(default_factory=dict)
    #: (gpu_id, precision, stack) -> the curve fitted to the stored runs (`ccopt calibrate`;
    #: optimizer.model.calibrated); wins over `calibrated` for its stack
    calibrated_curves: dict[tuple[str, str, str], EfficiencyCurve] = field(default_factory=dict)
    #: (gpu_id, precision, stack, GPUs per node, inter-node Gbit/s) -> multiplier of the modelled
    #: communication time on that fabric (before overlap), fitted to stored runs whose communication shares
    #: differ (optimizer.api.calibrate_comm); absent: 1
    calibrated_comm: dict[tuple[str, str, str, int, float], float] = field(default_factory=dict)
    #: (model name, stack) -> factor on the activation bytes fitted to measured peak memory
    #: (`ccopt calibrate --peak-memory-gib`; optimizer.model.memory_fit), any GPU and layout
    memory_calibrated: dict[tuple[str, str], float] = field(default_factory=dict)
    # ---- SampleProfile models (optimizer.model.profile_time) ----
    #: GUESS: a micro-batch of b samples takes (1 + h/b) × the per-sample time of a large one
    #: (small batches under-fill the GPU); h in samples
    sample_batch_half: float = 1.0
    #: GUESS: HBM traffic per saved activation byte in a training step (written in forward,
    #: read in backward, its gradient written and read)
    activation_traffic: float = 4.0
    #: GUESS: (P10, P90) of measured/predicted step time for a profile: on the GPU type it was
    #: measured on, on another type of the same generation, across generations, and with no
    #: measured point (FLOPs at the default efficiency only)
    profile_band_same_gpu: tuple[float, float] = (0.9, 1.15)
    profile_band_same_generation: tuple[float, float] = (0.75, 1.35)
    profile_band_cross_generation: tuple[float, float] = (0.6, 1.7)
    profile_band_unmeasured: tuple[float, float] = (0.5, 3.0)
    #: fitted constants (optimizer.model.fitted.FittedConstants); None: the packaged fit
    fitted: Any = None
    use_fitted: bool = True  # False: the un-fitted model (guessed constants only)
    # GUESS: fp8 GEMMs reach this fraction of the bf16 efficiency at twice the peak
    fp8_gemm_factor: float = 0.8
    # ---- prediction bands and plausibility limits (optimizer/model/bands.py, ceilings.py) ----
    #: GUESS: (P10, P90) of measured/predicted step time where no training run was measured
    #: (a GPU generation × precision with no case): wider than any fitted band (the widest
    #: held-out group, torchtitan on MI300X, ran 1.6-2.1× the prediction: issue 25)
    band_prior: tuple[float, float] = (0.7, 1.6)
    #: evidence (cases) at which a fitted band and its prior weigh the same (shrinkage), and
    #: how many independent cases one source counts as at most (its runs share a stack build,
    #: a cluster and a reading convention). Not measured: chosen (3, 8) among 17 pairs on the
    #: leave-one-family-out coverage of benchmarks/accuracy.py, the pair whose coverage of the
    #: nominal 80% band lands in 70-90% overall and per GPU group (README, "P50 and P90").
    #: Since issue 44 they shrink the calibrated band only (the others are conformal)
    band_prior_cases: float = 8.0
    band_cases_per_source: float = 3.0
    #: GUESS: ceiling on predicted MFU of a GPU generation × precision with fewer than 10
    #: published full-training runs: below the lowest data-backed 16-bit ceiling (H100 0.60,
    #: dgxc-benchmarking 25.02) as consumer/PCIe/AMD parts have no such run in the set
    mfu_ceiling_unmeasured: float = 0.5
    #: GUESS: the same for fp8 (of the fp8 peak; the best H100 fp8 run reached 0.47)
    mfu_ceiling_unmeasured_fp8: float = 0.4
    # GUESS: bytes moved per attention-score element (fwd + bwd) by an eager softmax kernel
    eager_score_bytes: float = 20.0
    #: GUESS: host seconds per kernel an eager training step launches (optimizer.model.dispatch):
    #: the top of the 5-25 µs of Python, autograd, dispatcher and cudaLaunchKernel work per op
    #: (jiahuanglin.xyz gpu_kernel_serving lesson 18, read 2026-12-05), as a training op also
    #: records its autograd node and runs through nn.Module and peft wrappers. Chosen after
    #: reading the host-bound rows of aside10 (Unsloth) and aside11 (CS336): 0 turns it off
    host_s_per_kernel: float = 20e-6
    # ---- the host and the data (optimizer/model/host.py) ----
    #: GUESS: samples/s one vCPU decodes + augments for [data] kind = "image" (JPEG decode +
    #: random-resized crop at ~224 px; NVIDIA DALI's motivation is that CPU decode cannot feed
    #: 8 GPUs of ResNet-50 — the per-core figure itself is not sourced)
    samples_per_s_per_vcpu_image: float = 120.0
    #: GUESS: samples/s one vCPU serves for kind = "text" (pre-tokenized, memory-mapped shards:
    #: a copy and a collate, no decode)
    samples_per_s_per_vcpu_text: float = 2000.0
    #: GUESS: vCPUs kept per GPU process (its Python main loop, NCCL and CUDA threads), not
    #: available to loader workers (one training process per GPU: PyTorch DDP)
    loader_reserve_vcpus_per_gpu: float = 1.0
    #: GUESS: page-locked host RAM per GPU process (pin_memory batches, NCCL/CUDA host buffers)
    pinned_buffer_gib_per_gpu: float = 2.0
    #: GUESS: host RAM per busy loader worker process (its copy of the dataset index + batches)
    loader_worker_ram_gib: float = 1.0
    #: GUESS: hours between checkpoints when [data] does not say (checkpoint_every_hours)
    checkpoint_every_hours: float = 2.0
    #: GUESS: GB/s one instance writes its checkpoint shard at (network storage / object store)
    checkpoint_write_gb_s_per_instance: float = 1.0
    #: GUESS: seconds from an interruption to training again (re-provision, load the checkpoint,
    #: warm up), on top of the lost work since the last checkpoint
    restart_s: float = 600.0
    #: GUESS: checkpoints kept in object storage when [data] does not say (checkpoints_kept)
    checkpoints_kept: int = 2
    # ---- the whole run (optimizer/model/goodput.py) ----
    #: unexpected job interruptions (hardware, network, software) per GPU-day on on-demand,
    #: reserved and owned hardware as on spot; None: the GPU generation's published rate
    #: (model/goodput.MEASURED_FAILURE_RATES: Hopper 4.74e-4 from Llama 3, data-centre Ampere
    #: 5.58e-4 from BLOOM), Hopper's for the others (GUESS)
    failures_per_gpu_day: float | None = None
    #: GUESS: seconds from asking for the instances to all of them booted and reachable (billed:
    #: the instances run while the cluster is assembled); not sourced
    provisioning_s: float = 600.0
    #: GUESS: seconds from booted to the first training step (container image pull, data staging
    #: or mount, framework initialisation and the first compile); Llama 3 §3.3.4 names job
    #: start-up as a goodput cost without a figure
    startup_s: float = 900.0
    #: evaluation time ÷ step time: Megatron-LM's defaults run --eval-iters 100 forward-only
    #: iterations every --eval-interval 1000 (megatron/training/arguments.py), a forward being
    #: 1/3 of a training step's FLOPs (2N of 6N per token, Kaplan et al. 2020 §2.1):
    #: 100 / 1000 / 3 = 0.0333; 0 when the job does not evaluate
    evaluation_share: float = 100 / 1000 / 3
    #: GUESS: GB/s at which the final checkpoint (weights + optimizer states) is read and its
    #: weights written in the release format (e.g. Megatron or DCP to Hugging Face), once, on one
    #: host; 0 skips the conversion
    checkpoint_conversion_gb_s: float = 1.0
    #: GUESS: more on-demand instances of a scarce GPU generation (Hopper, Blackwell) than this, at
    #: once in one region, usually need a capacity reservation (solve/train/capacity_note.py)
    scarce_on_demand_instances: int = 4
    #: GUESS: plans whose costs differ by less than this share are the same price to a team, which
    #: then prefers the one with fewer GPUs (fewer to obtain, fewer to fail); 0 turns it off
    fewer_gpus_within_share: float = 0.02
