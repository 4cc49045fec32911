"""Validation rows as model cases: each row of benchmarks/validation/*.csv mapped onto the model
functions (optimizer.model), with the row's stack, and predicted in the row's own metric.

Used by fit_constants.py (the fit) and accuracy.py (the scores). Conventions (stated once):
- stack: the row's `stack` column (`other` -> generic); fields the row leaves empty come from
  the stack profile (sequence parallelism, attention kernel, checkpointing, LoRA targets);
- inter-node bandwidth: the row's value, else the GPU class default (optimizer.model.fabric);
- grad_accum = global_batch / (dp · micro_batch) rounded (>= 1); empty zero_stage -> 0,
  optimizer -> adamw, lora_rank -> 16; torchtune rows whose recipe sets optimizer_in_bwd=True
  (stated in the row's assumptions) run with the optimizer step fused into backward; rows
  whose assumptions say `fsdp_cpu_offload: True` offload params + optimizer to CPU, DeepSpeed
  rows stating `offload_optimizer` / `offload_param` with device (or "to") cpu offload those, and
  bitsandbytes PagedAdamW* rows keep optimizer states in managed memory (not allocated);
  `compile=True` / `enable_activation_offloading=True` in the assumptions switch torch.compile
  and torchtune activation offloading on (torchtitan rows: also "torch.compile on" and
  --training.compile; rows of 2024 torchtitan versions ran the loss eager); "eager attention" /
  "flash attention" (FlashAttention, flash-attn) / "dropout 0.1" in the assumptions set the
  attention kernel and dropout masks (a stated kernel wins over the stack's: FlagPerf's
  Megatron-DeepSpeed passes --use-flash-attn-v2 where the 2022 BLOOM profile is eager); rows
  naming Cut Cross-Entropy (apple/ml-cross-entropy, or NeMo AutoModel's FusedLinearCrossEntropy
  built on it) never hold the logits (loss_kernel "cce");
  "cross-entropy on the bf16 logits" is an eager loss never upcast (loss_kernel "bf16"); a loop
  that "never steps the optimizer", "gradients freed after every optimizer step" and "unsharded
  fp32 gradients kept across micro-batches" (FSDP no-sync accumulation) set the gradient and
  optimizer-state lifetimes of optimizer/model/grad_lifetime.py; "use_cache left on" keeps every
  layer's K and V in a Hugging Face model's outputs (activations.kept_kv_bytes);
  rows stating fused norm and SwiGLU kernels save what a compiled model saves;
  "N loss chunks" (torchtitan ChunkedCELoss) hold one chunk's logits; "Compiled Transformer
  blocks and loss" (torchtitan) and a loss the compiled forward computes are compiled losses;
  BERT rows naming *ForSequenceClassification / *ForQuestionAnswering or a SQuAD fine-tune
  carry a task head (no vocabulary logits or FLOPs); the `ep` column splits an MoE model's
  experts over ep data-parallel ranks (it must divide the experts and dp·cp);
  `EXCLUDED: seq_len unknown` rows are skipped, and `EXCLUDED: superseded` ones (a run its
  own source shows measured a defect, fixed and re-measured in the same thread);
- memory is compared in the metric its source reports: allocated -> total, reserved ->
  reserved, nvidia-smi -> device; unstated -> reserved; GB -> GiB × 1e9/2^30;
- throughput metrics: tflops_per_gpu with "hardware ... recompute" in its meaning counts the
  recompute FLOPs, else model FLOPs; mfu against the dense bf16 peak when the meaning names it
  (the fp8 peak when it says 'fp8 dense peak');
- serving: rows without serve_batch from offline / all-at-once runs use the largest batch the
  stack admits (`serving_max_batch`: its KV budget, KV occupancy and scheduler cap, capped by
  the requests of the run; trtllm-bench rows: the engine's max_batch_size and max_num_tokens
  from its build heuristics, trtllm_bench.py); rows whose assumptions say "Static batching"
  (gptSessionBenchmark, TensorRT-LLM < v0.10) run static batches; single-stream rows compare
  1000 / tpot_ms.
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "validation"))
sys.path.insert(0, str(HERE.parent))

from load import Row, load_rows  # noqa: E402
from trtllm_bench import engine_settings  # noqa: E402

from optimizer.errors import ConfigError  # noqa: E402
from optimizer.inputs.gpus import get_gpu  # noqa: E402
from optimizer.model.fabric import default_inter_node_gbps  # noqa: E402
from optimizer.model.flops import model_flops_per_token, training_flops_per_token  # noqa: E402
from optimizer.model.hardware import GpuSpec  # noqa: E402
from optimizer.model.memory import training_memory  # noqa: E402
from optimizer.model.presets import PRESETS  # noqa: E402
from optimizer.model.serving import serving_max_batch, serving_perf  # noqa: E402
from optimizer.model.setup import RECOMPUTE_MODULES, Layout, PerfAssumptions, ServeSetup, TrainingSetup  # noqa: E402
from optimizer.model.spec import LINEAR_MODULES, ModelSpec  # noqa: E402
from optimizer.model.stacks import get_stack  # noqa: E402
from optimizer.model.step_time import Cluster, training_step_time  # noqa: E402
from optimizer.units import GIB  # noqa: E402

__all__ = ["Case", "Skip", "build_cases", "predict", "BANDS", "load_rows"]

BANDS = {
    "train_throughput": 0.15,
    "train_throughput_encoder": 0.15,
    "train_memory": 0.15,
    "serve_throughput": 0.20,
    "serve_latency": 0.20,
}
MAX_FIT_BATCH_CAP = 8192


class Skip(Exception):
    """The row cannot be mapped onto the model; the message is the reason."""


@dataclass(frozen=True)
class Case:
    """One mapped row: everything the model needs, plus the measured value in model units."""

    row: Row
    kind: str
    measured: float
    spec: ModelSpec
    gpu: GpuSpec
    train: tuple[TrainingSetup, Layout, Cluster] | None = None
    serve: tuple[ServeSetup, int, int, int] | None = None  # setup, tp, prompt, output
    memory_kind: str = ""
    single_stream: bool = False

    @property
    def source(self) -> str:
        return self.row.source_id

    @property
    def stack(self) -> str:
        return (
            (self.train[0].stack if self.train else self.serve[0].stack)
            if (self.train or self.serve)
            else "generic"
        )

    @property
    def encoder(self) -> bool:
        """A bidirectional encoder (BERT family): scored apart from decoder LMs (accuracy.py),
        because the model's efficiency is that of a causal decoder LM (no LAMB; fine-tunes
        with a task head are charged no vocabulary logits: _head) and nearly all its V100
        data are BERT."""
        return "bert" in self.row.model.lower()

    @property
    def score_kind(self) -> str:
        """The family the case is scored in: its kind, with training throughput of encoder
        models apart (`train_throughput_encoder`)."""
        if self.kind == "train_throughput" and self.encoder:
            return "train_throughput_encoder"
        return self.kind

    @property
    def speed_like(self) -> bool:
        """True when a bigger value means faster (so log(measured/predicted) is a speed ratio)."""
        return self.row.metric not in ("step_time_s", "tpot_ms", "ttft_ms", "e2e_latency_s")


def _lower(text: str | None) -> str:
    return (text or "").lower()


def _stack(row: Row) -> str:
    name = row.stack if row.stack and row.stack != "other" else "generic"
    try:
        return get_stack(name).name
    except ConfigError:
        return "generic"


def _tied(row: Row) -> bool:
    """Input and output embeddings share one tensor in memory: the row says the model ties them
    and the stack keeps the tie (litgpt's convert_hf_checkpoint copies wte into a separate
    lm_head: scripts/convert_hf_checkpoint.py at 00af8b0d)."""
    text = f"{row.model} {row.assumptions or ''}".lower()
    return "tied embeddings" in text and "untied" not in text and row.stack != "litgpt"


#: a fine-tune whose output layer is a task head, not the vocabulary projection: transformers
#: *ForSequenceClassification / *ForQuestionAnswering (qa_outputs = Linear(hidden, 2))
_TASK_HEAD = re.compile(r"forsequenceclassification|forquestionanswering|qa head|classification head")


def _head(row: Row) -> str:
    """ "task" when the row names a task head (model, assumptions or where it was read), or is
    an encoder (BERT) fine-tuned on SQuAD (a span head; a decoder's SQuAD SFT keeps its LM
    head), else "lm"."""
    text = f"{row.model} {row.assumptions or ''} {row.source_where or ''}".lower()
    squad_encoder = "bert" in row.model.lower() and "squad" in text
    return "task" if _TASK_HEAD.search(text) or squad_encoder else "lm"


def _spec(row: Row) -> ModelSpec:
    if row.model in PRESETS:
        spec = PRESETS[row.model]
        head = _head(row)
        return spec if head == spec.head else ModelSpec(**{**spec.model_dump(), "head": head})
    if "encoder-decoder" in row.model.lower():
        raise Skip("encoder-decoder model (not modelled)")
    shape = (row.layers, row.hidden, row.heads, row.ffn, row.vocab)
    if any(v is None for v in shape):
        raise Skip("model shape incomplete")
    plain = (row.ffn_kind or "gated") == "plain"
    try:
        return ModelSpec(
            name=row.model[:60],
            layers=row.layers,
            hidden=row.hidden,
            heads=row.heads,
            kv_heads=row.kv_heads,
            head_dim=row.head_dim,
            ffn=row.ffn,
            vocab=row.vocab,
            ffn_kind="plain" if plain else "gated",
            norm="layernorm" if plain else "rmsnorm",
            tied_embeddings=_tied(row),
            moe_experts=row.moe_experts or 0,
            moe_active=row.moe_active or 0,
            head=_head(row),
        )
    except ValueError as exc:
        raise Skip(f"model shape invalid ({str(exc).splitlines()[0][:50]})") from None


def _gpu(row: Row) -> GpuSpec:
    if not row.gpu:
        raise Skip("unknown GPU (empty)")
    try:
        return get_gpu(row.gpu)
    except Exception:  # noqa: BLE001 - catalogue lookups raise their own error types
        raise Skip(f"unknown GPU ({row.gpu})") from None


def _targets(raw: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    if not raw:
        return default
    names: list[str] = []
    for t in raw.replace(";", ",").split(","):
        t = t.strip().lower()
        if t == "all":
            return LINEAR_MODULES
        names += {"mlp": ["gate", "up", "down"], "qkv": ["q", "k", "v"]}.get(t, [t])
    kept = tuple(dict.fromkeys(n for n in names if n in LINEAR_MODULES))
    return kept or default


def _memory_kind(meaning: str) -> str:
    if meaning.startswith("reserved") or "max_memory_reserved" in meaning.split(";")[0]:
        return "reserved"
    if meaning.startswith("nvidia-smi") or "nvidia-smi" in meaning.split(".")[0]:
        return "device"
    if "allocated" in meaning.split(":")[0]:  # the first clause names the allocated peak
        return "allocated"
    if "does not say" in meaning or "not stated" in meaning:
        return "reserved"
    if "allocated" in meaning or "active" in meaning:
        return "allocated"
    return "reserved"


def _train_case(row: Row) -> Case:
    gpu, spec = _gpu(row), _spec(row)
    ep = row.ep or 1
    if ep > 1 and (not spec.is_moe or spec.moe_experts % ep):
        raise Skip("ep > 1 needs an MoE model whose experts it divides")
    tp, pp, mb, gpus, s = row.tp, row.pp, row.micro_batch, row.num_gpus, row.seq_len
    if tp is None or pp is None or mb is None or gpus is None or s is None:
        raise Skip("missing tp/pp/micro_batch/num_gpus/seq_len")
    meaning, metric = _lower(row.metric_meaning), row.metric
    if metric == "peak_memory_gb" and "not a measured peak" in meaning:
        raise Skip("memory row is a fit boundary, not a measurement")
    if meaning.startswith("device count unknown"):
        raise Skip("device count of the measurement unknown (source inconsistent)")
    if "excluded: seq_len unknown" in _lower(row.assumptions):
        raise Skip("sequence length of the measurement unknown (unpacked, lengths not given)")
    if "excluded: superseded" in _lower(row.assumptions):
        raise Skip("a measurement of a defect its source fixed and re-measured (the row says)")
    if metric == "tflops_per_gpu" and not (
        "model" in meaning or ("hardware" in meaning and "recompute" in meaning)
    ):
        raise Skip("tflops_per_gpu: FLOP convention unclear")
    if metric not in (
        "tokens_per_s_per_gpu",
        "tflops_per_gpu",
        "mfu",
        "step_time_s",
        "samples_per_s",
        "peak_memory_gib",
        "peak_memory_gb",
    ):
        raise Skip(f"metric {metric} not comparable for training")
    if spec.heads % tp or spec.n_kv_heads % tp:
        raise Skip("tp does not divide the heads")
    cp, vp = row.cp or 1, row.vp or 1
    if gpus % (tp * pp * cp):
        raise Skip("num_gpus not a multiple of tp·pp·cp")
    dp = gpus // (tp * pp * cp)
    if (dp * cp) % ep:
        raise Skip("ep does not divide dp·cp")
    ga = 1
    if row.global_batch is not None:
        ga = max(1, round(row.global_batch / (dp * mb)))
    stack = get_stack(_stack(row))
    precision = row.precision or "bf16"
    if not gpu.supports(precision) and not metric.startswith("peak_memory"):
        raise Skip(f"GPU has no {precision} tensor path")
    said = _lower(row.assumptions).replace(" ", "")
    opt_bwd = True if "optimizer_in_bwd=true" in said else None
    # FSDP CPUOffload (torchtune fsdp_cpu_offload: True): sharded params, grads and optimizer
    # states live in CPU memory; bitsandbytes Paged* optimizers keep states in managed memory
    cpu_offload = "fsdp_cpu_offload:true" in said or "param+optimizeroffload" in said
    # DeepSpeed ZeRO-Offload as a row states its config: offload_optimizer / offload_param with
    # device cpu ("... and offload_optimizer to CPU" names both; "device none" is no offload)
    ds_both = re.search(r"offload_param(?:device|to)?andoffload_optimizer(?:device|to)cpu", said)
    ds_optimizer = ds_both or re.search(r"offload_optimizer(?:device|to)cpu", said)
    ds_params = ds_both or re.search(r"offload_param(?:device|to)cpu", said)
    # parameters loaded in bf16 without AMP: torch AdamW keeps bf16 states, no fp32 master
    master = False if "nofp32master" in said else None
    # NeMo 1.x distributed_fused_adam keeps the fp32 master as 16-bit remainders (the row says)
    remainders = "store_param_remainders" in said
    paged = "pagedadamw" in said
    # DeepSpeed config data_types.grad_accum_dtype (docs: "gradient accumulation data type"):
    # bf16 accumulation keeps 2-byte gradients instead of BF16_Optimizer's fp32 ones
    bf16_grads = "grad_accum_dtypebf16" in said
    # Megatron grad_reduce_in_fp32 (Megatron-Bridge's bf16_mixed default; NeMo's performance
    # recipes turn it off): fp32 main_grad buffers, 4-byte gradients, as the row says
    fp32_reduce = "grad_reduce_in_fp32=true" in said or "grad_reduce_in_fp32:true" in said
    # torch.compile and torchtune activation offloading, as the row says they were on
    compiled = "compile=true" in said
    # fused norm and SwiGLU kernels stated by the row (the TinyLlama fork of lit-gpt) save
    # what a compiled model saves: no eager fp32 norm / SwiGLU tensors (model/activations.py)
    compiled = compiled or ("fusedlayernorm/rmsnorm" in said and "fusedswiglu" in said)
    compile_loss = None
    if stack.name == "torchtitan":
        # torchtitan rows state compile as the toml/flag says it ("torch.compile on",
        # --training.compile); torchtitan compiles the loss with the model since 2025
        # (components/loss.py), its 2024 train.py left it eager (TODO: CUDA errors)
        stated = said + _lower(row.quote).replace(" ", "")
        compiled = compiled or "torch.compileon" in stated or "--training.compile" in stated
        compiled = compiled or "compiledtransformerblocksandloss" in stated
        compile_loss = None if "2024" not in (row.stack_version or "") else False
    # a loss computed inside the compiled model's forward (nanochat GPT.forward returns the
    # loss) is compiled with it, whatever the stack's default
    if compiled and ("forwardcomputestheloss" in said or "compile_loss=true" in said):
        compile_loss = True  # OLMo-core: compile_loss=True beside compile_model
    offload_acts = "enable_activation_offloading=true" in said
    # Megatron-Core activation CPU offloading of N layers, as the row states the recipe's
    offloaded = re.search(r"cpu_offloading_num_layers=(\d+)", said)
    # attention kernel and dropout as the row states them (BERT rows of the transformers 4.2x
    # era: eager attention, hidden/attention dropout 0.1); unstated -> the stack's kernel, none
    notes = _lower(row.assumptions)
    eager = "eager attention" in notes
    flash = not eager and re.search(r"(?<!no )flash[- ]?attention|flash-attn", notes) is not None
    # Cut Cross-Entropy (Wijmans et al. 2024, arXiv:2411.09009; apple/ml-cross-entropy) computes
    # the loss blockwise from the hidden states: the logits are never materialised. NeMo
    # AutoModel's FusedLinearCrossEntropy (components/loss/linear_ce.py) is that kernel: it
    # requires the cut_cross_entropy package (NVIDIA-NeMo/RL docs/fused-linear-cross-entropy-
    # integration.md, "Prerequisites")
    cce = re.search(r"ml-cross-entropy|cut[- ]cross[- ]entropy|fusedlinearcrossentropy", notes) is not None
    # a fused softmax cross-entropy kernel on the full logits, as the row names it (TinyLlama's
    # "fused cross entropy", whyNLP's tiny_fused_crossentropy, Megatron/TE loss fusion)
    fused_ce = (
        re.search(r"fused[ _]cross[- ]?entropy|cross[-_ ]entropy[-_ ](loss[-_ ])?fusion", notes) is not None
    )
    dropout = re.search(r"(?<!lora_)dropout (0\.\d*[1-9])", notes) is not None
    # a loss run chunk by chunk ("Eight loss chunks": torchtitan ChunkedCELoss), as stated
    chunks = re.search(r"\b(\d+|two|four|eight|sixteen) loss chunks", notes + " " + _lower(row.quote))
    words = {"two": 2, "four": 4, "eight": 8, "sixteen": 16}
    loss_chunks = (words.get(chunks.group(1)) or int(chunks.group(1))) if chunks else 1
    # fused RMSNorm + SwiGLU patched into an eager model (Liger Kernel, flash-attn's ops), as the
    # row's stack or notes name them
    kernels = f"{notes} {_lower(row.stack_version)}"
    fused = re.search(r"liger|fused rmsnorm[^|;]*swiglu", kernels) is not None
    # Megatron-Core --recompute-modules and --expert-tensor-parallel-size, as the row states them
    names = "|".join(RECOMPUTE_MODULES)
    modules = re.search(rf"--recompute-modules ((?:(?:{names})\b ?)+)", notes)
    # (torchtitan's expert_tensor_parallel_degree first: a row's history of earlier runs may name
    # another "etp N")
    etp = re.search(r"expert_tensor_parallel_degree:? (\d+)()", notes) or re.search(
        r"--expert-tensor-parallel-size:? (\d+)|\betp (\d+)\b", notes
    )
    # an fp32 run's TF32 matmuls, as the row states them (none stated: on, NGC's default)
    tf32_off = re.search(r"tf32 (?:off|not enabled|matmul off)|no tf32|allow_tf32 = false", notes)
    tf32_on = re.search(
        r"tf32 on|with tf32 matmuls|float32_matmul_precision\('high'\)|allow_tf32 = true", notes
    )
    # logits gathered whole to every tensor-parallel rank for the loss, as the row states it
    gathered = re.search(
        r"logits are gathered to every tp rank|gather(?:ed)? to replicate for (?:the )?loss", notes
    )
    # torch.autocast over fp32 parameters, as the row states it (its weight-cast cache)
    autocast = re.search(r"torch autocast[^.;]*fp32 param|autocast over fp32 param", notes) is not None
    # kernels not launched one by one from Python, as the row states it: a C++/CUDA engine,
    # JAX/XLA, or whole-step CUDA graphs (optimizer.model.dispatch; "cuda graphs on attention
    # and router" captures a part only and keeps the floor)
    engine = re.search(
        r"c\+\+/cuda training engine|cuda/c\+\+ trainer|jax/xla|full cuda graphs|"
        r"cuda_graphs 1\b|use_cuda_graphs true",
        kernels,
    )
    # what the row's loop does with its gradients and optimizer, as stated (grad_lifetime.py)
    no_step = "never steps the optimizer" in notes
    freed = "gradients freed after every optimizer step" in notes
    no_sync = re.search(r"unsharded (fp32|bf16) gradients kept across micro-batches", notes)
    bf16_loss = re.search(r"cross[- ]entropy on the (?:16-bit|bf16) logits", notes) is not None
    kv_kept = "use_cache left on" in notes
    setup = TrainingSetup(
        seq_len=s,
        precision=precision,
        optimizer=row.optimizer or "adamw",
        method=row.method or "full",
        lora_rank=row.lora_rank or 16,
        lora_targets=_targets(row.lora_targets, stack.lora_targets),
        attention="eager" if eager else ("flash" if flash else None),
        dropout=dropout,
        sequence_parallel=row.sequence_parallel,
        stack=stack.name,
        optimizer_in_backward=opt_bwd,
        offload_optimizer=cpu_offload or ds_optimizer is not None,
        offload_params=cpu_offload or ds_params is not None,
        paged_optimizer=paged,
        compile=compiled,
        compile_loss=compile_loss,
        offload_activations=offload_acts,
        offload_layers=int(offloaded.group(1)) if offloaded else 0,
        fp32_master=master,
        master_remainders=remainders,
        loss_kernel=_loss_kernel(cce, "liger" in kernels, fused_ce, bf16_loss),
        loss_chunks=loss_chunks,
        fused_kernels=fused,
        fp32_grads=False if bf16_grads else (True if fp32_reduce else None),
        recompute_modules=tuple(modules.group(1).split()) if modules else (),
        autocast_weights=True if autocast else None,
        tf32=True if tf32_on else (False if tf32_off else None),
        logits_gathered=gathered is not None,
        host_launches=False if engine else None,
        optimizer_steps=not no_step,
        grads_freed=freed,
        no_sync_grad_dtype=no_sync.group(1) if no_sync else None,
        kv_cache_kept=kv_kept,
    )
    layout = Layout(
        dp=dp,
        tp=tp,
        pp=pp,
        cp=cp,
        vp=vp,
        zero_stage=row.zero_stage or 0,
        checkpointing=row.activation_checkpointing or stack.checkpointing,
        micro_batch=mb,
        grad_accum=ga,
        ep=ep,
        etp=int(etp.group(1) or etp.group(2)) if etp else None,
    )
    gpn = min(row.gpus_per_node or min(gpus, 8), gpus)
    if gpus % gpn or tp > gpn:
        raise Skip("gpus_per_node inconsistent")
    gbps = row.inter_node_gbps or default_inter_node_gbps(gpu)
    cluster = Cluster(gpu, gpn, gpus // gpn, gbps)
    measured = row.value
    kind, mem_kind = row.kind, ""
    if metric.startswith("peak_memory"):
        mem_kind = _memory_kind(meaning)
        if metric == "peak_memory_gb":
            measured = row.value * 1e9 / GIB
    return Case(row, kind, measured, spec, gpu, train=(setup, layout, cluster), memory_kind=mem_kind)


def _request_cap(row: Row) -> int:
    text = f"{row.metric_meaning or ''} {row.assumptions or ''}"
    counts = [int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) (?:synthetic )?requests", text)]
    counts += [int(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*) prompts", text)]
    return min([MAX_FIT_BATCH_CAP] + [c for c in counts if c > 0])


def _all_at_once(meaning: str) -> bool:
    return any(
        s in meaning
        for s in ("max-throughput", "offline", "at once", "qps inf", "infinite rate", "infinite request rate")
    )


def _serve_case(row: Row) -> Case:
    gpu, spec = _gpu(row), _spec(row)
    if spec.is_moe and (row.ep or 1) > 1:
        raise Skip("MoE with expert parallelism (ep > 1)")
    if row.tp is None:
        raise Skip("missing tp")
    if (row.pp or 1) > 1:
        raise Skip("serving with pp > 1 (not modelled)")
    meaning = _lower(row.metric_meaning)
    if "ambiguous" in meaning:
        raise Skip("serving metric ambiguous (total vs per GPU)")
    single = "single-stream" in meaning
    if row.output_tokens is None or (row.input_tokens is None and not single):
        raise Skip("missing input/output tokens")
    if row.metric not in (
        "output_tokens_per_s",
        "output_tokens_per_s_per_gpu",
        "requests_per_s",
        "ttft_ms",
        "tpot_ms",
        "e2e_latency_s",
    ):
        raise Skip(f"metric {row.metric} not comparable for serving")
    if spec.heads % row.tp or spec.n_kv_heads % row.tp:
        raise Skip("tp does not divide the heads")
    prompt, out = row.input_tokens or 1, row.output_tokens
    quant = (row.weight_precision or row.precision or "fp16").lower()
    kv = (row.kv_cache_precision or "fp16").lower()
    stack = _stack(row)
    notes = _lower(row.assumptions)
    serve = ServeSetup(
        weight_precision=quant,
        kv_precision=kv,
        batch=1,
        context=prompt + out,
        stack=stack,
        output_tokens=out,
        batching="static" if "static batching" in notes else None,
    )
    batch = row.serve_batch
    if batch is None:
        if single:
            batch = 1
        elif _all_at_once(meaning):
            cap = _request_cap(row)
            if stack == "tensorrt-llm" and "trtllm-bench" in notes:
                # the engine trtllm-bench builds from the dataset (benchmarks/trtllm_bench.py)
                cap, budget = engine_settings(spec, gpu, row.tp, prompt, out, quant == "fp8", kv == "fp8")
                serve = replace(serve, max_num_tokens=budget)
            batch = serving_max_batch(spec, serve, gpu, row.tp, PerfAssumptions(), cap=cap)
            if batch < 1:
                raise Skip("model does not fit at batch 1")
        else:
            raise Skip("serve batch / concurrency not stated (arrival-rate run)")
    return Case(
        row,
        row.kind,
        row.value,
        spec,
        gpu,
        serve=(replace(serve, batch=batch), row.tp, prompt, out),
        single_stream=single,
    )


def build_cases(rows: list[Row] | None = None) -> tuple[list[Case], dict[str, list[Row]]]:
    """(mapped cases, {skip reason: rows}) of the validation set."""
    cases: list[Case] = []
    skipped: dict[str, list[Row]] = {}
    for row in rows if rows is not None else load_rows():
        try:
            if row.kind.startswith("train"):
                cases.append(_train_case(row))
            elif row.kind.startswith("serve"):
                cases.append(_serve_case(row))
            else:
                raise Skip(f"unknown kind {row.kind}")
        except (Skip, ConfigError) as exc:
            skipped.setdefault(str(exc)[:70], []).append(row)
    return cases, skipped


def _train_value(case: Case, a: PerfAssumptions) -> float:
    assert case.train is not None
    setup, layout, cluster = case.train
    metric, meaning = case.row.metric, _lower(case.row.metric_meaning)
    if metric.startswith("peak_memory"):
        return training_memory(case.spec, setup, layout, a).metric(case.memory_kind)
    step = training_step_time(case.spec, setup, layout, cluster, a)
    tps = step.tokens_per_s_per_gpu
    if metric == "tokens_per_s_per_gpu":
        return tps
    if metric == "step_time_s":
        return step.time_s
    if metric == "samples_per_s":
        return step.tokens_per_s / setup.seq_len
    if metric == "tflops_per_gpu":
        if "hardware" in meaning and "recompute" in meaning:
            return training_flops_per_token(case.spec, setup, layout.checkpointing) * tps / 1e12
        return model_flops_per_token(case.spec, setup) * tps / 1e12
    if "fp8 dense peak" in meaning:
        return step.mfu  # against the peak of the run's precision (fp8)
    if any(s in meaning for s in ("312", "989", "bf16")) and case.gpu.bf16_tflops:
        return model_flops_per_token(case.spec, setup) * tps / (case.gpu.bf16_tflops * 1e12)
    return step.mfu


def _serve_value(case: Case, a: PerfAssumptions) -> float:
    assert case.serve is not None
    serve, tp, prompt, out = case.serve
    perf = serving_perf(case.spec, serve, case.gpu, tp, prompt, out, a)
    metric = case.row.metric
    gpus = case.row.num_gpus or tp
    replicas = max(1, gpus // tp)
    if case.single_stream:
        return 1.0 / perf.tpot_s
    return {
        "output_tokens_per_s": perf.output_tokens_per_s * replicas,
        "output_tokens_per_s_per_gpu": perf.output_tokens_per_s / tp,
        "requests_per_s": perf.requests_per_s * replicas,
        "ttft_ms": perf.ttft_s * 1e3,
        "tpot_ms": perf.tpot_s * 1e3,
        "e2e_latency_s": perf.ttft_s + (out - 1) * perf.tpot_s,
    }[metric]


def _loss_kernel(cce: bool, liger: bool, fused: bool, bf16: bool) -> str | None:
    """The loss kernel a row states, most specific first (TrainingSetup.loss_kernel)."""
    for name, said in (("cce", cce), ("liger", liger), ("fused", fused), ("bf16", bf16)):
        if said:
            return name
    return None


def predict(case: Case, a: PerfAssumptions) -> float | None:
    """The model's value for the case's metric under assumptions `a` (None if not finite)."""
    try:
        value = _train_value(case, a) if case.train else _serve_value(case, a)
    except (ConfigError, ZeroDivisionError, ValueError):
        return None
    return value if value > 0 and math.isfinite(value) else None


def log_ratio(case: Case, predicted: float) -> float:
    """log(measured / predicted) oriented as speed: > 0 means the run was faster than predicted
    (for latency / step-time metrics the ratio is inverted)."""
    r = math.log(case.measured / predicted)
    return r if case.speed_like else -r


def describe(case: Case) -> dict[str, Any]:
    """Short fields for per-case tables."""
    return {
        "case_id": case.row.case_id,
        "source": case.source,
        "kind": case.kind,
        "metric": case.row.metric,
        "gpu": case.gpu.gpu_id,
        "stack": case.stack,
    }
