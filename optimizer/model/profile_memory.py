"""Per-GPU training memory of a SampleProfile: model states from its parameters, activations
linear in the micro-batch (per-sample bytes stated, or derived from a measured peak)."""

from __future__ import annotations

import math

from optimizer.model.memory_breakdown import MemoryBreakdown
from optimizer.model.profile import MeasuredPoint, SampleProfile
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.stacks import knobs
from optimizer.model.states import model_state_bytes_per_param
from optimizer.units import GIB

__all__ = [
    "profile_training_memory",
    "ProfileMemoryModel",
    "activation_bytes_per_sample",
    "activation_value_bytes",
    "state_bytes",
    "ADAFACTOR_HIDDEN",
]

#: GUESS: width used for Adafactor's factored second moment of a profile (no shape known)
ADAFACTOR_HIDDEN = 1024


def activation_value_bytes(precision: str) -> float:
    """Bytes of one saved activation value: 4 in fp32 training, else 2 (fp8 training keeps
    its saved activations in 16 bit, as memory.activation_bytes_per_layer assumes)."""
    return 4.0 if precision == "fp32" else 2.0


def state_bytes(
    profile: SampleProfile,
    precision: str,
    optimizer: str,
    layout: Layout,
    setup: TrainingSetup,
    assumptions: PerfAssumptions,
) -> tuple[float, float, float]:
    """(weights, gradients, optimizer) bytes on one GPU: trained parameters at the
    mixed-precision state bytes (ZeRO §3), sharded by the ZeRO stage over dp (Rajbhandari et
    al. 2020 Fig. 1); frozen parameters (encoders run forward only) at 16 bit, unsharded."""
    k = knobs(setup, assumptions)
    master = k.stack.fp32_master if setup.fp32_master is None else setup.fp32_master
    w_b, g_b, o_b = model_state_bytes_per_param(
        precision,
        optimizer,
        ADAFACTOR_HIDDEN,
        k.stack.fp32_grad_buffer,
        master,
        master_remainders=setup.master_remainders,
    )
    n, dp, zero = profile.trained_params, layout.dp, layout.zero_stage
    weights = n * w_b / (dp if zero >= 3 else 1)
    weights += profile.frozen_params * activation_value_bytes(precision)
    gradients = n * g_b / (dp if zero >= 2 else 1)
    opt = n * o_b / (dp if zero >= 1 else 1)
    return weights, gradients, opt


def _allocated_from_metric(point: MeasuredPoint, setup: TrainingSetup, assumptions: PerfAssumptions) -> float:
    """The peak allocated bytes behind a measured figure: device = allocated × (1 + cache) +
    context and reserved = allocated × (1 + cache), inverted (MemoryBreakdown's definitions)."""
    k = knobs(setup, assumptions)
    peak = (point.peak_memory_gib or 0.0) * GIB
    if point.memory_metric == "allocated":
        return peak
    if point.memory_metric == "reserved":
        return peak / (1.0 + k.allocator_cache)
    return (peak - k.context_gib * GIB) / (1.0 + k.allocator_cache)


def _measured_activation_bytes(
    profile: SampleProfile, mode: str, setup: TrainingSetup, assumptions: PerfAssumptions
) -> float | None:
    """Activation bytes per sample (16-bit values) implied by a measured peak in `mode`:
    (peak allocated − model states − workspace) / micro-batch."""
    for p in profile.measured:
        if p.peak_memory_gib is None or _mode(p.checkpointing) != mode:
            continue
        measured_setup = TrainingSetup(
            seq_len=1, precision=p.precision, optimizer=p.optimizer, stack=setup.stack
        )
        states = sum(
            state_bytes(profile, p.precision, p.optimizer, Layout(dp=p.num_gpus), measured_setup, assumptions)
        )
        acts = (
            _allocated_from_metric(p, measured_setup, assumptions) - states - assumptions.workspace_gib * GIB
        )
        # as 16-bit values, so the precision scaling below applies to every source alike
        return max(acts, 0.0) / p.micro_batch * 2.0 / activation_value_bytes(p.precision)
    return None


def _mode(checkpointing: str) -> str:
    """ "full" recomputes; "none" and "selective" keep what the profile states (a profile has
    no attention-score term for selective recompute to drop)."""
    return "full" if checkpointing == "full" else "none"


def activation_bytes_per_sample(
    profile: SampleProfile, setup: TrainingSetup, checkpointing: str, assumptions: PerfAssumptions
) -> float | None:
    """Bytes one sample keeps for backward at `setup.precision` under `checkpointing`, or None
    when unknown: a measured peak first, then the stated figure, scaled by value size."""
    mode = _mode(checkpointing)
    value = _measured_activation_bytes(profile, mode, setup, assumptions)
    if value is None:
        stated = (
            profile.checkpointed_activation_bytes_per_sample
            if mode == "full"
            else profile.activation_bytes_per_sample
        )
        if stated is None:
            return None
        value = stated * 2.0 / activation_value_bytes(profile.activation_precision)
    return value * activation_value_bytes(setup.precision) / 2.0


def profile_training_memory(
    profile: SampleProfile, setup: TrainingSetup, layout: Layout, assumptions: PerfAssumptions | None = None
) -> MemoryBreakdown:
    """Peak memory of one data-parallel GPU (GiB per term). Activations grow linearly with the
    micro-batch; an unknown checkpointing mode needs infinite memory (never fits)."""
    a = assumptions or PerfAssumptions()
    k = knobs(setup, a)
    weights, gradients, opt = state_bytes(profile, setup.precision, setup.optimizer, layout, setup, a)
    per_sample = activation_bytes_per_sample(profile, setup, layout.checkpointing, a)
    acts = math.inf if per_sample is None else per_sample * layout.micro_batch
    overhead = a.workspace_gib * GIB
    allocated = weights + gradients + opt + acts + overhead
    return MemoryBreakdown.from_bytes(
        weights,
        gradients,
        opt,
        acts,
        0.0,
        overhead,
        cache_bytes=k.allocator_cache * allocated,
        context_gib=k.context_gib,
    )


class ProfileMemoryModel:
    """Training memory of a per-sample profile (optimizer.model.memory.MemoryModel)."""

    def __init__(self, profile: SampleProfile, setup: TrainingSetup, a: PerfAssumptions) -> None:
        self.profile, self.setup, self.a = profile, setup, a

    def memory(self, layout: Layout) -> MemoryBreakdown:
        return profile_training_memory(self.profile, self.setup, layout, self.a)
