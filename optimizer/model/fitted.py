"""Constants fitted on the public validation set (data/fitted.toml, by benchmarks/fit_constants.py).

The fit is log-additive over coarse groups, never per case: the achievable-efficiency multiplier
of a training run is exp(c_all + c_gen + c_gen×precision + c_stack + c_gen×precision×stack);
`shape` scales the hidden size at which GEMM efficiency halves (the size curve, one global term).
Serving has three physical multipliers: decode HBM bandwidth (`serve`), prefill/compute
efficiency (`serve_flops`), each per generation × serving stack, the achieved all-reduce
bandwidth of the GPU class (`serve_comm`: NVLink vs PCIe), and the efficiency of MoE expert
GEMMs relative to dense ones (`serve_moe`). A group absent from the fit data has no
coefficient (multiplier 1 for that term), so a held-out source falls back to coarser groups.
Prediction bands: (P10, P50, P90) of measured/predicted time per GPU generation × precision,
serving generation and peak memory, calibrated by split conformal across sources on the
cross-validated residuals, with the cases and sources behind each (`bands`;
optimizer/model/bands.py). MFU ceilings:
the best measured full-training MFU per generation × precision with its case (`ceilings`;
optimizer/model/ceilings.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from optimizer.model.hardware import GpuSpec
from optimizer.user_cache import parsed_toml

__all__ = [
    "FittedConstants",
    "load_fitted",
    "gpu_class",
    "precision_group",
    "train_features",
    "serve_features",
    "memory_features",
    "memory_multiplier",
    "train_multiplier",
    "serve_multiplier",
    "serve_comm_features",
    "family_multiplier",
    "FAMILY_TABLES",
    "band_key",
    "EMPTY_FIT",
]


@dataclass(frozen=True)
class FittedConstants:
    """Log-multipliers by feature name plus interval quantiles; `meta` says when and on what."""

    train: dict[str, float] = field(default_factory=dict)
    serve: dict[str, float] = field(default_factory=dict)
    #: log-multipliers of the activation term of training memory
    memory: dict[str, float] = field(default_factory=dict)
    #: log-multiplier of the size-curve constant (hidden size at half GEMM efficiency)
    shape: dict[str, float] = field(default_factory=dict)
    #: log-multipliers of serving compute (prefill / compute-bound decode) efficiency
    serve_flops: dict[str, float] = field(default_factory=dict)
    #: log-multipliers of the achieved all-reduce bandwidth of a serving replica (GPU class)
    serve_comm: dict[str, float] = field(default_factory=dict)
    #: log-multipliers of MoE expert-GEMM efficiency relative to dense GEMMs (serving)
    serve_moe: dict[str, float] = field(default_factory=dict)
    #: "generation/precision[/stack]" -> (p10, p50, p90, cases, sources) of measured/predicted
    #: step time of the cross-validated residuals (optimizer/model/bands.py)
    bands: dict[str, tuple[float, float, float, int, int]] = field(default_factory=dict)
    #: "generation/precision" -> (best measured MFU of a full-training run, runs, its case id)
    ceilings: dict[str, tuple[float, int, str]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:  # frozen dataclass with dict fields: identity hash for caches
        return id(self)


EMPTY_FIT = FittedConstants()
#: the log-multiplier tables of FittedConstants (one per fitted family)
FAMILY_TABLES = ("train", "shape", "serve", "serve_flops", "serve_comm", "serve_moe", "memory")


def gpu_class(gpu: GpuSpec) -> str:
    """ "hgx" for SXM/OAM boards with NVLink/xGMI, "pcie" for PCIe cards."""
    return "pcie" if gpu.intra_node_link == "pcie" else "hgx"


def precision_group(precision: str) -> str:
    """fp16 and bf16 share tensor cores and constants; fp8 and fp32 stand apart."""
    return "16" if precision in ("bf16", "fp16") else precision


def train_features(gpu: GpuSpec, precision: str, stack: str) -> list[str]:
    """Names of the fitted terms that apply to a training run (by the GPU table's generation)."""
    gen, prec = gpu.generation, precision_group(precision)
    return ["all", f"gen:{gen}", f"genprec:{gen}/{prec}", f"stack:{stack}", f"cell:{gen}/{prec}/{stack}"]


def serve_features(gpu: GpuSpec, stack: str) -> list[str]:
    """Names of the fitted terms that apply to a serving replica (by the GPU table's generation)."""
    gen = gpu.generation
    return ["all", f"gen:{gen}", f"stack:{stack}", f"cell:{gen}/{stack}"]


def serve_comm_features(gpu: GpuSpec) -> list[str]:
    """Names of the fitted terms of a replica's tensor-parallel all-reduce bandwidth."""
    return ["all", f"class:{gpu_class(gpu)}"]


def family_multiplier(fit: FittedConstants, table: str, features: list[str]) -> float:
    """exp(sum of the fitted log terms of `features` in `table`)."""
    coefs = getattr(fit, table)
    return math.exp(sum(coefs.get(f, 0.0) for f in features))


def memory_features(stack: str, method: str, checkpointing: str) -> list[str]:
    """Names of the fitted terms that scale a run's activation memory (what a stack saves for
    backward and its loss buffers are the least known part of the memory model): one term
    per stack, nothing shared between stacks."""
    # checkpointing is an argument for callers but not a fitted group: a fitted term per
    # checkpointing mode could break "more recompute never needs more memory"; a term per
    # method (full / lora / qlora) was dropped: fitted on the other sources it moved held-out
    # sources away (leave-one-source-out memory 56% with it, 60% without). A term shared by
    # stacks (for all of them, or per stack family "eager" / "fused") was dropped too: fitted
    # mostly on one source's rows (litgpt QLoRA, 34 rows), it moved every other source of its
    # stacks by the same factor - source-weighted leave-one-source-out within ±15% 66% with
    # the family term, 79% without (benchmarks/memory_accuracy.py), and the unfitted model
    # has a median signed error of +0.5% on its own
    del checkpointing, method
    return [f"stack:{stack}"]


def memory_multiplier(fit: FittedConstants, stack: str, method: str, checkpointing: str) -> float:
    """exp(sum of fitted log terms) multiplying the activation bytes."""
    return math.exp(sum(fit.memory.get(f, 0.0) for f in memory_features(stack, method, checkpointing)))


def band_key(generation: str, precision: str, stack: str | None = None) -> str:
    """The key of a band (and, without a stack, of a ceiling): "hopper/16[/megatron-core]"."""
    base = f"{generation}/{precision_group(precision)}"
    return base if stack is None else f"{base}/{stack}"


def _parse(data: dict[str, Any]) -> FittedConstants:
    bands = {
        k: (float(v["p10"]), float(v["p50"]), float(v["p90"]), int(v["cases"]), int(v["sources"]))
        for k, v in data.get("bands", {}).items()
    }
    ceilings = {
        k: (float(v["mfu"]), int(v["runs"]), str(v["case"])) for k, v in data.get("ceilings", {}).items()
    }
    tables = {t: {k: float(v) for k, v in data.get(t, {}).items()} for t in FAMILY_TABLES}
    return FittedConstants(**tables, bands=bands, ceilings=ceilings, meta=dict(data.get("meta", {})))


@cache
def load_fitted() -> FittedConstants:
    """The packaged fit (empty when the file is absent: the un-fitted model)."""
    path = resources.files("optimizer.model").joinpath("data/fitted.toml")
    if not path.is_file():
        return EMPTY_FIT
    return _parse(parsed_toml("fitted.toml", path.read_bytes()))


def train_multiplier(fit: FittedConstants, gpu: GpuSpec, precision: str, stack: str) -> float:
    """exp(sum of the fitted log terms) multiplying the achievable compute efficiency."""
    return math.exp(sum(fit.train.get(f, 0.0) for f in train_features(gpu, precision, stack)))


def serve_multiplier(fit: FittedConstants, gpu: GpuSpec, stack: str) -> float:
    """exp(sum of fitted log terms) multiplying serving bandwidth and compute efficiency."""
    return math.exp(sum(fit.serve.get(f, 0.0) for f in serve_features(gpu, stack)))
