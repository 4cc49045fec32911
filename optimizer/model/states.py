"""Bytes of model state (weights, gradients, optimizer) per trained parameter."""

from __future__ import annotations

__all__ = ["model_state_bytes_per_param"]


def model_state_bytes_per_param(
    precision: str,
    optimizer: str,
    hidden: int = 4096,
    fp32_grad_buffer: bool = False,
    fp32_master: bool = True,
    fp8_params: bool = False,
    master_remainders: bool = False,
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes per trained parameter, unsharded.

    Mixed precision (bf16/fp16/fp8) keeps 16-bit weights and gradients plus an fp32 master
    copy inside the optimizer state: AdamW 2 + 2 + (4 + 4 + 4) = 16 B (ZeRO §3, K = 12).
    fp8 (Transformer Engine) keeps the 16-bit weights and caches an fp8 copy (+1 B).
    fp32 training: 4 + 4 + optimizer moments, no master copy.
    Optimizer moments: AdamW 8 B (m, v fp32); 8-bit Adam 2 B (Dettmers et al. 2022);
    SGD with momentum 4 B; Adafactor factored second moment ≈ 4·2/hidden B (Shazeer & Stern
    2018: row + column statistics of an h×h matrix), no first moment.
    `fp8_params` (Megatron-Core --fp8-param-gather, Transformer Engine fp8_model_init): the
    compute weights exist only in fp8, 1 B plus the 1 B fp8 transpose TE caches for the dgrad
    GEMM (Hopper fp8 GEMMs take TN operands only), no 16-bit copy: 2 B.
    `fp32_grad_buffer` (Megatron main_grad): 4-byte gradients (dist_optimizer.md: bf16 params
    + fp32 grads = 18 B/param). `fp32_master=False` (torchtune bf16): no master copy, 16-bit
    moments (AdamW 2 + 2 + 4 = 8 B/param). `master_remainders` (Apex DistributedFusedAdam
    store_param_remainders, which NeMo 1.x sets for bf16 O2 models: the fp32 master is the bf16
    weight plus a stored 16-bit remainder): 2 B of master instead of 4 (AdamW 2 + 2 + 10 B).
    """
    moments = {"adamw": 8.0, "adam-8bit": 2.0, "sgd": 4.0, "adafactor": 8.0 / hidden}[optimizer]
    if precision == "fp32":
        return 4.0, 4.0, moments
    weights = 2.0 if precision != "fp8" or fp8_params else 3.0
    if not fp32_master:
        return weights, 2.0, moments if optimizer == "adam-8bit" else moments / 2
    master_b = 2.0 if master_remainders else 4.0  # apex distributed_fused_adam.py: remainder bits
    return weights, 4.0 if fp32_grad_buffer else 2.0, master_b + moments
