"""Per-sample models (SampleProfile) and the non-decoder presets: published figures, measured
points reproduced, extrapolation to another GPU inside the reported band, memory by hand."""

from __future__ import annotations

import math

import pytest

from optimizer.errors import ConfigError
from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.models import load_model
from optimizer.model.comms import ring_allreduce_s
from optimizer.model.flops import forward_flops_per_token
from optimizer.model.memory import training_memory
from optimizer.model.presets import PRESETS
from optimizer.model.profile_time import predicted_samples_per_s, profile_interval
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.step_time import Cluster, training_step_time
from optimizer.units import GB, GIB


def _resnet50_v15_macs() -> float:
    """Multiply-adds of one 224² forward from He et al. 2016 Table 1 (50-layer column), v1.5
    stride placement: k²·C_in·C_out·H_out·W_out per conv, plus the 2048→1000 classifier."""
    macs = 7 * 7 * 3 * 64 * 112 * 112  # conv1, stride 2
    c_in, side = 64, 56
    for width, blocks, out in ((64, 3, 56), (128, 4, 28), (256, 6, 14), (512, 3, 7)):
        for b in range(blocks):
            first = side if b == 0 else out
            macs += c_in * width * first * first  # 1×1 reduce
            macs += 9 * width * width * out * out  # 3×3 (stride here in v1.5)
            macs += width * 4 * width * out * out  # 1×1 expand
            if b == 0:
                macs += c_in * 4 * width * out * out  # projection shortcut
            c_in = 4 * width
        side = out
    return macs + 2048 * 1000


def _transformer_forward_macs(name: str, tokens: int) -> float:
    layers, attention, head = forward_flops_per_token(PRESETS[name], tokens)
    return (layers + attention + head) * tokens / 2  # FLOPs -> multiply-adds


# published figure, how we compute it independently, tolerance; sources in each row
PUBLISHED = [
    # He et al. 2016 Table 1: ResNet-50 3.8e9 FLOPs (multiply-adds, v1); torchvision resnet50
    # (v1.5) GFLOPS 4.09; the "≈ 4.1 GFLOPs per 224² image forward"
    ("resnet50 forward GMACs (v1.5)", lambda: _resnet50_v15_macs() / 1e9, 4.09, 0.01),
    # torchvision vit_b_16 GFLOPS 17.56 (multiply-adds); Dosovitskiy et al. 2021 Table 1 shape
    ("vit-b16 forward GMACs", lambda: _transformer_forward_macs("vit-b16", 197) / 1e9, 17.56, 0.01),
    ("vit-l16 forward GMACs", lambda: _transformer_forward_macs("vit-l16", 197) / 1e9, 61.55, 0.01),
    # Devlin et al. 2019 Sec. 3: BERT-BASE 110M, BERT-LARGE 340M (rounded in the paper)
    ("bert-base params (M)", lambda: PRESETS["bert-base"].params() / 1e6, 110, 0.01),
    ("bert-large params (M)", lambda: PRESETS["bert-large"].params() / 1e6, 340, 0.02),
    # torchvision num_params: vit_b_16 86,567,656; vit_l_16 304,326,632
    ("vit-b16 params", lambda: PRESETS["vit-b16"].params(), 86_567_656, 0.0),
    ("vit-l16 params", lambda: PRESETS["vit-l16"].params(), 304_326_632, 0.0),
]


@pytest.mark.parametrize("label, compute, published, tolerance", PUBLISHED, ids=[row[0] for row in PUBLISHED])
def test_published_figures(label: str, compute, published: float, tolerance: float) -> None:
    assert compute() == pytest.approx(published, rel=tolerance, abs=0.5)


def test_resnet50_preset_flops_match_the_table_count() -> None:
    """The preset's FLOPs (2 per multiply-add) agree with the count from He et al.'s shapes."""
    rn = load_model("resnet50")
    assert rn.forward_gflops_per_sample == pytest.approx(2 * _resnet50_v15_macs() / 1e9, rel=0.01)


def _sd1_unet_params() -> int:
    """Parameters of the Stable Diffusion v1 UNet counted from its architecture: Rombach et al.
    2022 (LDM) with the CompVis v1-inference.yaml settings — model channels 320, multipliers
    1, 2, 4, 4, two residual blocks per level, cross-attention transformers at the first three
    levels (8 heads, context 768 from CLIP ViT-L/14), GEGLU feed-forward 4×, time embedding
    4 × 320, GroupNorm everywhere, 1×1-conv projections in and out of each transformer."""

    def resnet(i: int, o: int, t: int = 1280) -> int:
        n = 2 * i + 9 * i * o + o + t * o + o + 2 * o + 9 * o * o + o
        return n + (i * o + o if i != o else 0)  # 1×1 shortcut when widths differ

    def transformer(c: int, ctx: int = 768) -> int:
        n = 2 * c + c * c + c  # GroupNorm, proj_in
        n += 2 * c + 3 * c * c + c * c + c  # self-attention (q, k, v without bias; out)
        n += 2 * c + c * c + 2 * ctx * c + c * c + c  # cross-attention (k, v from the text)
        n += 2 * c + c * 8 * c + 8 * c + 4 * c * c + c  # GEGLU c -> 2·4c, then 4c -> c
        return n + c * c + c  # proj_out

    def conv3(c: int) -> int:  # down/up-sampling 3×3 conv
        return 9 * c * c + c

    n = 9 * 4 * 320 + 320 + 320 * 1280 + 1280 + 1280 * 1280 + 1280  # conv_in, time MLP
    n += 2 * 320 + 9 * 320 * 4 + 4  # out norm + conv_out
    n += 2 * resnet(320, 320) + 2 * transformer(320) + conv3(320)
    n += resnet(320, 640) + resnet(640, 640) + 2 * transformer(640) + conv3(640)
    n += resnet(640, 1280) + resnet(1280, 1280) + 2 * transformer(1280) + conv3(1280)
    n += 2 * resnet(1280, 1280)  # lowest level: no attention
    n += 2 * resnet(1280, 1280) + transformer(1280)  # middle block
    # decoder: three blocks per level, each input widened by the skip connection
    n += 3 * resnet(2560, 1280) + conv3(1280)
    n += 2 * resnet(2560, 1280) + resnet(1920, 1280) + 3 * transformer(1280) + conv3(1280)
    n += resnet(1920, 640) + resnet(1280, 640) + resnet(960, 640) + 3 * transformer(640) + conv3(640)
    n += resnet(960, 320) + 2 * resnet(640, 320) + 3 * transformer(320)
    return n


def test_sd15_unet_is_860m() -> None:
    """Counted from the architecture (above): ≈ 860M, the figure of the CompVis README and
    the SDXL paper's Tab. 1; the preset's trained parameters agree within 0.1%."""
    counted = _sd1_unet_params()
    assert counted == pytest.approx(860e6, rel=0.001)
    sd = load_model("sd15-unet")
    assert sd.trained_params == pytest.approx(counted, rel=0.001)
    assert sd.params() == pytest.approx(1.04e9, rel=0.01)  # BK-SDM card: whole SDM-v1.4 1.04B


# ---- a measured point on GPU A is reproduced; GPU B lands inside the reported band ---------

SGD16 = TrainingSetup(seq_len=1, precision="fp16", optimizer="sgd")


def test_measured_point_is_reproduced_exactly() -> None:
    """DeepLearningExamples ResNet-50 v1.5, 1× A100 80GB, AMP, batch 256: 2470 img/s."""
    rn = load_model("resnet50")
    assert predicted_samples_per_s(rn, SGD16, get_gpu("A100-80GB"), 256) == pytest.approx(2470, rel=1e-9)


def test_second_published_point_is_inside_the_band() -> None:
    """Same README, 1× V100 32GB, AMP, batch 256: 1156 img/s — measured/predicted step time
    must lie within the P10-P90 band the profile reports for V100 (another generation)."""
    rn = load_model("resnet50")
    v100 = get_gpu("V100-32GB")
    predicted = predicted_samples_per_s(rn, SGD16, v100, 256)
    p10, p90 = profile_interval(rn, v100)
    ratio = (1 / 1156) / (1 / predicted)  # measured / predicted step time
    assert p10 <= ratio <= p90
    assert (p10, p90) != profile_interval(rn, get_gpu("A100-80GB"))  # wider off the measured GPU
    lo, hi = profile_interval(rn, get_gpu("A100-80GB"))
    assert hi - lo < p90 - p10


def test_measured_memory_is_reproduced_on_the_device() -> None:
    """ShivamShrirao dreambooth table on a T4: 11.17 GB without and 9.92 GB with gradient
    checkpointing (fp16, batch 1, 8-bit Adam), read as device memory."""
    sd = load_model("sd15-unet")
    setup = TrainingSetup(seq_len=1, precision="fp16", optimizer="adam-8bit")
    assert training_memory(sd, setup, Layout()).device == pytest.approx(11.17, rel=1e-9)
    full = training_memory(sd, setup, Layout(checkpointing="full")).device
    assert full == pytest.approx(9.92, rel=1e-9)
    assert predicted_samples_per_s(sd, setup, get_gpu("T4"), 1) == pytest.approx(1.14, rel=1e-9)


# ---- memory and data-parallel time by hand ----------------------------------------------


def test_memory_terms_by_hand() -> None:
    """ResNet-50, fp16 + SGD: 2 + 2 + (4 master + 4 momentum) bytes per parameter (ZeRO §3);
    ZeRO-2 over 4 GPUs shards gradients and optimizer; activations double with the batch."""
    rn = load_model("resnet50")
    n = 25_557_032
    one = training_memory(rn, SGD16, Layout(micro_batch=64))
    assert one.weights == pytest.approx(2 * n / GIB)
    assert one.optimizer == pytest.approx(8 * n / GIB)
    z2 = training_memory(rn, SGD16, Layout(dp=4, zero_stage=2, micro_batch=64))
    assert z2.gradients == pytest.approx(2 * n / 4 / GIB)
    assert z2.optimizer == pytest.approx(8 * n / 4 / GIB)
    two = training_memory(rn, SGD16, Layout(micro_batch=128))
    assert two.activations == pytest.approx(2 * one.activations)
    # He et al. Table 1 shapes, counted by hand for the first stage's first bottleneck: conv1
    # output 64×112² is kept twice (BN input, ReLU output)
    assert one.activations * GIB / 64 > 2 * 2 * 64 * 112 * 112


def test_data_parallel_allreduce_by_hand() -> None:
    """2 GPUs over PCIe, DDP: ring all-reduce of 2-byte gradients, 2(n−1)/n × bytes / bus bw
    (Patarasuk & Yuan 2009), of which at most dp_overlap is hidden behind backward."""
    rn = load_model("resnet50")
    gpu = get_gpu("RTX4090")
    a = PerfAssumptions()
    step = training_step_time(rn, SGD16, Layout(dp=2, micro_batch=64), Cluster(gpu, 2), a)
    bw = gpu.intra_node_bw_gb_s * a.host_staged_fraction  # no peer-to-peer: via host memory
    by_hand = 2 * (2 - 1) / 2 * 25_557_032 * 2 / (bw * GB) + 2 * a.small_message_latency_s
    assert step.parts_s["dp_total"] == pytest.approx(by_hand)
    assert step.parts_s["dp_total"] == pytest.approx(
        ring_allreduce_s(25_557_032 * 2, 2, bw, a.small_message_latency_s)
    )
    assert step.tokens_per_s == pytest.approx(128 / step.time_s)


def test_profile_without_flops_or_measurement_is_refused() -> None:
    with pytest.raises(ConfigError, match="measured"):
        load_model("whisper-small")


def test_unknown_checkpointing_mode_never_fits() -> None:
    """ResNet-50 states no activation size under full recomputation: that mode is not planned."""
    rn = load_model("resnet50")
    assert math.isinf(training_memory(rn, SGD16, Layout(checkpointing="full")).device)
