"""Transformer shape (`ModelSpec`) and parameter counts derived from it."""

from __future__ import annotations

from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ModelSpec",
    "LINEAR_MODULES",
    "MAX_LAYERS",
    "MAX_WIDTH",
    "MAX_HEADS",
    "MAX_VOCAB",
    "MAX_POSITIONS",
]

#: upper ends of the stated ranges of a shape, far beyond any published model (Llama 3.1 405B:
#: 126 layers, hidden 16384, FFN 53248, 128 heads; Gemma: vocab 256000) and small enough that
#: every count, FLOP and byte figure stays a finite float (a config.json with hidden_size 1e308
#: was an internal error): layers; hidden, FFN and head widths; heads and experts; vocabulary
#: rows; positions (sequence length, position tables, tokens per sample)
MAX_LAYERS = 100_000
MAX_WIDTH = 2**22
MAX_HEADS = 2**16
MAX_VOCAB = 2**26
MAX_POSITIONS = 2**32

#: names of the linear modules of one decoder layer (LoRA targets)
LINEAR_MODULES = ("q", "k", "v", "o", "gate", "up", "down")


class ModelSpec(BaseModel):
    """Shape of a decoder (or encoder) transformer; parameter counts follow from it.

    `ffn_kind="gated"` is SwiGLU/GeGLU (three FFN matrices: gate, up, down),
    `"plain"` is GELU MLP (two matrices). MoE layers hold `moe_experts` FFNs of which
    `moe_active` run per token.
    """

    # built on first validation: a planned preset or profile is constructed without one
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str = "custom"
    layers: int = Field(gt=0, le=MAX_LAYERS)
    hidden: int = Field(gt=0, le=MAX_WIDTH)
    heads: int = Field(gt=0, le=MAX_HEADS)
    kv_heads: int | None = Field(default=None, gt=0, le=MAX_HEADS)
    head_dim: int | None = Field(default=None, gt=0, le=MAX_WIDTH)
    ffn: int = Field(gt=0, le=MAX_WIDTH, description="FFN intermediate size")
    ffn_kind: Literal["gated", "plain"] = "gated"
    vocab: int = Field(gt=0, le=MAX_VOCAB)
    tied_embeddings: bool = False
    learned_positions: int = Field(
        default=0, ge=0, le=MAX_POSITIONS, description="rows of a learned position table"
    )
    extra_embedding_rows: int = Field(default=0, ge=0, le=MAX_VOCAB, description="e.g. BERT token types")
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    moe_experts: int = Field(default=0, ge=0, le=MAX_HEADS)
    moe_active: int = Field(default=0, ge=0, le=MAX_HEADS)
    extra_params: int = Field(
        default=0, ge=0, le=MAX_WIDTH**2, description="parameters outside the layers (pooler)"
    )
    max_seq_len: int | None = Field(default=None, gt=0, le=MAX_POSITIONS)
    #: tokens one sample is made of when the model reads a fixed length (ViT-B/16 at 224²:
    #: 196 patches + [CLS] = 197); job files may then count `samples`/`images`
    sample_tokens: int | None = Field(default=None, gt=0, le=MAX_POSITIONS)
    #: the output layer: "lm" projects every token onto the vocabulary (an LM or MLM head:
    #: 2·V·h FLOPs and V logits per token); "task" is a small task head (sequence
    #: classification, extractive QA: transformers BertForQuestionAnswering.qa_outputs is
    #: Linear(hidden, 2)) whose FLOPs and outputs are negligible: no vocabulary logits
    head: Literal["lm", "task"] = "lm"

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.kv_heads is not None and self.heads % self.kv_heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) must divide heads ({self.heads})")
        if self.head_dim is None and self.hidden % self.heads:
            raise ValueError(
                f"heads ({self.heads}) must divide hidden ({self.hidden}) unless head_dim is given"
            )
        if self.moe_experts and not 0 < self.moe_active <= self.moe_experts:
            raise ValueError("moe_active must be in 1..moe_experts for an MoE model")
        return self

    # ---- derived shape -------------------------------------------------------------
    # derived values are cached: the planner evaluates them ~10^5 times per plan
    def with_head(self, head: Literal["lm", "task"]) -> ModelSpec:
        """The same shape ending in `head`: rebuilt, not model_copy, so the cached derived
        values (logits_width) are computed again; itself when it already ends in it."""
        return self if head == self.head else ModelSpec(**{**self.model_dump(), "head": head})

    @cached_property
    def n_kv_heads(self) -> int:
        return self.kv_heads or self.heads

    @cached_property
    def d_head(self) -> int:
        return self.head_dim or self.hidden // self.heads

    @cached_property
    def q_dim(self) -> int:
        """Width of all query heads together (heads × head_dim)."""
        return self.heads * self.d_head

    @cached_property
    def kv_dim(self) -> int:
        """Width of all key (or value) heads together (kv_heads × head_dim)."""
        return self.n_kv_heads * self.d_head

    @cached_property
    def is_moe(self) -> bool:
        return self.moe_experts > 1

    @cached_property
    def logits_width(self) -> int:
        """Values the output layer computes per token: the vocabulary for an LM head, 0 for a
        task head (its few outputs are negligible)."""
        return self.vocab if self.head == "lm" else 0

    @cached_property
    def _counts(self) -> dict[str, int]:
        return {
            "layer": self._layer_params(False),
            "layer_active": self._layer_params(True),
            "matmul": self._layer_matmul_params(False),
            "matmul_active": self._layer_matmul_params(True),
        }

    # ---- parameter counts (weights + biases, by module) -------------------------------
    def linear_shapes(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear module of one layer, one expert for MoE."""
        h = self.hidden
        shapes = {
            "q": (h, self.q_dim),
            "k": (h, self.kv_dim),
            "v": (h, self.kv_dim),
            "o": (self.q_dim, h),
            "up": (h, self.ffn),
            "down": (self.ffn, h),
        }
        if self.ffn_kind == "gated":
            shapes["gate"] = (h, self.ffn)
        return shapes

    def attention_params(self) -> int:
        """Parameters of one attention block (Q, K, V, O projections and biases)."""
        h = self.hidden
        n = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        if self.qkv_bias:
            n += self.q_dim + 2 * self.kv_dim
        if self.out_bias:
            n += h
        return n

    def mlp_params(self) -> int:
        """Parameters of one (dense) FFN: 3·h·ffn gated, 2·h·ffn plain, plus biases."""
        matrices = 3 if self.ffn_kind == "gated" else 2
        n = matrices * self.hidden * self.ffn
        if self.mlp_bias:
            n += (matrices - 1) * self.ffn + self.hidden
        return n

    def norm_params(self) -> int:
        """One normalisation layer: RMSNorm has a gain (h), LayerNorm gain and bias (2h)."""
        return self.hidden if self.norm == "rmsnorm" else 2 * self.hidden

    def layer_params(self, active_only: bool = False) -> int:
        """Parameters of one transformer layer (attention + FFN/MoE + 2 norms)."""
        return self._counts["layer_active" if active_only else "layer"]

    def _layer_params(self, active_only: bool) -> int:
        mlp = self.mlp_params()
        if self.is_moe:
            experts = self.moe_active if active_only else self.moe_experts
            mlp = experts * mlp + self.hidden * self.moe_experts  # + router
        return self.attention_params() + mlp + 2 * self.norm_params()

    def embedding_params(self) -> int:
        """Input embedding table(s): token (+ learned positions, token types)."""
        rows = self.vocab + self.learned_positions + self.extra_embedding_rows
        return rows * self.hidden

    def head_params(self) -> int:
        """Output projection (LM head); 0 when tied to the input embedding or a task head."""
        return 0 if self.tied_embeddings else self.logits_width * self.hidden

    def params(self) -> int:
        """Total parameter count."""
        return self.layers * self.layer_params() + self._shared_params()

    def active_params(self) -> int:
        """Parameters touched per token (MoE: only the active experts)."""
        return self.layers * self.layer_params(active_only=True) + self._shared_params()

    def _shared_params(self) -> int:
        """The parameters outside the repeated layers (embeddings, LM head, final norm,
        extra_params), which params and active_params count alike."""
        return self.embedding_params() + self.head_params() + self.norm_params() + self.extra_params

    def layer_matmul_params(self, active_only: bool = True) -> int:
        """Weights of one layer that take part in matrix multiplies (for FLOP counts)."""
        return self._counts["matmul_active" if active_only else "matmul"]

    def _layer_matmul_params(self, active_only: bool) -> int:
        h = self.hidden
        attn = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        mlp = (3 if self.ffn_kind == "gated" else 2) * h * self.ffn
        if self.is_moe:
            mlp *= self.moe_active if active_only else self.moe_experts
            mlp += h * self.moe_experts
        return attn + mlp
