"""Composer's console logger (llm-foundry trains through it; composer/loggers/console_logger.py):
a header per logged batch, `[batch=10/100]:` or `[epoch=1][batch=5/5]:`, then `Train
key: value` pairs, one a line (or several on the header's line). Read: throughput/tokens_per_sec
(whole run; SpeedMonitor's average over its window of batches), throughput/batches_per_sec,
throughput/device/mfu, memory/peak_allocated_mem and peak_reserved_mem (MemoryMonitor, GB =
10^9 bytes)."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.records import (
    GIB_PER_GB,
    LogLine,
    MarkerClaim,
    MemoryReading,
    ParsedLog,
    StepRecord,
)

__all__ = ["COMPOSER"]

_HEADER = re.compile(r"^\s*(?:\[epoch=\d+\])?\[batch=(\d+)/(\d+)\]:")
_PAIR = re.compile(r"Train ([\w/.()-]+):\s*(\S+)")
_KEYS = {
    "throughput/tokens_per_sec": "tokens_per_s",
    "throughput/batches_per_sec": "batches_per_s",
    "throughput/device/mfu": "mfu",
    "memory/peak_allocated_mem": "allocated",
    "memory/peak_reserved_mem": "reserved",
}


class _Composer(MarkerClaim):
    """Claims a log by its batch header (MarkerClaim); reads a header's pairs up to the next."""

    name = "composer"
    marker = _HEADER

    def parse(self, lines: list[LogLine]) -> ParsedLog:
        out = ParsedLog(self.name)
        batch: tuple[int, int] | None = None  # (batch, header line)
        values: dict[str, tuple[float, int]] = {}
        for ln in lines:
            head = self.marker.search(ln.text)
            if head:
                _flush(out, batch, values)
                batch, values = (ln.count(head.group(1), "batch"), ln.number), {}
            for key, raw in _PAIR.findall(ln.text):
                if key in _KEYS and batch is not None:
                    values[_KEYS[key]] = (ln.value(raw, f"Train {key}"), ln.number)
                elif key in _KEYS:
                    raise ln.error(f"Train {key} before any [batch=N/M] header")
        _flush(out, batch, values)
        return out


def _flush(out: ParsedLog, batch: tuple[int, int] | None, values: dict[str, tuple[float, int]]) -> None:
    """The record of one logged batch (none when it printed no throughput) and its peaks."""
    if batch is None:
        return
    step, line = batch
    if "tokens_per_s" in values or "batches_per_s" in values:
        mfu = values.get("mfu")
        out.records.append(
            StepRecord(
                line=line,
                step=step,
                tokens_per_s=values["tokens_per_s"][0] if "tokens_per_s" in values else None,
                # batches/s is printed to 4 decimals (0.0027): a step time only without tokens/s
                step_time_s=1 / values["batches_per_s"][0] if "tokens_per_s" not in values else None,
                mfu_pct=mfu[0] * 100 if mfu else None,  # Composer logs a fraction
            )
        )
    for kind in ("allocated", "reserved"):
        if kind in values:
            gb, at = values[kind]
            out.memory.append(MemoryReading(at, gb * GIB_PER_GB, kind))


COMPOSER = _Composer()
