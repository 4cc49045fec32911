"""PyTorch Lightning's progress bar (lightning/pytorch/callbacks/progress/tqdm_progress.py):
`Epoch 0:  22%|██▏  | 4/18 [00:17<01:02,  4.47s/it, loss=10.07, v_num=193315]`. An iteration
is one batch of the dataloader: a micro-batch when gradients accumulate over several. NeMo 1.x
(Megatron under Lightning) feeds one global batch per iteration and shows
`global_step=794.0` in the bar: there an iteration is an optimizer step."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.progress_bar import read_bar
from optimizer.inputs.training_logs.records import LogLine, MarkerClaim, ParsedLog, StepRecord

__all__ = ["LIGHTNING"]

_EPOCH_BAR = re.compile(r"^\s*Epoch \d+:\s*\d+%\|")


class _Lightning(MarkerClaim):
    """Claims a log by its epoch bar (MarkerClaim); reads the last update of each iteration."""

    name = "lightning"
    marker = _EPOCH_BAR

    def parse(self, lines: list[LogLine]) -> ParsedLog:
        out = ParsedLog(self.name)
        last: dict[int, StepRecord] = {}  # the last update of each iteration count
        epoch_base, prev_n = 0, -1
        for ln in lines:
            if not self.marker.search(ln.text):
                continue
            bar = read_bar(ln)
            if bar is None or bar.s_per_it is None:
                continue
            if bar.n < prev_n:  # a new epoch restarts the count: number iterations on
                epoch_base += prev_n
            prev_n = bar.n
            step = epoch_base + bar.n
            nemo = "global_step=" in bar.rest
            last[step] = StepRecord(
                line=ln.number,
                step=step,
                step_time_s=bar.s_per_it if nemo else None,
                batch_time_s=None if nemo else bar.s_per_it,
            )
        out.records = [last[k] for k in sorted(last)]
        if out.records and out.records[0].batch_time_s is not None:
            out.notes.append("an iteration of Lightning's bar is a batch: × gradient accumulation per step")
        return out


LIGHTNING = _Lightning()
