"""Activation bytes one ResNet-50 v1.5 image keeps for backward, from the layer shapes.

Shapes: He et al. 2016 ("Deep Residual Learning", arXiv:1512.03385) Table 1, 50-layer column
(bottleneck widths 64/128/256/512, blocks 3/4/6/3, expansion 4), with the v1.5 change that
NVIDIA DeepLearningExamples and torchvision use (stride 2 on the 3×3 conv of a stage's first
block). What PyTorch autograd saves: a conv saves its input, BatchNorm its input, ReLU its
output (torchvision's ReLU is in place: the BN output buffer), max-pool its input and int64
indices; the residual add saves nothing. A conv's input is the previous ReLU's output, so
each conv-BN-ReLU unit keeps two tensors of the conv's output size (BN input, ReLU output);
a downsample conv-BN keeps one (the BN input). Run: python -m benchmarks.profile_activations
"""

from __future__ import annotations

__all__ = ["resnet50_saved_elements", "resnet50_activation_bytes"]

STAGES = ((64, 3, 56), (128, 4, 28), (256, 6, 14), (512, 3, 7))  # width, blocks, output side


def resnet50_saved_elements(image_side: int = 224) -> tuple[int, int]:
    """(16-bit elements, int64 max-pool indices) saved per image."""
    scale = image_side / 224
    side = lambda s: round(s * scale)  # noqa: E731
    stem = 64 * side(112) ** 2
    pooled = 64 * side(56) ** 2
    units = stem  # conv1 output: BN input; its ReLU output is the max-pool input
    relu_outputs = stem
    downsample = 0
    in_side = side(56)
    for width, blocks, out in STAGES:
        o = side(out)
        for b in range(blocks):
            first_side = in_side if b == 0 else o  # 1×1 reduce runs before the strided 3×3
            convs = [width * first_side**2, width * o**2, 4 * width * o**2]
            units += sum(convs)
            relu_outputs += sum(convs)  # the third ReLU follows the residual add
            if b == 0:
                downsample += 4 * width * o**2
        in_side = o
    image = 3 * image_side**2
    return units + relu_outputs + downsample + pooled + image + 2048, pooled


def resnet50_activation_bytes(image_side: int = 224, value_bytes: float = 2.0) -> float:
    """Bytes per image: saved values at `value_bytes` + 8-byte max-pool indices."""
    values, indices = resnet50_saved_elements(image_side)
    return values * value_bytes + indices * 8


if __name__ == "__main__":
    values, idx = resnet50_saved_elements()
    print(
        f"ResNet-50 v1.5 @224: {values:,} saved values + {idx:,} indices per image = "
        f"{resnet50_activation_bytes() / 2**20:.1f} MiB at 16 bit"
    )
