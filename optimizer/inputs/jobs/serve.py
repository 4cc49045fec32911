"""Serving job files (TOML): model, inference workload, latency targets, hardware.

A serving job reuses `[model]`, `[[hardware.owned]]`, `[[hardware.buy]]` and `[assumptions]`
of optimizer.inputs.jobs.train; `[workload]` has `kind = "serve"` and `[constraints]` latency targets::

    [model]
    preset = "mistral-7b"
    [workload]
    kind = "serve"
    precision = "fp16"            # fp16 | bf16 | fp8 | int8 | int4 (awq, gptq = int4)
    concurrent_users = 100        # or requests_per_s = 5
    think_time_s = 30
    prompt_tokens = 512           # means; or [[workload.buckets]] share/prompt/output
    output_tokens = 256
    [constraints]
    ttft_s = 1.0
    tpot_ms = 100
    redundancy = "n+1"
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from optimizer.inputs.jobs.common import StrictModel, confidence_field
from optimizer.inputs.jobs.constraint_fields import AllowedNames, CloudAllowed, GpuTypes
from optimizer.inputs.jobs.kind import job_of_kind
from optimizer.inputs.jobs.strict import RenamedFieldsModel
from optimizer.inputs.jobs.train import JobFile, stack_name
from optimizer.inputs.toml_file import read_toml_as
from optimizer.model.layout import TP_DEGREES

__all__ = [
    "ServeJob",
    "ServeWorkload",
    "ServeConstraints",
    "Bucket",
    "QUANTIZATIONS",
    "QUANT_ALIASES",
    "MAX_BATCH_DEFAULT",
    "load_serve_job",
    "serve_job_from_dict",
]

#: at most a million requests per second (think_time_s ≥ 1 ms keeps concurrent users below it too)
MAX_REQUESTS_PER_S = 1e6
#: at most this many spare instances per deployment (N+k redundancy)
MAX_SPARE = 100

#: weight formats a serving job may name; awq / gptq are 4-bit weight-only formats (= int4)
QUANTIZATIONS = ("fp16", "bf16", "fp8", "int8", "int4")
QUANT_ALIASES = {"awq": "int4", "gptq": "int4", "float16": "fp16", "bfloat16": "bf16"}
#: vLLM's default max_num_seqs (vllm/config.py, SchedulerConfig): concurrent sequences cap
MAX_BATCH_DEFAULT = 256


def _quant(value: object) -> Any:
    if value is None or not isinstance(value, str):
        return value
    v = value.strip().lower()
    v = QUANT_ALIASES.get(v, v)
    if v not in QUANTIZATIONS:
        allowed = ", ".join(QUANTIZATIONS + tuple(k for k in QUANT_ALIASES if k in ("awq", "gptq")))
        raise ValueError(f"{value!r} is not allowed; allowed: {allowed}")
    return v


#: the most request-mix buckets one job may give: the model has a variable per option × bucket
#: (200 buckets took ~25 s to plan; merge buckets of similar lengths instead)
MAX_BUCKETS = 32


class Bucket(StrictModel):
    """`[[workload.buckets]]`: a share of the requests with its mean prompt and output length."""

    share: float = Field(gt=0, le=1, description="fraction of requests (shares sum to 1)")
    prompt_tokens: int = Field(
        gt=0, le=2**22, description="mean prompt (input) tokens of a request in this bucket"
    )
    output_tokens: int = Field(
        gt=0, le=2**22, description="mean output (generated) tokens of a request in this bucket"
    )

    @property
    def context(self) -> int:
        """Tokens a sequence holds in the KV cache at its last output token."""
        return self.prompt_tokens + self.output_tokens


class ServeWorkload(RenamedFieldsModel):
    """`[workload]` of a serving job: load, request sizes and weight format."""

    OLD_NAMES_OF = "serve.workload"

    kind: Literal["serve"] = Field(
        default="serve",
        description='"serve": marks a serving job (`ccopt serve`; training kinds go to `ccopt plan`)',
    )
    precision: str | None = Field(
        default=None,
        description="weight format: fp16 | bf16 | fp8 | "
        "int8 | int4 (awq, gptq = int4); default fp16 (old name: "
        "quantization)",
    )
    kv_cache_precision: Literal["fp16", "bf16", "fp8", "int8"] = Field(
        default="fp16", description="KV-cache precision (fp8/int8 halve the cache; old name: kv_precision)"
    )
    stack: str = Field(
        default="generic",
        description="serving stack profile: vllm, tensorrt-llm, tgi, llama.cpp, ... (`ccopt stacks`)",
    )
    requests_per_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_REQUESTS_PER_S,
        description="mean request rate (or concurrent_users with think_time_s)",
    )
    concurrent_users: int | None = Field(
        default=None, gt=0, le=10**9, description="users sending a request every think_time_s"
    )
    think_time_s: float | None = Field(
        default=None, ge=0.001, le=86_400, description="mean pause of a user between requests"
    )
    prompt_tokens: int | None = Field(
        default=None,
        gt=0,
        le=2**22,
        description="mean prompt tokens per request (one bucket; or [[workload.buckets]])",
    )
    output_tokens: int | None = Field(
        default=None, gt=0, le=2**22, description="mean output tokens per request"
    )
    buckets: tuple[Bucket, ...] = Field(
        default=(),
        max_length=MAX_BUCKETS,
        description="`[[workload.buckets]]`: the "
        "request mix as shares with their own mean prompt and "
        "output tokens (instead of prompt_tokens/output_tokens)",
    )
    hours_per_day: float = Field(
        default=24.0, gt=0, le=24, description="hours a day the service runs (costs per served hour)"
    )

    @field_validator("stack")
    @classmethod
    def _stack(cls, v: str) -> str:
        return stack_name(v)

    @field_validator("precision", mode="before")
    @classmethod
    def _norm_precision(cls, v: object) -> Any:
        return _quant(v)

    @model_validator(mode="after")
    def _check(self) -> ServeWorkload:
        self.require_one_of("requests_per_s", "concurrent_users")
        if self.concurrent_users is not None and self.think_time_s is None:
            raise ValueError(
                "concurrent_users needs think_time_s (seconds a user pauses between requests, > 0)"
            )
        if self.buckets:
            if self.prompt_tokens is not None or self.output_tokens is not None:
                raise ValueError("give prompt_tokens/output_tokens or buckets, not both")
            total = sum(b.share for b in self.buckets)
            if not math.isclose(total, 1.0, abs_tol=1e-6):
                raise ValueError(f"buckets: shares must sum to 1, got {total:g}")
        elif self.prompt_tokens is None or self.output_tokens is None:
            raise ValueError("give prompt_tokens and output_tokens (means), or [[workload.buckets]]")
        return self

    @property
    def weight_precision(self) -> str:
        """Canonical weight format (fp16 when none is given)."""
        return self.precision or "fp16"

    @property
    def load_requests_per_s(self) -> float:
        """Arrival rate, requests/s.

        For concurrent users: N / Z (closed-loop Little's law, λ = N / (Z + R), with the
        response time R taken as 0 — an upper bound on the load, so the sizing is safe).
        """
        if self.requests_per_s is not None:
            return self.requests_per_s
        return (self.concurrent_users or 0) / (self.think_time_s or 1.0)

    def request_buckets(self) -> tuple[Bucket, ...]:
        """The request mix: the given buckets, or one bucket of the means."""
        if self.buckets:
            return self.buckets
        return (
            Bucket(share=1.0, prompt_tokens=self.prompt_tokens or 1, output_tokens=self.output_tokens or 1),
        )


class ServeConstraints(RenamedFieldsModel):
    """`[constraints]` of a serving job: latency targets, redundancy and what may be used."""

    OLD_NAMES_OF = "serve.constraints"

    ttft_s: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="at most this time to the first token, seconds "
        "(one prefill and one decode step, no queueing)",
    )
    tpot_ms: float | None = Field(
        default=None, gt=0, le=60_000, description="at most this time per output token, milliseconds"
    )
    e2e_p50_s: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        description="at most this end-to-end latency of a request "
        "(first token + every output token), seconds",
    )
    confidence: float = confidence_field(
        "latency targets and the request rate are met (slower replicas than the median prediction)"
    )
    gpu_types: GpuTypes = None
    providers: AllowedNames = Field(
        default=None,
        description="providers allowed (aws, gcp, azure, lambda, oci, runpod, vast, coreweave; "
        "`ccopt prices`); default: all",
    )
    regions: AllowedNames = Field(
        default=None, description="regions allowed (as in `ccopt prices`); default: all"
    )
    pricing: tuple[Literal["on_demand", "spot", "reserved_1y", "reserved_3y"], ...] = Field(
        default=("on_demand",), min_length=1, description="pricing models allowed"
    )
    redundancy: str | int = Field(
        default=0,
        description='"n+1", "n+2" or an integer: spare '
        "instances per deployment (a failed box loses all its "
        "replicas)",
    )
    min_capacity_headroom_fraction: float = Field(
        default=0.0,
        ge=0,
        le=10,
        description="spare capacity kept above the load: capacity ≥ load × (1 + this) (old name: headroom)",
    )
    max_replicas: int | None = Field(
        default=None, gt=0, le=100_000, description="at most this many replicas in total"
    )
    max_batch: int = Field(
        default=MAX_BATCH_DEFAULT, gt=0, le=4096, description="cap on concurrent sequences per replica"
    )
    tp_degrees: tuple[int, ...] | None = Field(
        default=None,
        min_length=1,
        description="tensor-parallel degrees a replica may use (1, "
        "2, 4, 8, 16; within one instance); default: every degree that divides the GPUs per "
        "instance and the heads (old name: tp)",
    )
    cloud: CloudAllowed = True

    @field_validator("redundancy")
    @classmethod
    def _redundancy(cls, v: str | int) -> str | int:
        allowed = f'"n+1", "n+2", ... or an integer 0 to {MAX_SPARE} (spare instances)'
        if isinstance(v, int):
            if not 0 <= v <= MAX_SPARE:
                raise ValueError(f"{v} is not allowed; allowed: {allowed}")
            return v
        text = v.strip().lower().replace(" ", "")
        if text in ("n", "none", "0"):
            return 0
        if text.startswith("n+") and text[2:].isdigit() and int(text[2:]) <= MAX_SPARE:
            return int(text[2:])
        raise ValueError(f"{v!r} is not allowed; allowed: {allowed}")

    @field_validator("tp_degrees")
    @classmethod
    def _tp(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is not None:
            bad = [t for t in v if t not in TP_DEGREES]
            if bad:
                raise ValueError(f"{bad or v} not allowed; allowed: {', '.join(map(str, TP_DEGREES))}")
        return v

    @property
    def spare_replicas(self) -> int:
        """Spare instances each deployment keeps (N+k redundancy; the old name says replicas)."""
        return int(self.redundancy)


class ServeJob(JobFile):
    """One serving job file."""

    name: str = Field(default="serve", description="a label for the serving job in outputs")
    workload: ServeWorkload = Field(
        description='`[workload]`: load, request sizes and weight format (kind = "serve")'
    )
    constraints: ServeConstraints = Field(
        default=ServeConstraints(),
        description="`[constraints]`: latency targets, redundancy and what may be used",
    )

    def named_regions(self) -> tuple[str, ...]:
        """The regions this job names: a reduced large price table keeps every row of them."""
        return tuple(self.constraints.regions or ())


def serve_job_from_dict(data: dict[str, Any], source: str = "job") -> ServeJob:
    """Validate a decoded serving job table.

    Raises:
        ConfigError: one line naming the field, the problem and allowed values.
    """
    return job_of_kind(
        ServeJob,
        data,
        source,
        takes=lambda kind: kind == "serve",
        refusal='is not a serving job; use kind = "serve" (or `ccopt plan` for training jobs)',
        default_kind="serve",
    )


def load_serve_job(path: str | Path) -> tuple[ServeJob, Path]:
    """Read and validate a serving job TOML. Returns the job and its directory.

    Raises:
        ConfigError: missing file, invalid TOML, or an invalid field.
    """
    return read_toml_as(path, serve_job_from_dict)
