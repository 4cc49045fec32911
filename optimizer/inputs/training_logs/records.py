"""What a training-log parser reads from one log: the step records (one per logged step, with
its line number) and the peak-memory readings, each figure in the unit its name says."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import Protocol

from optimizer.errors import ConfigError

__all__ = [
    "count",
    "StepFigures",
    "FIGURE_NAMES",
    "StepRecord",
    "MemoryReading",
    "ParsedLog",
    "LogFormat",
    "MarkerClaim",
    "MarkedLineFormat",
    "LogLine",
    "number",
    "log_error",
    "GIB_PER_GB",
    "GIB_PER_MIB",
]

#: bytes: 1 GB (10^9, what Composer's memory monitor prints) in GiB (2^30)
GIB_PER_GB = 1e9 / 2**30
#: 1 MiB (what Megatron's memory line prints, "memory (MB)": bytes / 2^20) in GiB
GIB_PER_MIB = 1 / 1024


@dataclass(frozen=True)
class LogLine:
    """One line of the log: the file, its 1-based number in the file and its text (a progress
    bar's carriage-return updates are separate LogLines with the same number). Its numbers are
    read, and its errors raised, naming the file and this line."""

    file: str
    number: int
    text: str

    def value(self, raw: str, what: str) -> float:
        """A printed number of this line (`number`)."""
        return number(raw, self.file, self.number, what)

    def count(self, raw: str, what: str) -> int:
        """A printed step or batch counter of this line (`count`)."""
        return count(raw, self.file, self.number, what)

    def error(self, problem: str) -> ConfigError:
        """The error of this line (`log_error`)."""
        return log_error(self.file, self.number, problem)

    def memory(
        self, raw: str, what: str, kind: str, gib_per_unit: float = 1.0, card_pct: float | None = None
    ) -> MemoryReading:
        """A peak memory this line prints, in units of `gib_per_unit` GiB."""
        return MemoryReading(self.number, self.value(raw, what) * gib_per_unit, kind, card_pct)


@dataclass(frozen=True, kw_only=True)
class StepFigures:
    """The figures a log prints of its steps, each None when it does not print it:

    step_time_s: seconds per optimizer step; batch_time_s: seconds per progress-bar iteration
    (a micro-batch in PyTorch Lightning); tokens_per_s: tokens/s of the whole run;
    tokens_per_s_per_gpu: per GPU (torchtitan's tps); samples_per_s: sequences/s of the whole
    run; tflops_per_gpu and mfu_pct: as the framework prints them."""

    step_time_s: float | None = None
    batch_time_s: float | None = None
    tokens_per_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    samples_per_s: float | None = None
    tflops_per_gpu: float | None = None
    mfu_pct: float | None = None


#: the names of the figures, in the order above (the summary's medians, the output's `measured`)
FIGURE_NAMES = tuple(f.name for f in fields(StepFigures))


@dataclass(frozen=True, kw_only=True)
class StepRecord(StepFigures):
    """One logged step: its line, its number and the figures it prints."""

    line: int
    step: int


@dataclass(frozen=True)
class MemoryReading:
    """A peak memory per GPU as printed: GiB, its kind (allocated | reserved | nvidia-smi) and,
    when printed beside it, the share of the card it says that is (torchtitan)."""

    line: int
    memory_gib: float
    kind: str
    card_pct: float | None = None


@dataclass
class ParsedLog:
    """Everything one format read from a log: the records in file order and the memory."""

    fmt: str
    records: list[StepRecord] = field(default_factory=list)
    memory: list[MemoryReading] = field(default_factory=list)
    #: a whole-run summary (Hugging Face's train_samples_per_second): used when no step is timed
    summary: StepRecord | None = None
    notes: list[str] = field(default_factory=list)


class LogFormat(Protocol):
    """A framework's log format: a name, whether a line is one of its own, and the reader."""

    name: str

    def claims(self, text: str) -> bool:
        """Whether this line can only come from this framework."""
        ...

    def parse(self, lines: list[LogLine]) -> ParsedLog:
        """The step records and memory readings of the log (ConfigError naming a line)."""
        ...


class MarkerClaim:
    """A format known by one marker (a regular expression): it claims a log in which the
    marker appears."""

    name: str
    marker: re.Pattern[str]

    def claims(self, text: str) -> bool:
        return bool(self.marker.search(text))


class MarkedLineFormat(MarkerClaim):
    """A format whose every line of interest carries its marker: it claims a log in which the
    marker appears and reads each marked line (`read`), in order."""

    def parse(self, lines: list[LogLine]) -> ParsedLog:
        out = ParsedLog(self.name)
        for ln in lines:
            found = self.marker.search(ln.text)
            if found is not None:
                self.read(ln, found, out)
        return out

    def read(self, ln: LogLine, found: re.Match[str], out: ParsedLog) -> None:
        """Add what the marked line `ln` says to `out` (ConfigError naming the line)."""
        raise NotImplementedError


#: a printed number: digits with optional thousands commas ("10,050"; "10," is cut short), a
#: fraction and an exponent ("2.021530E+00")
_NUMBER = re.compile(r"^[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def number(text: str, file: str, line: int, what: str) -> float:
    """A printed number ("10,050", "2.021530E+00"), finite and positive, or ConfigError naming
    the file, the line and the field."""
    raw = text.strip()
    if not _NUMBER.match(raw):
        raise log_error(file, line, f"{what} {raw[:40]!r} is not a number")
    value = float(raw.replace(",", ""))
    if not math.isfinite(value) or value <= 0:
        raise log_error(file, line, f"{what} {raw[:40]!r}; allowed: a finite number > 0")
    return value


#: digits of the longest step or batch count read (a log's counters stay far below 10^18)
MAX_COUNT_DIGITS = 18


def count(text: str, file: str, line: int, what: str) -> int:
    """A printed step or batch counter, or ConfigError naming the file and the line (Python
    refuses to convert more than 4,300 digits; no real counter has more than 18)."""
    raw = text.strip()
    if not raw.isdigit() or len(raw) > MAX_COUNT_DIGITS:
        raise log_error(
            file, line, f"{what} {raw[:40]!r}; allowed: a whole number of at most {MAX_COUNT_DIGITS} digits"
        )
    return int(raw)


def log_error(file: str, line: int | None, problem: str) -> ConfigError:
    """The one-line error of an unreadable log: `--from-log: FILE line N: problem`."""
    where = f" line {line}" if line is not None else ""
    return ConfigError(f"--from-log: {file}{where}: {problem}")
