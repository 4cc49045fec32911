"""Training logs read for `ccopt calibrate --from-log`: one module per framework (torchtitan,
Megatron-LM, NeMo 2, DeepSpeed, Hugging Face Trainer, PyTorch Lightning / NeMo 1.x,
Composer / llm-foundry), detection (detect.py), the summary (figures.py: warm-up skipped, medians,
checks) and the plan header of an exported file (plan_header.py, `--from-plan`)."""

from __future__ import annotations

from pathlib import Path

from optimizer.inputs.training_logs.detect import FORMAT_NAMES, parse_log
from optimizer.inputs.training_logs.figures import WARMUP_STEPS, LogFigures, summarise

__all__ = ["read_training_log", "LogFigures", "WARMUP_STEPS", "FORMAT_NAMES"]


def read_training_log(path: str | Path, warmup_steps: int = WARMUP_STEPS) -> LogFigures:
    """The figures of a training log: its format detected, the steps numbered up to
    `warmup_steps` skipped, the median of each printed figure over the rest, the peak memory.

    Raises:
        ConfigError: `--from-log: FILE line N: ...` — unreadable, no known format, two
            formats, no step after the warm-up, or numbers that contradict each other.
    """
    parsed = parse_log(path)
    return summarise(parsed, str(path), warmup_steps)
