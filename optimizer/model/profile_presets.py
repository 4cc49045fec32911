"""Preset SampleProfiles: CNN, diffusion UNets and speech models, each figure with its source.

Parameters and FLOPs from benchmarks/validation/model_profiles_source.csv (paper tables,
torchvision docs, model cards); measured points from published benchmark tables. A figure
no source gives stays None (unknown): such a preset plans only once the job adds a measured
point (`[model.measured]` or `ccopt calibrate`).
"""

from __future__ import annotations

from typing import Any

from optimizer.model.profile import MeasuredPoint, SampleProfile

__all__ = ["PROFILE_PRESETS"]

_DLE_RN50 = (
    "NVIDIA DeepLearningExamples ConvNets/resnet50v1.5 README @729963dd, 'Training "
    "performance: NVIDIA DGX A100 (8x A100 80GB)', GPUs=1, mixed precision 2470 img/s, "
    "batch 256 (configs.yml); benchmarks/validation/nvidia-deeplearningexamples.csv "
    "dle-rn50-a100-80-amp-1gpu"
)
_DREAMBOOTH_T4 = (
    "ShivamShrirao/diffusers examples/dreambooth README flags table, 'Tested on "
    "Tesla T4 GPU' (SD v1.x UNet trained, fp16, use_8bit_adam): rows batch 1 no "
    "checkpointing 11.17 GB 1.14 it/s and batch 1 gradient_checkpointing 9.92 GB "
    "0.93 it/s; 'GB VRAM usage' read as nvidia-smi (device) GiB; one step = one "
    "instance image (prior preservation, which would double it, not stated)"
)
#: what both DreamBooth T4 rows share (one GPU, fp16, batch 1, 8-bit Adam, nvidia-smi memory)
_DREAMBOOTH_T4_RUN: dict[str, Any] = dict(
    gpu_id="T4",
    precision="fp16",
    micro_batch=1,
    memory_metric="device",
    optimizer="adam-8bit",
    source=_DREAMBOOTH_T4,
)

PROFILE_PRESETS: dict[str, SampleProfile] = {
    p.name: p
    for p in (
        SampleProfile(
            name="resnet50",
            family="cnn",
            sample_unit="image",
            # torchvision resnet50 IMAGENET1K_V1 num_params 25,557,032
            trained_params=25_557_032,
            # torchvision GFLOPS 4.09 counts multiply-adds (He et al. 2016 Table 1: 3.8e9 for
            # v1); true FLOPs 2 × 4.09 (model_profiles_source.csv resnet50)
            forward_gflops_per_sample=2 * 4.09,
            # DERIVED: benchmarks/profile_activations.py from He et al. 2016 Table 1 shapes
            # (v1.5): 21,075,968 saved 16-bit values + 200,704 int64 max-pool indices
            activation_bytes_per_sample=21_075_968 * 2 + 200_704 * 8,
            activation_precision="fp16",
            measured=(
                MeasuredPoint(
                    gpu_id="A100-80GB",
                    precision="fp16",
                    micro_batch=256,
                    samples_per_s=2470.0,
                    optimizer="sgd",
                    source=_DLE_RN50,
                ),
            ),
            source="torchvision resnet50 docs; He et al. 2016; " + _DLE_RN50,
            notes="ImageNet 224×224; a sample is one image",
        ),
        SampleProfile(
            name="sd15-unet",
            family="diffusion-unet",
            sample_unit="image",
            # BK-SDM MODEL_CARD (Nota-NetsPresso/BK-SDM): SDM-v1.4 1.04B params, U-Net 0.86B;
            # the rest (CLIP text encoder + VAE) is frozen and runs forward only
            trained_params=860_000_000,
            frozen_params=180_000_000,
            forward_gflops_per_sample=None,  # no primary source found (model_profiles_source.csv)
            measured=(
                MeasuredPoint(samples_per_s=1.14, peak_memory_gib=11.17, **_DREAMBOOTH_T4_RUN),
                MeasuredPoint(
                    samples_per_s=0.93, peak_memory_gib=9.92, checkpointing="full", **_DREAMBOOTH_T4_RUN
                ),
            ),
            source="BK-SDM MODEL_CARD; " + _DREAMBOOTH_T4,
            notes="Stable Diffusion 1.x UNet training at 512×512 (64×64×4 latents), text "
            "encoder and VAE frozen; a sample is one image",
        ),
        SampleProfile(
            name="sdxl-unet",
            family="diffusion-unet",
            sample_unit="image",
            # Podell et al. 2023 (arXiv:2307.01952) Tab. 1: SDXL UNet 2.6B
            trained_params=2_600_000_000,
            source="Podell et al. 2023 Tab. 1 (via model_profiles_source.csv sdxl-unet)",
            notes="1024×1024 (128×128×4 latents); the two frozen text encoders and the VAE are "
            "not counted (sizes not read from a primary source); FLOPs and activations "
            "unknown: add a measured point",
        ),
        SampleProfile(
            name="whisper-small",
            family="encoder-decoder-speech",
            sample_unit="clip",
            trained_params=244_000_000,  # openai/whisper README 'Available models': small 244 M
            source="openai/whisper README, Available models",
            notes="a sample is one 30-second clip; FLOPs and activations unknown: add a measured point",
        ),
        SampleProfile(
            name="whisper-large",
            family="encoder-decoder-speech",
            sample_unit="clip",
            trained_params=1_550_000_000,  # openai/whisper README: large 1550 M
            source="openai/whisper README, Available models",
            notes="a sample is one 30-second clip; FLOPs and activations unknown: add a measured point",
        ),
    )
}
