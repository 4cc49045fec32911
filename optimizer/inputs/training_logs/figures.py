"""A parsed log summarised: the warm-up steps skipped, the median of each figure over the
steps left, the peak memory with its kind, after checks that the numbers hold together (step
numbers that only grow, one card size behind torchtitan's memory %, one peak behind its
TFLOPs / MFU)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from optimizer.inputs.training_logs.records import (
    FIGURE_NAMES,
    MemoryReading,
    ParsedLog,
    StepFigures,
    StepRecord,
    log_error,
)

__all__ = ["LogFigures", "summarise", "WARMUP_STEPS", "CONSISTENCY_TOLERANCE"]

#: GUESS: the first steps of a run pay for compilation (torch.compile, CUDA graphs), NCCL
#: communicator set-up and the allocator's growth; steps numbered up to this are skipped
#: (`--warmup-steps` overrides it)
WARMUP_STEPS = 3
#: GUESS: two readings of one constant (the card's memory behind torchtitan's GiB and %, the
#: peak FLOP/s behind TFLOPs and MFU) may differ by 2% (the printed rounding), not more
CONSISTENCY_TOLERANCE = 0.02
#: MFU below this many % is printed with too few digits to check against the TFLOPs
_MIN_MFU_PCT_CHECKED = 5.0
#: which peak is read when the log prints several kinds (the tensors' own bytes first)
_KIND_ORDER = ("allocated", "reserved", "nvidia-smi")


@dataclass(frozen=True, kw_only=True)
class LogFigures(StepFigures):
    """What a log says of its run: the medians of its step figures (None: not printed), how
    many steps they are of and where, the peak memory per GPU and its kind."""

    fmt: str
    file: str
    steps_logged: int
    steps_used: int
    warmup_steps: int
    first_line: int | None
    last_line: int | None
    peak_memory_gib: float | None = None
    memory_kind: str | None = None
    memory_line: int | None = None
    #: the card's memory the log's memory % implies (torchtitan), GiB
    card_gib: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def summarise(parsed: ParsedLog, file: str, warmup_steps: int = WARMUP_STEPS) -> LogFigures:
    """Skip the warm-up, check, take medians.

    Raises:
        ConfigError: no step after the warm-up, step numbers going back (two runs in one
            log), or numbers that contradict each other (names the line).
    """
    _check_order(parsed.records, file)
    kept = [r for r in parsed.records if r.step > warmup_steps]
    notes = list(parsed.notes)
    if not kept and parsed.summary is not None and not parsed.records:
        kept = [parsed.summary]
        notes.append("no timed step: the closing whole-run average is read (warm-up included)")
    if not kept:
        last = parsed.records[-1] if parsed.records else None
        where = f"; the last logged step is {last.step}" if last else "; no timed step at all"
        raise log_error(
            file,
            last.line if last else None,
            f"no {parsed.fmt} step after the warm-up (--warmup-steps {warmup_steps}){where}",
        )
    _check_constants(kept, parsed.memory, file)
    medians = {
        name: statistics.median(values)
        for name in FIGURE_NAMES
        if (values := [v for r in kept if (v := getattr(r, name)) is not None])
    }
    peak = _peak(parsed.memory)
    return LogFigures(
        fmt=parsed.fmt,
        file=file,
        steps_logged=len(parsed.records),
        steps_used=len(kept),
        warmup_steps=warmup_steps,
        first_line=kept[0].line,
        last_line=kept[-1].line,
        **medians,
        peak_memory_gib=peak.memory_gib if peak else None,
        memory_kind=peak.kind if peak else None,
        memory_line=peak.line if peak else None,
        card_gib=peak.memory_gib / peak.card_pct * 100 if peak and peak.card_pct else None,
        notes=tuple(notes),
    )


def _check_order(records: list[StepRecord], file: str) -> None:
    """Step numbers never go back (the same number again is another rank's line)."""
    for before, after in zip(records, records[1:], strict=False):
        if after.step < before.step:
            raise log_error(
                file,
                after.line,
                f"step {after.step} after step {before.step} (line {before.line}): two runs in one "
                "log? give the log of one run",
            )


def _check_constants(kept: list[StepRecord], memory: list[MemoryReading], file: str) -> None:
    """One card size behind every GiB/% pair, one peak FLOP/s behind every TFLOPs/MFU pair."""
    cards = [(m.memory_gib / m.card_pct * 100, m.line) for m in memory if m.card_pct]
    _same(cards, file, "memory GiB / % (the card's size)")
    peaks = [
        (r.tflops_per_gpu / r.mfu_pct * 100, r.line)
        for r in kept
        if r.tflops_per_gpu and r.mfu_pct and r.mfu_pct >= _MIN_MFU_PCT_CHECKED
    ]
    _same(peaks, file, "tflops / mfu (the GPU's peak)")


def _same(values: list[tuple[float, int]], file: str, what: str) -> None:
    if not values:
        return
    ref, ref_line = values[0]
    for value, line in values[1:]:
        if abs(value / ref - 1) > CONSISTENCY_TOLERANCE:
            raise log_error(
                file,
                line,
                f"inconsistent numbers: {what} is {value:.4g} here but {ref:.4g} at line {ref_line}",
            )


def _peak(memory: list[MemoryReading]) -> MemoryReading | None:
    """The largest reading of the preferred kind the log prints."""
    for kind in _KIND_ORDER:
        of_kind = [m for m in memory if m.kind == kind]
        if of_kind:
            return max(of_kind, key=lambda m: m.memory_gib)
    return None
