"""ResNet-50 profile (one measured point: 1x A100 80GB AMP, 2470 img/s) against every other
single-GPU ResNet-50 figure of NVIDIA DeepLearningExamples (benchmarks/validation/
nvidia-deeplearningexamples.csv): measured / predicted step time and whether it lies inside the
band the profile reports there. Nothing is fitted to these rows.
Run: python -m benchmarks.profile_points
"""

from __future__ import annotations

import csv
from pathlib import Path

from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.models import load_model
from optimizer.model.profile_time import predicted_samples_per_s, profile_interval
from optimizer.model.setup import PerfAssumptions, TrainingSetup

__all__ = ["rows"]

CSV = Path(__file__).parent / "validation" / "nvidia-deeplearningexamples.csv"


def rows() -> list[dict[str, object]]:
    """One dict per single-GPU ResNet-50 row: case, GPU, precision, measured, predicted, ratio,
    band, inside."""
    model = load_model("resnet50")
    a = PerfAssumptions()
    out = []
    with open(CSV, newline="", encoding="utf-8") as handle:
        for r in csv.DictReader(handle):
            if r["model"] != "resnet50" or r["num_gpus"] != "1":
                continue
            gpu, precision, mb = get_gpu(r["gpu"]), r["precision"], int(r["micro_batch"])
            setup = TrainingSetup(seq_len=1, precision=precision, optimizer="sgd")
            predicted = predicted_samples_per_s(model, setup, gpu, mb, a)
            measured = float(r["value"])
            ratio = predicted / measured  # measured / predicted step time
            lo, hi = profile_interval(model, gpu, a, precision)
            out.append(
                {
                    "case": r["case_id"],
                    "gpu": gpu.gpu_id,
                    "precision": precision,
                    "measured": measured,
                    "predicted": round(predicted, 1),
                    "ratio": round(ratio, 3),
                    "band": (lo, hi),
                    "inside": lo <= ratio <= hi,
                }
            )
    return out


if __name__ == "__main__":
    table = rows()
    print(
        "| DeepLearningExamples row | GPU | precision | measured img/s | predicted img/s | "
        "measured / predicted step | band | inside |"
    )
    print("|---|---|---|---:|---:|---:|---|---|")
    for r in table:
        lo, hi = r["band"]  # type: ignore[misc]
        print(
            f"| {r['case']} | {r['gpu']} | {r['precision']} | {r['measured']:,.0f} | "
            f"{r['predicted']:,.0f} | {r['ratio']:.2f} | {lo:.2f}–{hi:.2f} | "
            f"{'yes' if r['inside'] else '**no**'} |"
        )
    print(f"\n{sum(bool(r['inside']) for r in table)} of {len(table)} inside their band.")
