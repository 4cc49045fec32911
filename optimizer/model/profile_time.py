"""Training step time of a SampleProfile on a data-parallel cluster.

Per sample the GPU spends the roofline time max(FLOPs / (peak × efficiency), HBM traffic /
bandwidth) (Williams et al. 2009, "Roofline"), FLOPs = 3 × forward of the trained part
(backward = 2 × forward, Kaplan et al. 2020 §2.1) + 1 × forward of frozen parts (+1 × forward
with full recomputation, Chen et al. 2016). A measured point fixes the scale: the model's
time on the measured GPU is made equal to the measurement, and the same scale carries to other
GPUs and to data-parallel clusters (ring all-reduce of the gradients, ZeRO traffic as in
step_time). Without FLOPs a measured point alone scales by the ratio of achievable peaks.
"""

from __future__ import annotations

from optimizer.errors import ConfigError
from optimizer.model.cluster import Cluster, StepTime
from optimizer.model.comms import ring_allgather_s, ring_allreduce_s, ring_reduce_scatter_s
from optimizer.model.efficiency import base_efficiency
from optimizer.model.hardware import GpuSpec
from optimizer.model.pcie import dp_bus_bandwidth_gb_s
from optimizer.model.profile import MeasuredPoint, SampleProfile
from optimizer.model.profile_memory import activation_bytes_per_sample
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.stacks import knobs
from optimizer.units import BYTES_PER_DTYPE, GB

__all__ = [
    "training_gflop_per_sample",
    "model_gflop_per_sample",
    "profile_microbatch_times_s",
    "profile_step_time",
    "profile_interval",
    "measured_scale",
    "reference_point",
    "predicted_samples_per_s",
    "ProfileStepModel",
]

#: gradients travel as 16-bit values (DDP under autocast keeps parameter-dtype grads; bf16)
GRAD_BYTES = BYTES_PER_DTYPE["bf16"]
#: optimizer update reads and writes fp32 master + two moments + gradient (ZeRO §3: 16 B)
ADAM_STATE_BYTES = 16.0


def model_gflop_per_sample(profile: SampleProfile) -> float | None:
    """Model GFLOPs per trained sample (no recompute): 3 × trained forward + frozen forward."""
    if profile.forward_gflops_per_sample is None:
        return None
    return 3.0 * profile.forward_gflops_per_sample + profile.frozen_forward_gflops_per_sample


def training_gflop_per_sample(profile: SampleProfile, checkpointing: str) -> float | None:
    """Hardware GFLOPs per sample: model FLOPs + one more trained forward under full recompute."""
    model = model_gflop_per_sample(profile)
    if model is None or profile.forward_gflops_per_sample is None:
        return None
    return model + (profile.forward_gflops_per_sample if checkpointing == "full" else 0.0)


def _relative_work(checkpointing: str) -> float:
    """Work per sample in trained-forward units when FLOPs are unknown: 3, 4 with recompute."""
    return 4.0 if checkpointing == "full" else 3.0


def _roofline_s(
    profile: SampleProfile, gpu: GpuSpec, setup: TrainingSetup, checkpointing: str, a: PerfAssumptions
) -> float:
    """Seconds per sample at a large micro-batch (before the measured scale)."""
    peak = gpu.peak_tflops(setup.precision, setup.tf32_on)
    if peak is None:
        raise ConfigError(f"{gpu.gpu_id} has no {setup.precision} tensor path")
    eff = base_efficiency(gpu, setup.precision, a, setup.stack)[0]
    flops = training_gflop_per_sample(profile, checkpointing)
    if flops is None:  # only ratios matter: a measured point sets the scale
        return _relative_work(checkpointing) / (peak * eff)
    compute = flops * 1e9 / (peak * 1e12 * eff)
    acts = activation_bytes_per_sample(profile, setup, checkpointing, a)
    traffic = (
        0.0 if acts is None else acts * a.activation_traffic / (gpu.mem_bandwidth_gb_s * GB * a.bw_efficiency)
    )
    return max(compute, traffic)


def _batch_factor(micro_batch: int, a: PerfAssumptions) -> float:
    return 1.0 + a.sample_batch_half / micro_batch


def _update_s(profile: SampleProfile, gpu: GpuSpec, shard: int, a: PerfAssumptions) -> float:
    """Optimizer update, memory-bound: read + write 16 B of state per trained parameter."""
    return (
        profile.trained_params
        / shard
        * ADAM_STATE_BYTES
        * 2
        / (gpu.mem_bandwidth_gb_s * GB * a.bw_efficiency)
    )


def reference_point(profile: SampleProfile, gpu: GpuSpec | None = None) -> MeasuredPoint | None:
    """The measured point that sets the scale: one on `gpu` if any, else the first resolved one
    (without recomputation preferred)."""
    points = [p for p in profile.measured if p.gpu is not None]
    if gpu is not None:
        same = [p for p in points if p.gpu_id == gpu.gpu_id]
        points = same or points
    points.sort(key=lambda p: p.checkpointing == "full")
    return points[0] if points else None


def measured_scale(profile: SampleProfile, gpu: GpuSpec, setup: TrainingSetup, a: PerfAssumptions) -> float:
    """Measured / modelled seconds per sample of the reference point (1 without one).

    The measured step of micro-batch b on each of n GPUs lasts b·n / samples_per_s; its
    optimizer update is taken out before the ratio (the measured run's gradient all-reduce is
    taken as hidden behind backward)."""
    p = reference_point(profile, gpu)
    if p is None or p.gpu is None:
        if profile.forward_gflops_per_sample is None:
            raise ConfigError(
                f"model {profile.name}: forward FLOPs are unknown; give "
                "forward_gflops_per_sample or a measured point"
            )
        return 1.0
    measured_setup = TrainingSetup(seq_len=1, precision=p.precision, optimizer=p.optimizer, stack=setup.stack)
    step_s = p.micro_batch * p.num_gpus / p.samples_per_s
    compute_s = max(step_s - _update_s(profile, p.gpu, 1, a), 0.05 * step_s)
    model_s = (
        p.micro_batch
        * _batch_factor(p.micro_batch, a)
        * _roofline_s(profile, p.gpu, measured_setup, p.checkpointing, a)
    )
    return compute_s / model_s


def profile_microbatch_times_s(
    profile: SampleProfile,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    assumptions: PerfAssumptions | None = None,
) -> tuple[float, float, float, float]:
    """(compute, 0, 0, efficiency) of one micro-batch: no tensor/pipeline traffic."""
    a = assumptions or PerfAssumptions()
    gpu, b = cluster.gpu, layout.micro_batch
    per_sample = _roofline_s(profile, gpu, setup, layout.checkpointing, a) * measured_scale(
        profile, gpu, setup, a
    )
    compute = b * _batch_factor(b, a) * per_sample
    flops = training_gflop_per_sample(profile, layout.checkpointing)
    peak = gpu.peak_tflops(setup.precision, setup.tf32_on) or 0.0
    eff = flops * 1e9 / (per_sample * peak * 1e12) if flops is not None and peak else 0.0
    return compute, 0.0, 0.0, eff


def profile_step_time(
    profile: SampleProfile,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    dp_bus_gb_s: float,
    assumptions: PerfAssumptions | None = None,
    microbatch: tuple[float, float, float, float] | None = None,
) -> StepTime:
    """Seconds per optimizer step: grad_accum micro-batches + exposed data-parallel traffic +
    the optimizer update. `dp_bus_gb_s` is the data-parallel ring's bus bandwidth."""
    a = assumptions or PerfAssumptions()
    k = knobs(setup, a)
    gpu, m, dp = cluster.gpu, layout.grad_accum, layout.dp
    compute_mb, _, _, eff = microbatch or profile_microbatch_times_s(profile, setup, layout, cluster, a)
    lat = a.small_message_latency_s
    grad_bytes = profile.trained_params * GRAD_BYTES
    if layout.zero_stage >= 3:  # gather weights in forward and backward, reduce-scatter grads
        dp_comm = 2 * m * ring_allgather_s(grad_bytes, dp, dp_bus_gb_s, lat) + ring_reduce_scatter_s(
            grad_bytes, dp, dp_bus_gb_s, lat
        )
        window = compute_mb * m
    elif layout.zero_stage >= 1:  # reduce-scatter + all-gather = one all-reduce's volume
        dp_comm = ring_reduce_scatter_s(grad_bytes, dp, dp_bus_gb_s, lat) + ring_allgather_s(
            grad_bytes, dp, dp_bus_gb_s, lat
        )
        window = compute_mb
    else:  # DDP all-reduce, hidden behind the last micro-batch's backward (2/3 of it)
        dp_comm = ring_allreduce_s(grad_bytes, dp, dp_bus_gb_s, lat)
        window = compute_mb * (2.0 / 3.0)
    dp_exposed = dp_comm - min(dp_comm * k.dp_overlap, window)
    opt_s = _update_s(profile, gpu, dp if layout.zero_stage >= 1 else 1, a)
    compute_s = m * compute_mb
    time_s = compute_s + dp_exposed + opt_s
    samples_per_s = layout.global_batch * setup.seq_len / time_s
    peak_total = (gpu.peak_tflops(setup.precision, setup.tf32_on) or 0.0) * 1e12 * layout.gpus
    model = model_gflop_per_sample(profile)
    hardware = training_gflop_per_sample(profile, layout.checkpointing)
    mfu = model * 1e9 * samples_per_s / peak_total if model is not None and peak_total else 0.0
    hfu = hardware * 1e9 * samples_per_s / peak_total if hardware is not None and peak_total else 0.0
    p = reference_point(profile, gpu)
    return StepTime(
        time_s=time_s,
        compute_s=compute_s + opt_s,
        communication_s=dp_exposed,
        bubble_s=0.0,
        tokens_per_s=samples_per_s,
        tokens_per_s_per_gpu=samples_per_s / layout.gpus,
        mfu=mfu,
        hfu=hfu,
        efficiency=eff,
        calibrated=p is not None,
        parts_s={
            "compute": compute_s,
            "optimizer": opt_s,
            "tp": 0.0,
            "pp": 0.0,
            "dp_total": dp_comm,
            "dp_exposed": dp_exposed,
            "bubble": 0.0,
        },
        interval=profile_interval(profile, gpu, a, setup.precision),
    )


def profile_interval(
    profile: SampleProfile,
    gpu: GpuSpec,
    assumptions: PerfAssumptions | None = None,
    precision: str | None = None,
) -> tuple[float, float]:
    """(P10, P90) multipliers of a profile's predicted step time on `gpu` at `precision`
    (None: the measured one): narrow on the GPU type and precision it was measured at, wider
    on another type of its generation or another precision, widest across generations or with
    no measurement (PerfAssumptions.profile_band_*, GUESSES)."""
    a = assumptions or PerfAssumptions()
    p = reference_point(profile, gpu)
    if p is None or p.gpu is None:
        return a.profile_band_unmeasured
    if p.gpu_id == gpu.gpu_id and (precision is None or precision == p.precision):
        return a.profile_band_same_gpu
    if p.gpu.generation == gpu.generation:
        return a.profile_band_same_generation
    return a.profile_band_cross_generation


def predicted_samples_per_s(
    profile: SampleProfile,
    setup: TrainingSetup,
    gpu: GpuSpec,
    micro_batch: int,
    assumptions: PerfAssumptions | None = None,
) -> float:
    """Samples/s one GPU trains at `micro_batch` (no data-parallel traffic): what a data
    loader must feed it."""
    a = assumptions or PerfAssumptions()
    step = profile_step_time(
        profile,
        setup,
        Layout(micro_batch=micro_batch),
        Cluster(gpu=gpu, gpus_per_node=1),
        gpu.intra_node_bw_gb_s,
        a,
    )
    return step.tokens_per_s


class ProfileStepModel:
    """The step time of a per-sample profile on one GPU type (optimizer.model.step_model.StepModel):
    a roofline per sample scaled by the measured point, data parallelism only."""

    def __init__(
        self, profile: SampleProfile, setup: TrainingSetup, gpu: GpuSpec, a: PerfAssumptions
    ) -> None:
        self.profile, self.setup, self.gpu, self.a = profile, setup, gpu, a
        gflop = model_gflop_per_sample(profile)
        self._model_flops = 0.0 if gflop is None else gflop * 1e9
        self.base_efficiency = base_efficiency(gpu, setup.precision, a, setup.stack)[0]
        self.centre = 1.0  # a profile's own band is centred on its prediction

    @property
    def own_band(self) -> bool:
        """A profile states its own band (profile_interval): the GPU's band does not bound it."""
        return True

    @property
    def efficiency_ceiling(self) -> float:
        return self.base_efficiency

    @property
    def model_flops_per_token(self) -> float:
        return self._model_flops

    def microbatch_times_s(self, layout: Layout, cluster: Cluster) -> tuple[float, float, float, float]:
        return profile_microbatch_times_s(self.profile, self.setup, layout, cluster, self.a)

    def step_time(
        self, layout: Layout, cluster: Cluster, micro: tuple[float, float, float, float] | None = None
    ) -> StepTime:
        bw = dp_bus_bandwidth_gb_s(cluster, layout.gpus > cluster.gpus_per_node, self.a)
        return profile_step_time(self.profile, self.setup, layout, cluster, bw, self.a, micro)
