"""Megatron-LM's training log (megatron/training/training.py, training_log): one line per
logged iteration, `iteration 10/ 100 | ... | elapsed time per iteration (ms): 5630.1 |
throughput per GPU (TFLOP/s/GPU): 231.9 | ...`, and the memory report after the first
iterations, `[Rank 1] (after 1 iterations) memory (MB) | allocated: ... | max allocated: ...
| reserved: ... | max reserved: ...` (torch.cuda.max_memory_allocated / 2^20). NeMo 1.x
(Megatron under PyTorch Lightning) prints Lightning's progress bar instead: lightning.py."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.records import GIB_PER_MIB, LogLine, ParsedLog, StepRecord

__all__ = ["MEGATRON"]

_ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_ELAPSED = re.compile(r"elapsed time per iteration \(ms\):\s*([^\s|]+)")
_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*([^\s|]+)")
_MEMORY = re.compile(r"memory \(MB\)\s*\|.*?max allocated:\s*([^\s|]+)")


class _Megatron:
    name = "megatron"

    def claims(self, text: str) -> bool:
        iteration = bool(_ITER.search(text)) and "elapsed time per iteration (ms)" in text
        return iteration or ("memory (MB)" in text and "max allocated:" in text)

    def parse(self, lines: list[LogLine]) -> ParsedLog:
        out = ParsedLog(self.name)
        for ln in lines:
            mem = _MEMORY.search(ln.text)
            if mem:
                out.memory.append(ln.memory(mem.group(1), "max allocated (MB)", "allocated", GIB_PER_MIB))
                continue
            it = _ITER.search(ln.text)
            if not it:
                continue
            elapsed = _ELAPSED.search(ln.text)
            if not elapsed:
                raise ln.error("a Megatron iteration line without 'elapsed time per iteration (ms)'")
            tflops = _TFLOPS.search(ln.text)
            out.records.append(
                StepRecord(
                    line=ln.number,
                    step=ln.count(it.group(1), "iteration"),
                    step_time_s=ln.value(elapsed.group(1), "elapsed time per iteration") / 1000,
                    tflops_per_gpu=ln.value(tflops.group(1), "TFLOP/s/GPU") if tflops else None,
                )
            )
        return out


MEGATRON = _Megatron()
