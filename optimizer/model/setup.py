"""Plain dataclasses describing what runs (workload setup) and how it is laid out (layout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from optimizer.model.spec import LINEAR_MODULES

__all__ = [
    "TrainingSetup", "Layout", "ServeSetup", "PerfAssumptions",
    "Optimizer", "Method", "Checkpointing", "TrainPrecision", "Attention", "ATTENTION_KERNELS",
    "OPTIMIZERS", "METHODS", "CHECKPOINTING", "TRAIN_PRECISIONS", "TP_DEGREES", "WEIGHT_PRECISIONS",
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
#: tensor-parallel degrees searched (within one node: they must divide its GPUs and the heads)
TP_DEGREES = (1, 2, 4, 8, 16)
#: serving weight formats -> bits per weight (int4: AWQ/GPTQ group-128 with fp16 scale+zero)
WEIGHT_PRECISIONS = {"fp32": 32.0, "fp16": 16.0, "bf16": 16.0, "fp8": 8.0, "int8": 8.0,
                     "int4": 4.0 + 32.0 / 128, "awq": 4.0 + 32.0 / 128, "gptq": 4.0 + 32.0 / 128}


@dataclass(frozen=True)
class TrainingSetup:
    """What is trained: sequence length, precision, optimizer, method (full / LoRA / QLoRA)."""

    seq_len: int
    precision: str = "bf16"  # fp32 | bf16 | fp16 | fp8 (mixed precision with fp32 master weights)
    optimizer: str = "adamw"
    method: str = "full"
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = LINEAR_MODULES
    attention: str = "flash"  # flash (FlashAttention/SDPA, no s×s scores) | eager
    dropout: bool = False  # modern LLM pre-training runs without dropout
    sequence_parallel: bool = True  # Megatron sequence parallelism when tp > 1
    offload_optimizer: bool = False  # ZeRO-Offload: master weights + optimizer state in CPU RAM
    offload_params: bool = False  # ZeRO-Infinity: parameters in CPU RAM (needs zero_stage 3)

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

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step."""
        return self.dp * self.micro_batch * self.grad_accum

    def as_dict(self) -> dict[str, int | str]:
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp, "zero_stage": self.zero_stage,
                "activation_checkpointing": self.checkpointing,
                "micro_batch": self.micro_batch, "grad_accum": self.grad_accum}


@dataclass(frozen=True)
class ServeSetup:
    """An inference deployment: weight format, concurrent sequences, tokens per sequence."""

    weight_precision: str = "fp16"
    kv_precision: str = "fp16"  # fp16 | fp8
    batch: int = 1  # concurrent sequences
    context: int = 2048  # tokens per sequence held in the KV cache (prompt + output)
    prefill_chunk_tokens: int = 8192  # tokens in one prefill pass (vLLM max_num_batched_tokens)


@dataclass(frozen=True)
class PerfAssumptions:
    """Every guessed constant of the model, in one overridable place.

    Defaults are stated guesses unless a source is named.
    """

    overhead_gib: float = 1.0  # GUESS: CUDA context (~0.5 GiB) + NCCL/cuBLAS workspaces
    fragmentation: float = 0.05  # GUESS: allocator fragmentation, fraction of allocated memory
    logits_bytes_per_value: float = 6.0  # GUESS: bf16 logits + fp32 copy for the loss
    zero3_prefetch_layers: int = 2  # DeepSpeed/FSDP keep ~2 layers gathered (prefetch)
    efficiency: float | None = None  # override of achievable compute efficiency (0..1]
    # GUESS: fraction of DP communication hidden behind compute (DDP gradient buckets and
    # FSDP prefetch overlap by design: Li et al. 2020, "PyTorch Distributed", §3.2.3)
    dp_overlap: float = 0.8
    link_efficiency: float = 0.8  # GUESS: achieved / nominal bandwidth for collectives
    qlora_dequant_factor: float = 1.25  # GUESS: 4-bit dequantisation slows base matmuls 25%
    bw_efficiency: float = 0.8  # GUESS: achieved fraction of HBM bandwidth in decode
    small_message_latency_s: float = 10e-6  # GUESS: per collective launch latency
    cpu_adam_slowdown: float = 20.0  # GUESS: CPU Adam over PCIe (ZeRO-Offload) vs on-GPU update time
    calibrated: dict[tuple[str, str], float] = field(default_factory=dict)
