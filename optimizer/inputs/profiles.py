"""A SampleProfile's measured points resolved against the GPU catalog, and the check that the
profile can be planned."""

from __future__ import annotations

from dataclasses import replace

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.profile_store import load_profile_points
from optimizer.model.profile import MeasuredPoint, SampleProfile

__all__ = ["resolve_profile"]


def resolve_profile(
    profile: SampleProfile, extra: tuple[MeasuredPoint, ...] = (), field: str = "model"
) -> SampleProfile:
    """The profile with `extra` measured points first, then the runs stored by `ccopt
    calibrate` (inputs.profile_store), then its own, every point's GPU looked up in the
    catalog. Raises ConfigError for an unknown GPU, a GPU without the point's precision, a
    peak below the model states, or a profile that cannot be planned (no FLOPs and no
    measured point, or no activation size anywhere)."""
    points = []
    for i, p in enumerate(extra + load_profile_points(profile.name) + profile.measured):
        where = f"{field}.measured" + (f"[{i}]" if len(extra) > 1 else "")
        gpu = get_gpu(p.gpu_id, f"{where}.gpu")
        if not gpu.supports(p.precision):
            raise ConfigError(
                f"{where}.precision: {gpu.gpu_id} has no {p.precision} tensor path; "
                f"allowed: the precisions `ccopt gpus` lists for it"
            )
        if p.peak_memory_gib is not None and p.peak_memory_gib > gpu.memory_gib * 1.02:
            raise ConfigError(
                f"{where}.peak_memory_gib: {p.peak_memory_gib:g} GiB is more than "
                f"the {gpu.memory_gib:g} GiB of a {gpu.gpu_id}; allowed: ≤ the card"
            )
        points.append(replace(p, gpu_id=gpu.gpu_id, gpu=gpu))
    out = replace(profile, measured=tuple(points))
    if not out.plannable:
        missing = []
        if out.forward_gflops_per_sample is None and not points:
            missing.append("forward_gflops_per_sample")
        if (
            out.activation_bytes_per_sample is None
            and not any(p.peak_memory_gib for p in points)
            and out.checkpointed_activation_bytes_per_sample is None
        ):
            missing.append("activation_mib_per_sample")
        raise ConfigError(
            f"{field}: {profile.name} cannot be planned: {' and '.join(missing)} unknown "
            f"({profile.notes or 'no source gives it'}); add a measured run as [model.measured] "
            "with gpu, precision, micro_batch, samples_per_s and peak_memory_gib "
            "(or `ccopt measure`)"
        )
    return out
