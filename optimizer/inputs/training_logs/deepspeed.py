"""DeepSpeed's throughput timer line (deepspeed/utils/timer.py, ThroughputTimer.stop), printed
every steps_per_print steps: `epoch=0/micro_step=34/global_step=34, RunningAvgSamplesPerSec=...,
CurrSamplesPerSec=..., MemAllocated=59.65GB, MaxMemAllocated=63.31GB`, or in older releases
`0/40, SamplesPerSec=83.48, MemAllocated=0.26GB, MaxMemAllocated=9.02GB` (epoch/step). The
samples are the train batch of the whole run (train_batch_size); memory is
torch.cuda.max_memory_allocated / 2^30 ("GB" in the log, GiB in fact)."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.records import LogLine, MarkedLineFormat, ParsedLog, StepRecord

__all__ = ["DEEPSPEED"]

_TIMER = re.compile(
    r"(?:global_step=(\d+)|\b\d+/(\d+)),\s*(?:RunningAvgSamplesPerSec|SamplesPerSec)=", re.IGNORECASE
)
_CURRENT = re.compile(r"CurrSamplesPerSec=([^\s,]+)")
_AVERAGE = re.compile(r"\bSamplesPerSec=([^\s,]+)")
_MAX_MEM = re.compile(r"MaxMemAllocated=([^\s,]+?)GB")


class _DeepSpeed(MarkedLineFormat):
    name = "deepspeed"
    marker = _TIMER

    def read(self, ln: LogLine, found: re.Match[str], out: ParsedLog) -> None:
        rate = _CURRENT.search(ln.text) or _AVERAGE.search(ln.text)
        if rate is None:
            raise ln.error("a DeepSpeed timer line without SamplesPerSec=")
        out.records.append(
            StepRecord(
                line=ln.number,
                step=ln.count(found.group(1) or found.group(2), "step"),
                samples_per_s=ln.value(rate.group(1), "SamplesPerSec"),
            )
        )
        mem = _MAX_MEM.search(ln.text)
        if mem:
            out.memory.append(ln.memory(mem.group(1), "MaxMemAllocated", "allocated"))
        if not _CURRENT.search(ln.text) and not out.notes:
            out.notes.append("SamplesPerSec is DeepSpeed's average since the first step (older release)")


DEEPSPEED = _DeepSpeed()
