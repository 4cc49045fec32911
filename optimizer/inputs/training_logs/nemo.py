"""NeMo 2's training line (nemo/lightning/pytorch/callbacks/progress_printer.py, the Megatron
progress printer): `Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 |
global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s:
0.03146`. An iteration is an optimizer step of the global batch; the timing is printed when
the run logs it (NeMo's timing callback), else the line has no speed to read."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.records import LogLine, MarkedLineFormat, ParsedLog, StepRecord

__all__ = ["NEMO"]

_LINE = re.compile(r"Training epoch \d+, iteration (\d+)/\d+\s*\|")
_STEP = re.compile(r"\bglobal_step:\s*(\d+)")
_TIMING = re.compile(r"train_step_timing in s:\s*([^\s|]+)")


class _Nemo(MarkedLineFormat):
    name = "nemo"
    marker = _LINE

    def read(self, ln: LogLine, found: re.Match[str], out: ParsedLog) -> None:
        timing = _TIMING.search(ln.text)
        if timing is None:
            return
        step = _STEP.search(ln.text)
        out.records.append(
            StepRecord(
                line=ln.number,
                step=ln.count(step.group(1) if step else found.group(1), "step"),
                step_time_s=ln.value(timing.group(1), "train_step_timing in s"),
            )
        )


NEMO = _Nemo()
