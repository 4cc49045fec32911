"""Published measurements for benchmarks/accuracy.py, each citing its primary source.

Conventions used in every case
------------------------------
* ``gpu`` is a ccopt catalog id (pricing_data/gpus.csv).  Where the measured
  hardware is not exactly a catalog GPU, ``gpu_note`` says so.
* ``zero_stage``: 0 = plain DDP / replicated optimizer, 1 = optimizer states
  sharded (Megatron "distributed optimizer"), 2 = + gradients, 3 = + parameters
  (PyTorch FSDP FULL_SHARD / FSDP2 ``fully_shard``).
* ``checkpointing``: "none" | "selective" | "full" (activation recomputation).
* ``precision``: "bf16" | "fp16" | "fp8" | "fp32".  "fp8" means FP8 GEMMs
  (Transformer Engine / torchao float8) with bf16 elsewhere.
* ``cp`` (context parallel degree) is given where the source uses it; absent
  means 1.  gpus == tp * pp * cp * dp always holds.
* ``confidence``: "high" = every field is in the source (or its config file at
  the cited commit); "medium" = one or two fields come from a strong
  convention (listed in ``assumptions``); "low" = the configuration is mostly
  unpublished and the case only checks an order of magnitude.
* Units: "GB" = 1e9 bytes, "GiB" = 2**30 bytes, "MiB" = 2**20 bytes.

Shape dicts (non-preset models) follow the ccopt format:
``{layers, hidden, heads, kv_heads, ffn, vocab, ffn_kind}``.
"""

# ---------------------------------------------------------------------------
# Explicit shapes for non-preset models
# ---------------------------------------------------------------------------

# MosaicML llm-foundry MPT benchmark models (scripts/train/yamls/pretrain/mpt-*.yaml).
# expansion_ratio 4 -> ffn = 4 * d_model, GELU MLP, vocab 50368, MHA.
# Note: the benchmark runs did not set alibi, so llm-foundry's defaults apply
# (learned positional embedding of max_seq_len x d_model, biases on); the
# NumParams column (e.g. 6,658,859,008 for 7b at seq 2048) includes them.
MPT_7B = dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=16384, vocab=50368, ffn_kind="gelu")
MPT_13B = dict(layers=40, hidden=5120, heads=40, kv_heads=40, ffn=20480, vocab=50368, ffn_kind="gelu")
MPT_30B = dict(layers=48, hidden=7168, heads=56, kv_heads=56, ffn=28672, vocab=50368, ffn_kind="gelu")
MPT_70B = dict(layers=80, hidden=8192, heads=64, kv_heads=64, ffn=32768, vocab=50368, ffn_kind="gelu")

# google-bert/bert-large-uncased (encoder; 24 layers, 1024 hidden, 16 heads, 4096 FFN, vocab 30522).
BERT_LARGE = dict(layers=24, hidden=1024, heads=16, kv_heads=16, ffn=4096, vocab=30522, ffn_kind="gelu")

_LLMF = ("https://github.com/mosaicml/llm-foundry/blob/061f2c7ce64e655100286584a7629e2a09f827ba/"
         "scripts/train/benchmarking/README.md")
_LLMF_ASSUME = ("MPT model shape from scripts/train/yamls/pretrain/mpt-<size>.yaml; optimizer decoupled_adamw "
                "(yaml); flash attention (submit_benchmarks.py default attn_impl). Node = 8 GPUs.")
_TITAN_A100 = ("https://github.com/pytorch/torchtitan/blob/041336434916bdc0f88c1f89fda176fd3c2092e4/"
               "docs/performance.md")
_TITAN_H100 = ("https://github.com/pytorch/torchtitan/blob/eaea6f6a2fa940f03a10906be1df3489cf30af85/"
               "docs/performance.md")
_TITAN_H100_NOTE = ("Grand Teton H100 SXM with 96GB HBM2e, 2.4 TB/s, run at 500 W power limit "
                    "(not a catalog GPU; nearest id H100-80GB used)")
_NEMO = ("https://github.com/NVIDIA/NeMo/blob/070a0bb168d405d653b9734c0017cf5078e77c0d/"
         "docs/source/performance/performance_summary.md (NeMo 24.07, DGX-H100, FP8)")
_NEMO_ASSUME = ("NeMo/Megatron-Core defaults for these perf recipes: distributed optimizer (ZeRO-1 style, "
                "zero_stage=1), no activation recomputation, AdamW with fp32 master weights; not restated on the "
                "page. Node = 8 GPUs (DGX-H100).")
_BRIDGE = ("https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/00b7660be0254ac6f95f44164ddd0c3e9cc798ed/"
           "docs/performance-summary.md (25.11 NeMo container, System: DGX-H100)")
_LITGPT = ("https://github.com/Lightning-AI/litgpt/blob/03ffc5515b251fb7e3a461efd0e3c163e45b6b3b/"
           "config_hub/finetune/README.md")
_LITGPT_ASSUME = ("LitGPT 'Peak memory' is torch.cuda.max_memory_allocated()/1e9 (decimal GB, allocated not "
                  "reserved). Sequences are padded to the longest sample in the batch, capped at max_seq_length "
                  "512; peak assumed at a full 512-token batch. LitGPT LoRA recipe uses no activation "
                  "checkpointing. bf16-true: frozen weights, LoRA weights and AdamW states all in bf16.")
_TTUNE = ("https://github.com/pytorch/torchtune/blob/0031bfb080bd35ec533c412df883cf2bf7bf7fe4/README.md "
          "('Memory and training speed' table)")
_TRTLLM = ("https://github.com/NVIDIA/TensorRT-LLM/blob/138f96d45f90b9667426f7c47297d8c06bafac73/"
           "docs/source/performance.md")
_TRTLLM_ASSUME = ("Static-batch gptSessionBenchmark (all sequences start together, fixed input/output lengths). "
                  "'LLaMA 7B/70B' = Llama-2-7b/70b per the doc's methodology section. ")

# ---------------------------------------------------------------------------
# MEMORY
# ---------------------------------------------------------------------------

MEMORY_CASES = [
    # ---- LitGPT config_hub finetune table, 1x A10G ----------------------------------------------
    dict(id="litgpt-llama2-7b-lora-a10g", model="llama-2-7b", gpu="A10G", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=2, global_batch=8, seq_len=512, precision="bf16",
         method="lora", optimizer="adamw", lora_rank=32, lora_targets="q,v",
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=19.77, unit="GB", what="peak memory per GPU (max_memory_allocated)",
         source=_LITGPT + " + config_hub/finetune/llama-2-7b/lora.yaml",
         quote="llama-2-7b/lora.yaml | 512 max seq | micro batch 2 | 1xA10G | Peak memory 19.77 GB",
         assumptions=_LITGPT_ASSUME + " lora_r=32 on query+value only (yaml).",
         confidence="medium"),
    dict(id="litgpt-llama2-7b-qlora-a10g", model="llama-2-7b", gpu="A10G", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=2, global_batch=8, seq_len=512, precision="bf16",
         method="qlora", optimizer="adamw", lora_rank=32, lora_targets="q,v",
         mode="train", serve_batch=None, context=None, weight_bits=4,
         measured=13.68, unit="GB", what="peak memory per GPU (max_memory_allocated)",
         source=_LITGPT + " + config_hub/finetune/llama-2-7b/qlora.yaml",
         quote="llama-2-7b/qlora.yaml | 512 max seq | micro batch 2 | 1xA10G | Peak memory 13.68 GB",
         assumptions=_LITGPT_ASSUME + " quantize: bnb.nf4 (no double quant); lora_r=32 on query+value.",
         confidence="low"),
    dict(id="litgpt-llama3-8b-lora-a10g", model="llama-3-8b", gpu="A10G", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=1, global_batch=8, seq_len=512, precision="bf16",
         method="lora", optimizer="adamw", lora_rank=32, lora_targets="q,v",
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=19.73, unit="GB", what="peak memory per GPU (max_memory_allocated)",
         source=_LITGPT + " + config_hub/finetune/llama-3-8b/lora.yaml",
         quote="llama-3-8b/lora.yaml | 512 max seq | micro batch 1 | 1xA10G | Peak memory 19.73 GB",
         assumptions=_LITGPT_ASSUME + " lora_r=32 on query+value.",
         confidence="medium"),
    dict(id="litgpt-llama3-8b-qlora-a10g", model="llama-3-8b", gpu="A10G", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=2, global_batch=8, seq_len=512, precision="bf16",
         method="qlora", optimizer="adamw", lora_rank=32, lora_targets="q,v",
         mode="train", serve_batch=None, context=None, weight_bits=4,
         measured=17.41, unit="GB", what="peak memory per GPU (max_memory_allocated)",
         source=_LITGPT + " + config_hub/finetune/llama-3-8b/qlora.yaml",
         quote="llama-3-8b/qlora.yaml | 512 max seq | micro batch 2 | 1xA10G | Peak memory 17.41 GB",
         assumptions=_LITGPT_ASSUME + " quantize: bnb.nf4; lora_r=32 on query+value. Large 128k-vocab logits "
                     "(bf16 + fp32 loss) are a sizeable share at micro batch 2.",
         confidence="low"),
    dict(id="litgpt-mistral-7b-lora-a10g", model="mistral-7b", gpu="A10G", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=2, global_batch=8, seq_len=512, precision="bf16",
         method="lora", optimizer="adamw", lora_rank=32, lora_targets="q,v",
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=20.66, unit="GB", what="peak memory per GPU (max_memory_allocated)",
         source=_LITGPT + " + config_hub/finetune/mistral-7b/lora.yaml",
         quote="mistral-7b/lora.yaml | 512 max seq | micro batch 2 | 1xA10G | Peak memory 20.66 GB",
         assumptions=_LITGPT_ASSUME + " Model Mistral-7B-v0.1; lora_r=32 on query+value.",
         confidence="medium"),
    dict(id="litgpt-mistral-7b-qlora-a10g", model="mistral-7b", gpu="A10G", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=2, global_batch=8, seq_len=512, precision="bf16",
         method="qlora", optimizer="adamw", lora_rank=32, lora_targets="q,v",
         mode="train", serve_batch=None, context=None, weight_bits=4,
         measured=14.29, unit="GB", what="peak memory per GPU (max_memory_allocated)",
         source=_LITGPT + " + config_hub/finetune/mistral-7b/qlora.yaml",
         quote="mistral-7b/qlora.yaml | 512 max seq | micro batch 2 | 1xA10G | Peak memory 14.29 GB",
         assumptions=_LITGPT_ASSUME + " quantize: bnb.nf4; lora_r=32 on query+value.",
         confidence="low"),

    # ---- torchtune README, Llama 3.1 8B on 1x RTX 4090 -----------------------------------------
    dict(id="torchtune-llama31-8b-full-4090", model="llama-3-8b", gpu="RTX4090", gpus=1, nodes=1, tp=1, pp=1,
         dp=1, zero_stage=0, checkpointing="full", micro_batch=2, global_batch=2, seq_len=2048, precision="bf16",
         method="full", optimizer="adam-8bit", lora_rank=None,
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=18.9, unit="GiB", what="peak memory per GPU",
         source=_TTUNE + " + recipes/configs/llama3_1/8B_full_single_device.yaml",
         quote="All numbers for batch size 2 (no grad accum), dataset packed to seq len 2048, torch compile on. "
               "Llama 3.1 8B | Full finetune | 1x 4090 | 18.9 GiB | 1650 tok/s",
         assumptions="(ccopt note: the figure is close to the bf16 size of the checkpoint, which suggests the peak was reached while loading before 4-bit quantisation, not during training) "
                     "(ccopt note: the figure is close to the bf16 size of the checkpoint, which suggests the peak was reached while loading before 4-bit quantisation, not during training) "
                     "(ccopt note: the figure is close to the bf16 size of the checkpoint, which suggests the peak was reached while loading before 4-bit quantisation, not during training) "
                     "Config = default 8B_full_single_device.yaml: pure bf16 weights/grads (no fp32 master), "
                     "bitsandbytes PagedAdamW8bit, optimizer_in_bwd=True (gradients freed per parameter, never "
                     "all resident), activation checkpointing on, chunked/linear CE loss. Llama 3.1 8B has the "
                     "same shape as the llama-3-8b preset.",
         confidence="medium"),
    dict(id="torchtune-llama31-8b-lora-4090", model="llama-3-8b", gpu="RTX4090", gpus=1, nodes=1, tp=1, pp=1,
         dp=1, zero_stage=0, checkpointing="full", micro_batch=2, global_batch=2, seq_len=2048, precision="bf16",
         method="lora", optimizer="adamw", lora_rank=8, lora_targets="q,v,o,mlp",
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=16.2, unit="GiB", what="peak memory per GPU",
         source=_TTUNE,
         quote="batch size 2, packed seq len 2048, torch compile. Llama 3.1 8B | LoRA | 1x 4090 | 16.2 GiB | "
               "3083 tok/s",
         assumptions="Assumed default llama3_1/8B_lora_single_device.yaml of that release: rank 8, alpha 16 on "
                     "q_proj, v_proj, output_proj and the MLP; bf16; AdamW (fused); activation checkpointing on. "
                     "The exact config behind the README row is not stated.",
         confidence="low"),
    dict(id="torchtune-llama31-8b-qlora-4090", model="llama-3-8b", gpu="RTX4090", gpus=1, nodes=1, tp=1, pp=1,
         dp=1, zero_stage=0, checkpointing="full", micro_batch=2, global_batch=2, seq_len=2048, precision="bf16",
         method="qlora", optimizer="adamw", lora_rank=8, lora_targets="q,k,v,o,mlp",
         mode="train", serve_batch=None, context=None, weight_bits=4,
         measured=7.4, unit="GiB", what="peak memory per GPU",
         source=_TTUNE + " + recipes/configs/llama3_1/8B_qlora_single_device.yaml",
         quote="batch size 2, packed seq len 2048, torch compile. Llama 3.1 8B | QLoRA | 1x 4090 | 7.4 GiB | "
               "2413 tok/s",
         assumptions="Config = 8B_qlora_single_device.yaml: NF4 base weights (torchao), rank 8 / alpha 16 on "
                     "q,k,v,output_proj + MLP, AdamW fused, activation checkpointing on, chunked CE loss. "
                     "Output projection (lm head) stays bf16.",
         confidence="medium"),

    # ---- torchtitan (Dec 2024) H100 table ------------------------------------------------------
    dict(id="torchtitan-llama31-8b-fsdp8-h100", model="llama-3-8b", gpu="H100-80GB", gpu_note=_TITAN_H100_NOTE,
         gpus=8, nodes=1, tp=1, pp=1, dp=8, zero_stage=3, checkpointing="selective", micro_batch=2,
         global_batch=16, seq_len=8192, precision="bf16", method="full", optimizer="adamw", lora_rank=None,
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=82.4, unit="GiB", what="peak memory per GPU (torchtitan memory log, max reserved)",
         source=_TITAN_H100 + " Table 1",
         quote="Table 1 1D Parallelism (FSDP). Llama 3.1 8B. 8 GPUs. Local batch size 2, global batch size 16. "
               "Selective AC. FSDP | 5,762 TPS/GPU | 82.4 GiB",
         assumptions="seq_len 8192 = torchtitan llama3_8b.toml default (not restated in table). FSDP2 mixed "
                     "precision: bf16 compute params, fp32 sharded master params + AdamW states, fp32 grad "
                     "reduce. Selective AC = 'op' policy (toml default). Eager (no torch.compile). 82.4 GiB "
                     "exceeds an 80 GB card: only fits the 96 GB part actually used.",
         confidence="medium"),
    dict(id="torchtitan-llama31-8b-fsdp128-h100", model="llama-3-8b", gpu="H100-80GB", gpu_note=_TITAN_H100_NOTE,
         gpus=128, nodes=16, tp=1, pp=1, dp=128, zero_stage=3, checkpointing="selective", micro_batch=2,
         global_batch=256, seq_len=8192, precision="bf16", method="full", optimizer="adamw", lora_rank=None,
         mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=67.0, unit="GiB", what="peak memory per GPU (torchtitan memory log, max reserved)",
         source=_TITAN_H100 + " Table 3",
         quote="Table 3 1D Parallelism (FSDP). Llama 3.1 8B. 128 GPUs. Local batch size 2, global batch size "
               "256. Selective AC. FSDP | 5,605 TPS/GPU | 67.0 GiB",
         assumptions="Same as the 8-GPU case; the 15.4 GiB drop vs 8 GPUs is the extra sharding of fp32 "
                     "params/grads/AdamW states.",
         confidence="medium"),
    dict(id="torchtitan-llama31-70b-fsdp32-tp8-h100-fp8", model="llama-3-70b", gpu="H100-80GB",
         gpu_note=_TITAN_H100_NOTE, gpus=256, nodes=32, tp=8, pp=1, dp=32, zero_stage=3, checkpointing="full",
         micro_batch=16, global_batch=512, seq_len=8192, precision="fp8", method="full", optimizer="adamw",
         lora_rank=None, mode="train", serve_batch=None, context=None, weight_bits=16,
         measured=71.9, unit="GiB", what="peak memory per GPU (torchtitan memory log, max reserved)",
         source=_TITAN_H100 + " Table 4",
         quote="Table 4 2D (FSDP + TP) + torch.compile + Float8. Llama 3.1 70B. 256 GPUs (FSDP 32, TP 8). Local "
               "batch 16, global 512. Full AC. 2D | 829 TPS/GPU | 71.9 GiB",
         assumptions="seq_len 8192 (torchtitan llama3_70b.toml default). Float8 only on nn.Linear GEMMs; "
                     "weights/master/optimizer as bf16+fp32 FSDP2 mixed precision. TP with sequence parallel.",
         confidence="medium"),

    # ---- Hugging Face transformers docs: model training anatomy --------------------------------
    dict(id="hf-anatomy-bert-large-v100", model=BERT_LARGE, gpu="V100-16GB", gpus=1, nodes=1, tp=1, pp=1, dp=1,
         zero_stage=0, checkpointing="none", micro_batch=4, global_batch=4, seq_len=512, precision="fp32",
         method="full", optimizer="adamw", lora_rank=None, attention="eager", dropout=True,
         mode="train", serve_batch=None, context=None, weight_bits=32,
         measured=14949, unit="MiB", what="total device memory used (pynvml), incl. ~1343 MiB CUDA context",
         source="https://github.com/huggingface/transformers docs/source/en/model_memory_anatomy.md "
                "(https://huggingface.co/docs/transformers/model_memory_anatomy)",
         quote="bert-large-uncased, Trainer, batch size 4, no optimizations: GPU memory occupied: 14949 MB "
               "(pynvml used//1024**2). Kernels alone 1343 MB; V100 16GB.",
         assumptions="fp32 training (Trainer default, no fp16 flag), torch AdamW (Trainer default), sequence "
                     "classification head on dummy 512-token inputs; eager attention and dropout 0.1 "
                     "(BERT config, transformers of that time). Value is nvidia-smi-style used memory "
                     "(includes CUDA context and allocator cache), reported in MiB although printed as 'MB'.",
         confidence="high"),
]

# ---------------------------------------------------------------------------
# TRAINING THROUGHPUT
# ---------------------------------------------------------------------------

TRAINING_CASES = [
    # ---- MosaicML llm-foundry MPT benchmarks (FSDP FULL_SHARD) ----------------------------------
    dict(id="mpt-7b-a100-80gb-8gpu-s2048", model=MPT_7B, gpu="A100-80GB", gpus=8, nodes=1, tp=1, pp=1, dp=8,
         zero_stage=3, checkpointing="none", micro_batch=6, global_batch=96, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=4641, unit="tokens/s/gpu",
         source=_LLMF + " (A100 80GB table)",
         quote="7b | 2048 | 8 | a100_80gb | MFU 64.23 | MicroBatch 6 | GradAccum 2 | GlobalBatch 96 | 4641 T/s/GPU "
               "| amp_bf16 | FULL_SHARD | ActCkpt False",
         assumptions=_LLMF_ASSUME + " amp_bf16 with FSDP mixed_precision DEFAULT (fp32 master params).",
         confidence="high"),
    dict(id="mpt-13b-a100-80gb-8gpu-s2048", model=MPT_13B, gpu="A100-80GB", gpus=8, nodes=1, tp=1, pp=1, dp=8,
         zero_stage=3, checkpointing="none", micro_batch=2, global_batch=48, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=2262, unit="tokens/s/gpu",
         source=_LLMF + " (A100 80GB table)",
         quote="13b | 2048 | 8 | a100_80gb | MFU 59.57 | MicroBatch 2 | GradAccum 3 | GlobalBatch 48 | 2262 T/s/GPU "
               "| amp_bf16 | FULL_SHARD | ActCkpt False",
         assumptions=_LLMF_ASSUME,
         confidence="high"),
    dict(id="mpt-30b-a100-80gb-8gpu-s2048", model=MPT_30B, gpu="A100-80GB", gpus=8, nodes=1, tp=1, pp=1, dp=8,
         zero_stage=3, checkpointing="full", micro_batch=3, global_batch=504, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=916, unit="tokens/s/gpu",
         source=_LLMF + " (A100 80GB table)",
         quote="30b | 2048 | 8 | a100_80gb | MFU 55.3 | HFU 73.74 | MicroBatch 3 | GradAccum 21 | GlobalBatch 504 | "
               "916 T/s/GPU | FULL_SHARD | ActCkpt True",
         assumptions=_LLMF_ASSUME + " Activation checkpointing = full per-block recompute.",
         confidence="high"),
    dict(id="mpt-70b-a100-80gb-64gpu-s2048", model=MPT_70B, gpu="A100-80GB", gpus=64, nodes=8, tp=1, pp=1, dp=64,
         zero_stage=3, checkpointing="full", micro_batch=8, global_batch=2048, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=410, unit="tokens/s/gpu",
         source=_LLMF + " (A100 80GB with 1600 Gbps RoCE table)",
         quote="70b | 2048 | 64 | a100_80gb | MFU 53.33 | MicroBatch 8 | GradAccum 4 | GlobalBatch 2048 | "
               "410 T/s/GPU | bf16 | PURE | FULL_SHARD | ActCkpt True",
         assumptions=_LLMF_ASSUME + " FSDP mixed_precision PURE (bf16 params/grads/reduce; optimizer states "
                     "still fp32 per composer). Inter-node 1600 Gbps RoCE per 8-GPU node.",
         confidence="high"),
    dict(id="mpt-7b-a100-40gb-64gpu-s2048", model=MPT_7B, gpu="A100-40GB", gpus=64, nodes=8, tp=1, pp=1, dp=64,
         zero_stage=3, checkpointing="full", micro_batch=18, global_batch=1152, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=3665, unit="tokens/s/gpu",
         source=_LLMF + " (A100 40GB with 1600 Gbps RoCE table)",
         quote="7b | 2048 | 64 | a100_40gb | MFU 50.73 | MicroBatch 18 | GradAccum 1 | GlobalBatch 1152 | "
               "3665 T/s/GPU | bf16 | PURE | FULL_SHARD | ActCkpt True",
         assumptions=_LLMF_ASSUME + " FSDP mixed_precision PURE.",
         confidence="high"),
    dict(id="mpt-7b-h100-8gpu-s2048", model=MPT_7B, gpu="H100-80GB", gpus=8, nodes=1, tp=1, pp=1, dp=8,
         zero_stage=3, checkpointing="none", micro_batch=6, global_batch=48, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=10643, unit="tokens/s/gpu",
         source=_LLMF + " (H100 80GB BF16 table)",
         quote="7b | 2048 | 8 | h100_80gb | MFU 46.44 | MicroBatch 6 | GradAccum 1 | GlobalBatch 48 | "
               "10643 T/s/GPU | amp_bf16 | FULL_SHARD | ActCkpt False",
         assumptions=_LLMF_ASSUME + " H100 assumed SXM (MFU computed vs 989 TFLOPS).",
         confidence="high"),
    dict(id="mpt-70b-h100-64gpu-s2048", model=MPT_70B, gpu="H100-80GB", gpus=64, nodes=8, tp=1, pp=1, dp=64,
         zero_stage=3, checkpointing="full", micro_batch=8, global_batch=2048, seq_len=2048, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=1039, unit="tokens/s/gpu",
         source=_LLMF + " (H100 80GB BF16 table)",
         quote="70b | 2048 | 64 | h100_80gb | MFU 42.57 | MicroBatch 8 | GradAccum 4 | GlobalBatch 2048 | "
               "1039 T/s/GPU | amp_bf16 | FULL_SHARD | ActCkpt True",
         assumptions=_LLMF_ASSUME + " H100 assumed SXM; inter-node fabric not stated for the H100 table.",
         confidence="medium"),
    dict(id="mpt-7b-a100-80gb-8gpu-s8192", model=MPT_7B, gpu="A100-80GB", gpus=8, nodes=1, tp=1, pp=1, dp=8,
         zero_stage=3, checkpointing="full", micro_batch=8, global_batch=128, seq_len=8192, precision="bf16",
         method="full", optimizer="adamw", lora_rank=None, framework="llm-foundry/composer FSDP",
         measured=3206, unit="tokens/s/gpu",
         source=_LLMF + " (A100 80GB table)",
         quote="7b | 8192 | 8 | a100_80gb | MFU 54.47 | MicroBatch 8 | GradAccum 2 | GlobalBatch 128 | "
               "3206 T/s/GPU | amp_bf16 | FULL_SHARD | ActCkpt True",
         assumptions=_LLMF_ASSUME + " Long sequence: attention FLOPs are a large share (MFU formula includes them).",
         confidence="high"),

    # ---- torchtitan, 64x A100 80GB, FSDP2 ------------------------------------------------------
    dict(id="torchtitan-llama3-8b-a100-64gpu", model="llama-3-8b", gpu="A100-80GB", gpus=64, nodes=8, tp=1, pp=1,
         dp=64, zero_stage=3, checkpointing="selective", micro_batch=1, global_batch=64, seq_len=8192,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="torchtitan FSDP2",
         measured=2973, unit="tokens/s/gpu",
         source=_TITAN_A100 + " + train_configs/llama3_8b.toml",
         quote="Llama 3 models with FSDP2 on 64 A100 (80GB): 8B | batch 1 | selective op | WPS 2973 | MFU 58.2%",
         assumptions="seq_len 8192, AdamW, no compile, no float8 per llama3_8b.toml. WPS is per GPU "
                     "(torchtitan logs per-rank tokens/s). Interconnect not stated.",
         confidence="high"),
    dict(id="torchtitan-llama3-70b-a100-64gpu", model="llama-3-70b", gpu="A100-80GB", gpus=64, nodes=8, tp=1, pp=1,
         dp=64, zero_stage=3, checkpointing="full", micro_batch=1, global_batch=64, seq_len=8192,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="torchtitan FSDP2",
         measured=331, unit="tokens/s/gpu",
         source=_TITAN_A100,
         quote="Llama 3 with FSDP2 on 64 A100 (80GB): 70B | batch 1 | full AC | WPS 331 | MFU 51.7%",
         assumptions="1D FSDP (the doc's table is FSDP2-only; the toml's TP=8 is not used here). seq_len 8192 "
                     "(llama3_70b.toml). AdamW.",
         confidence="high"),
    dict(id="torchtitan-llama2-13b-a100-64gpu-noac", model="llama-2-13b", gpu="A100-80GB", gpus=64, nodes=8, tp=1,
         pp=1, dp=64, zero_stage=3, checkpointing="none", micro_batch=2, global_batch=128, seq_len=4096,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="torchtitan FSDP2",
         measured=2162, unit="tokens/s/gpu",
         source=_TITAN_A100 + " + train_configs/llama2_13b.toml",
         quote="Llama 2 with FSDP2 on 64 A100 (80GB): 13B | batch 2 | no AC | WPS 2162 | MFU 61.1%",
         assumptions="seq_len 4096 (llama2_13b.toml and doc text), AdamW.",
         confidence="high"),
    dict(id="torchtitan-llama2-70b-a100-64gpu", model="llama-2-70b", gpu="A100-80GB", gpus=64, nodes=8, tp=1, pp=1,
         dp=64, zero_stage=3, checkpointing="full", micro_batch=2, global_batch=128, seq_len=4096,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="torchtitan FSDP2",
         measured=353, unit="tokens/s/gpu",
         source=_TITAN_A100,
         quote="Llama 2 with FSDP2 on 64 A100 (80GB): 70B | batch 2 | full AC | WPS 353 | MFU 50.5%",
         assumptions="seq_len 4096 (Llama 2 default per doc text), AdamW.",
         confidence="high"),

    # ---- NVIDIA NeMo 24.07 / Megatron-Bridge (DGX-H100, FP8) ------------------------------------
    dict(id="nemo-llama2-7b-h100-8gpu-fp8", model="llama-2-7b", gpu="H100-80GB", gpus=8, nodes=1, tp=1, pp=1, dp=8,
         zero_stage=1, checkpointing="none", micro_batch=1, global_batch=128, seq_len=4096, precision="fp8",
         method="full", optimizer="adamw", lora_rank=None, framework="NeMo/Megatron-Core",
         measured=16847, unit="tokens/s/gpu",
         source=_NEMO,
         quote="LLAMA2-7B | 8 GPUs | GBS 128 | MBS 1 | seq 4096 | TP 1 | PP 1 | CP 1 | VP 1 | 16847 tok/s/GPU | "
               "776 model TFLOP/s/GPU",
         assumptions=_NEMO_ASSUME,
         confidence="medium"),
    dict(id="nemo-llama2-70b-h100-64gpu-fp8", model="llama-2-70b", gpu="H100-80GB", gpus=64, nodes=8, tp=4, pp=4,
         dp=4, zero_stage=1, checkpointing="none", micro_batch=1, global_batch=128, seq_len=4096, precision="fp8",
         method="full", optimizer="adamw", lora_rank=None, virtual_pp=20, framework="NeMo/Megatron-Core",
         measured=1707, unit="tokens/s/gpu",
         source=_NEMO,
         quote="LLAMA2-70B | 64 GPUs | GBS 128 | MBS 1 | seq 4096 | TP 4 | PP 4 | CP 1 | VP 20 | 1707 tok/s/GPU | "
               "759 model TFLOP/s/GPU",
         assumptions=_NEMO_ASSUME + " Interleaved pipeline schedule (VP=20); TP with sequence parallel.",
         confidence="medium"),
    dict(id="nemo-llama3-70b-h100-64gpu-fp8", model="llama-3-70b", gpu="H100-80GB", gpus=64, nodes=8, tp=4, pp=4,
         cp=2, dp=2, zero_stage=1, checkpointing="none", micro_batch=1, global_batch=128, seq_len=8192,
         precision="fp8", method="full", optimizer="adamw", lora_rank=None, virtual_pp=5,
         framework="NeMo/Megatron-Core",
         measured=1533, unit="tokens/s/gpu",
         source=_NEMO,
         quote="LLAMA3-70B | 64 GPUs | GBS 128 | MBS 1 | seq 8192 | TP 4 | PP 4 | CP 2 | VP 5 | 1533 tok/s/GPU | "
               "738 model TFLOP/s/GPU",
         assumptions=_NEMO_ASSUME + " Context parallel 2 (dp = 64/(4*4*2) = 2).",
         confidence="medium"),
    dict(id="nemo-gpt3-175b-h100-128gpu-fp8", model="gpt3-175b", gpu="H100-80GB", gpus=128, nodes=16, tp=4, pp=8,
         dp=4, zero_stage=1, checkpointing="none", micro_batch=1, global_batch=256, seq_len=2048, precision="fp8",
         method="full", optimizer="adamw", lora_rank=None, virtual_pp=6, framework="NeMo/Megatron-Core",
         measured=726, unit="tokens/s/gpu",
         source=_NEMO,
         quote="GPT3-175B | 128 GPUs | GBS 256 | MBS 1 | seq 2048 | TP 4 | PP 8 | CP 1 | VP 6 | 726 tok/s/GPU | "
               "782 model TFLOP/s/GPU",
         assumptions=_NEMO_ASSUME + " NeMo GPT-3 uses a slightly larger vocab than GPT-3's 50257 (not stated).",
         confidence="medium"),
    dict(id="bridge-llama31-405b-h100-1024gpu-fp8", model="llama-3.1-405b", gpu="H100-80GB", gpus=1024, nodes=128,
         tp=8, pp=8, cp=2, dp=8, zero_stage=1, checkpointing="none", micro_batch=1, global_batch=512, seq_len=8192,
         precision="fp8", method="full", optimizer="adamw", lora_rank=None, virtual_pp=8,
         framework="Megatron-Bridge/Megatron-Core",
         measured=292, unit="tokens/s/gpu",
         source=_BRIDGE,
         quote="LLAMA3.1_405B | 1024 GPUs | FP8-CS | GBS 512 | MBS 1 | seq 8192 | FSDP 0 | TP 8 | PP 8 | CP 2 | "
               "VP 8 | GA 64 | 292 tok/s/GPU | 737 TFLOP/s/GPU",
         assumptions=_NEMO_ASSUME + " FP8 current scaling. Recompute settings of the perf recipe not checked.",
         confidence="medium"),

    # ---- Llama 3 paper, 405B pre-training scaling configurations --------------------------------
    dict(id="llama3-405b-8192gpu-bf16", model="llama-3.1-405b", gpu="H100-80GB", gpus=8192, nodes=1024, tp=8,
         pp=16, cp=1, dp=64, zero_stage=1, checkpointing="none", micro_batch=1, global_batch=2048, seq_len=8192,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal (4D)",
         measured=430, unit="tflops/gpu",
         source="Dubey et al. 2024 'The Llama 3 Herd of Models' Table 4; read via "
                "https://glennklockwood.com/garden/llama-3.1 (from Balaji, SC'24 slide)",
         quote="GPUs 8,192 | TP 8 | CP 1 | PP 16 | 16M tokens/batch | 430 TFLOPS/GPU",
         assumptions="dp = 8192/(8*16) = 64; global batch 16M tokens / 8192 seq = 2048 sequences. Micro batch, "
                     "recompute policy and sharding stage are NOT in the source read (paper reports ~43% BF16 MFU "
                     "and FSDP-style optimizer/gradient sharding from memory, unverified here). H100 700 W, "
                     "RoCE 400 Gb/s per GPU.",
         confidence="low"),
    dict(id="llama3-405b-16384gpu-bf16", model="llama-3.1-405b", gpu="H100-80GB", gpus=16384, nodes=2048, tp=8,
         pp=16, cp=1, dp=128, zero_stage=1, checkpointing="none", micro_batch=1, global_batch=2048, seq_len=8192,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal (4D)",
         measured=400, unit="tflops/gpu",
         source="Dubey et al. 2024 'The Llama 3 Herd of Models' Table 4; read via "
                "https://glennklockwood.com/garden/llama-3.1 (from Balaji, SC'24 slide)",
         quote="GPUs 16,384 | TP 8 | CP 1 | PP 16 | 16M tokens/batch | 400 TFLOPS/GPU",
         assumptions="dp = 16384/(8*16) = 128; 2048 sequences of 8192. Same unknowns as the 8,192-GPU row.",
         confidence="low"),

    # ---- Whole-run GPU hours from Meta model cards ------------------------------------------------
    dict(id="llama2-7b-pretrain-gpu-hours", model="llama-2-7b", gpu="A100-80GB", gpus=2048, nodes=256, tp=1, pp=1,
         dp=2048, zero_stage=3, checkpointing="none", micro_batch=1, global_batch=1024, seq_len=4096,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal",
         measured=184320, unit="gpu_hours_total", tokens=2.0e12,
         source="https://github.com/meta-llama/llama/blob/0e3444bca7a3e02f25f2c9f9e778866fecdae567/MODEL_CARD.md",
         quote="Llama 2 7B | Time (GPU hours) 184320 | 400 W; A100-80GB; pretrained on 2.0T tokens; global "
               "batch-size of 4M tokens; context 4k",
         assumptions="Global batch 4M tokens / 4096 = 1024 sequences. GPU count, parallelism, micro batch, "
                     "recompute and sharding are NOT published: gpus=2048 and FSDP are placeholders. GPU hours "
                     "include all overheads (restarts, evals) of the real run.",
         confidence="low"),
    dict(id="llama2-13b-pretrain-gpu-hours", model="llama-2-13b", gpu="A100-80GB", gpus=2048, nodes=256, tp=1, pp=1,
         dp=2048, zero_stage=3, checkpointing="none", micro_batch=1, global_batch=1024, seq_len=4096,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal",
         measured=368640, unit="gpu_hours_total", tokens=2.0e12,
         source="https://github.com/meta-llama/llama/blob/0e3444bca7a3e02f25f2c9f9e778866fecdae567/MODEL_CARD.md",
         quote="Llama 2 13B | Time (GPU hours) 368640 | 400 W; A100-80GB; 2.0T tokens; 4M-token global batch",
         assumptions="Same placeholders as the 7B case.",
         confidence="low"),
    dict(id="llama2-70b-pretrain-gpu-hours", model="llama-2-70b", gpu="A100-80GB", gpus=2048, nodes=256, tp=8, pp=1,
         dp=256, zero_stage=3, checkpointing="full", micro_batch=1, global_batch=1024, seq_len=4096,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal",
         measured=1720320, unit="gpu_hours_total", tokens=2.0e12,
         source="https://github.com/meta-llama/llama/blob/0e3444bca7a3e02f25f2c9f9e778866fecdae567/MODEL_CARD.md",
         quote="Llama 2 70B | Time (GPU hours) 1720320 | 400 W; A100-80GB; 2.0T tokens; 4M-token global batch",
         assumptions="Parallelism unpublished; tp=8 + FSDP + full recompute are placeholders. Implied ~323 "
                     "tokens/s/GPU.",
         confidence="low"),
    dict(id="llama3-8b-pretrain-gpu-hours", model="llama-3-8b", gpu="H100-80GB", gpus=4096, nodes=512, tp=1, pp=1,
         dp=4096, zero_stage=3, checkpointing="none", micro_batch=1, global_batch=2048, seq_len=8192,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal",
         measured=1.3e6, unit="gpu_hours_total", tokens=15e12,
         source="https://github.com/meta-llama/llama3/blob/13e795f906b6b46c585f558854e2177f74e49525/MODEL_CARD.md",
         quote="Llama 3 8B | Time (GPU hours) 1.3M | 700 W; H100-80GB; pretrained on over 15 trillion tokens; "
               "context 8k",
         assumptions="Token count is '15T+' (lower bound used). GPU count, batch, parallelism unpublished "
                     "(placeholders). GPU hours include all run overheads.",
         confidence="low"),
    dict(id="llama3-70b-pretrain-gpu-hours", model="llama-3-70b", gpu="H100-80GB", gpus=4096, nodes=512, tp=8, pp=1,
         dp=512, zero_stage=3, checkpointing="none", micro_batch=1, global_batch=2048, seq_len=8192,
         precision="bf16", method="full", optimizer="adamw", lora_rank=None, framework="Meta internal",
         measured=6.4e6, unit="gpu_hours_total", tokens=15e12,
         source="https://github.com/meta-llama/llama3/blob/13e795f906b6b46c585f558854e2177f74e49525/MODEL_CARD.md",
         quote="Llama 3 70B | Time (GPU hours) 6.4M | 700 W; H100-80GB; over 15 trillion tokens; context 8k",
         assumptions="Token count '15T+' (lower bound). Parallelism unpublished (placeholders).",
         confidence="low"),

    # ---- torchtune single consumer GPU ----------------------------------------------------------
    dict(id="torchtune-llama31-8b-full-4090-tput", model="llama-3-8b", gpu="RTX4090", gpus=1, nodes=1, tp=1, pp=1,
         dp=1, zero_stage=0, checkpointing="full", micro_batch=2, global_batch=2, seq_len=2048, precision="bf16",
         method="full", optimizer="adam-8bit", lora_rank=None, framework="torchtune",
         measured=1650, unit="tokens/s/gpu",
         source=_TTUNE + " + recipes/configs/llama3_1/8B_full_single_device.yaml",
         quote="batch size 2 (no grad accum), packed to seq len 2048, torch compile enabled. Llama 3.1 8B | Full "
               "finetune | 1x 4090 | 18.9 GiB | 1650 tokens/sec (over one full epoch)",
         assumptions="Pure bf16 weights (no fp32 master), PagedAdamW8bit with optimizer_in_bwd, activation "
                     "checkpointing on (default single-device config). Tokens/sec averaged over an epoch.",
         confidence="medium"),
]

# ---------------------------------------------------------------------------
# SERVING
# ---------------------------------------------------------------------------

SERVING_CASES = [
    # ---- TensorRT-LLM performance.md (v0.6.1 peak throughput, v0.5 low latency) -----------------
    dict(id="trtllm-llama2-7b-a100-bs384-128-128", model="llama-2-7b", gpu="A100-80GB", gpus=1, tp=1,
         weight_bits=16, kv_bits=16, batch=384, concurrency=None, prompt_tokens=128, output_tokens=128,
         measured=5586, unit="output tokens/s", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, A100 GPUs (FP16))",
         quote="A100 GPUs (FP16): LLaMA 7B | Batch Size 384 | TP 1 | Input 128 | Output 128 | 5,586 out tok/s",
         assumptions=_TRTLLM_ASSUME + "A100 variant not named; 80GB implied (batch-384 KV cache plus weights "
                     "exceeds 40 GB). TP=1 so per-GPU = total.",
         confidence="medium"),
    dict(id="trtllm-llama2-7b-a100-bs60-128-2048", model="llama-2-7b", gpu="A100-80GB", gpus=1, tp=1,
         weight_bits=16, kv_bits=16, batch=60, concurrency=None, prompt_tokens=128, output_tokens=2048,
         measured=1928, unit="output tokens/s", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, A100 GPUs (FP16))",
         quote="A100 GPUs (FP16): LLaMA 7B | Batch Size 60 | TP 1 | Input 128 | Output 2048 | 1,928 out tok/s",
         assumptions=_TRTLLM_ASSUME + "A100-80GB assumed (see bs384 case).",
         confidence="medium"),
    dict(id="trtllm-llama2-7b-a100-bs52-2048-128", model="llama-2-7b", gpu="A100-80GB", gpus=1, tp=1,
         weight_bits=16, kv_bits=16, batch=52, concurrency=None, prompt_tokens=2048, output_tokens=128,
         measured=591, unit="output tokens/s", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, A100 GPUs (FP16))",
         quote="A100 GPUs (FP16): LLaMA 7B | Batch Size 52 | TP 1 | Input 2048 | Output 128 | 591 out tok/s",
         assumptions=_TRTLLM_ASSUME + "Prefill-dominated. A100-80GB assumed.",
         confidence="medium"),
    dict(id="trtllm-llama2-7b-h100-fp8-bs768-128-128", model="llama-2-7b", gpu="H100-80GB", gpus=1, tp=1,
         weight_bits=8, kv_bits=8, batch=768, concurrency=None, prompt_tokens=128, output_tokens=128,
         measured=19694, unit="output tokens/s", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, H100 GPUs (FP8))",
         quote="H100 GPUs (FP8): LLaMA 7B | Batch Size 768 | TP 1 | Input 128 | Output 128 | 19,694 out tok/s/GPU",
         assumptions=_TRTLLM_ASSUME + "FP8 weights+GEMMs and FP8 KV cache (--enable_fp8 --fp8_kv_cache in the "
                     "doc's build commands). H100 SXM (doc: H100-HBM3-80GB).",
         confidence="high"),
    dict(id="trtllm-llama2-70b-h100-fp8-tp2-bs1024-128-128", model="llama-2-70b", gpu="H100-80GB", gpus=2, tp=2,
         weight_bits=8, kv_bits=8, batch=1024, concurrency=None, prompt_tokens=128, output_tokens=128,
         measured=2657, unit="output tokens/s per GPU", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, H100 GPUs (FP8))",
         quote="H100 GPUs (FP8): LLaMA 70B | Batch Size 1024 | TP 2 | Input 128 | Output 128 | 2,657 out tok/s/GPU",
         assumptions=_TRTLLM_ASSUME + "Per-GPU figure: total = 2 x 2,657. FP8 weights and KV cache.",
         confidence="high"),
    dict(id="trtllm-llama2-70b-h100-fp8-tp4-bs480-128-2048", model="llama-2-70b", gpu="H100-80GB", gpus=4, tp=4,
         weight_bits=8, kv_bits=8, batch=480, concurrency=None, prompt_tokens=128, output_tokens=2048,
         measured=1486, unit="output tokens/s per GPU", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, H100 GPUs (FP8))",
         quote="H100 GPUs (FP8): LLaMA 70B | Batch Size 480 | TP 4 | Input 128 | Output 2048 | 1,486 out tok/s/GPU",
         assumptions=_TRTLLM_ASSUME + "Per-GPU figure: total = 4 x 1,486. Decode-dominated.",
         confidence="high"),
    dict(id="trtllm-llama2-7b-l40s-fp8-bs64-128-128", model="llama-2-7b", gpu="L40S", gpus=1, tp=1,
         weight_bits=8, kv_bits=8, batch=64, concurrency=None, prompt_tokens=128, output_tokens=128,
         measured=3240, unit="output tokens/s", framework="trt-llm",
         source=_TRTLLM + " (Peak Throughput, L40S GPUs (FP8), data from TensorRT-LLM v0.5)",
         quote="L40S GPUs (FP8), v0.5 data: LLaMA 7B | Batch Size 64 | TP 1 | Input 128 | Output 128 | 3,240 out tok/s",
         assumptions=_TRTLLM_ASSUME + "FP8 weights; FP8 KV cache assumed as for H100 builds.",
         confidence="medium"),
    dict(id="trtllm-llama2-7b-a100-ttft-2048", model="llama-2-7b", gpu="A100-80GB", gpus=1, tp=1,
         weight_bits=16, kv_bits=16, batch=1, concurrency=1, prompt_tokens=2048, output_tokens=1,
         measured=133, unit="ttft ms", framework="trt-llm",
         source=_TRTLLM + " (Low Latency, A100 GPUs (FP16), v0.5 data)",
         quote="A100 GPUs (FP16): LLaMA 7B | Batch Size 1 | TP 1 | Input Length 2048 | 1st Token Latency 133 ms",
         assumptions=_TRTLLM_ASSUME + "Measured as a 1-output-token run. A100 memory variant not named "
                     "(irrelevant for batch 1; 80GB assumed).",
         confidence="medium"),
    dict(id="trtllm-llama2-70b-a100-tp4-ttft-2048", model="llama-2-70b", gpu="A100-80GB", gpus=4, tp=4,
         weight_bits=16, kv_bits=16, batch=1, concurrency=1, prompt_tokens=2048, output_tokens=1,
         measured=377, unit="ttft ms", framework="trt-llm",
         source=_TRTLLM + " (Low Latency, A100 GPUs (FP16), v0.5 data)",
         quote="A100 GPUs (FP16): LLaMA 70B | Batch Size 1 | TP 4 | Input Length 2048 | 1st Token Latency 377 ms",
         assumptions=_TRTLLM_ASSUME + "A100 SXM with NVLink assumed (TP=4 all-reduces).",
         confidence="medium"),
    dict(id="trtllm-llama2-7b-h100-fp8-ttft-2048", model="llama-2-7b", gpu="H100-80GB", gpus=1, tp=1,
         weight_bits=8, kv_bits=8, batch=1, concurrency=1, prompt_tokens=2048, output_tokens=1,
         measured=36, unit="ttft ms", framework="trt-llm",
         source=_TRTLLM + " (Low Latency, H100 GPUs (FP8), v0.5 data)",
         quote="H100 GPUs (FP8): LLaMA 7B | Batch Size 1 | TP 1 | Input Length 2048 | 1st Token Latency 36 ms",
         assumptions=_TRTLLM_ASSUME + "FP8 GEMMs.",
         confidence="high"),

    # ---- vLLM, independent single-GPU measurements ------------------------------------------------
    dict(id="vllm-mistral-7b-4090-conc32-256-128", model="mistral-7b", gpu="RTX4090", gpus=1, tp=1,
         weight_bits=16, kv_bits=16, batch=None, concurrency=32, prompt_tokens=256, output_tokens=128,
         measured=975, unit="output tokens/s", framework="vllm",
         source="https://mushfiqrahman.dev/benchmarking-mistral-7b-on-rtx-4090-vllm-concurrency-latency-and-"
                "capacity-planning/",
         quote="Mistral-7B-Instruct-v0.3, vLLM, RTX 4090; 256 in -> 128 out, 300 prompts at infinite rate; "
               "max concurrency 32: 9.73 req/s, 975 output tok/s, median TTFT 277 ms",
         assumptions="bf16 weights/KV (vLLM default dtype for this model; not stated). vLLM version and "
                     "gpu_memory_utilization not stated. Mistral v0.3 has a 32768 vocab vs 32000 in v0.1 "
                     "(negligible). Personal blog measurement.",
         confidence="medium"),
    dict(id="vllm-llama31-8b-a100-40gb-conc1-1024-128", model="llama-3-8b", gpu="A100-40GB", gpus=1, tp=1,
         weight_bits=16, kv_bits=16, batch=None, concurrency=1, prompt_tokens=1024, output_tokens=128,
         measured=75, unit="output tokens/s", what="single-stream decode rate (about 13.3 ms per output token)",
         framework="vllm",
         source="https://johnmusgrave.com/p/vllm-throughput-latency-sweep-on",
         quote="single NVIDIA A100 40GB, Llama-3.1-8B-Instruct BF16, vLLM 0.23.0, fixed 1024-token input and "
               "128-token output: decode at one request at a time runs at about 75 tokens/sec",
         assumptions="'about 75' is the author's rounding of the decode rate (not end-to-end incl. TTFT). "
                     "Llama 3.1 8B = llama-3-8b preset shape. Default vLLM settings.",
         confidence="medium"),
]
