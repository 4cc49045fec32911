"""Which framework wrote a log: every line is offered to each format's `claims`; one format
(or DeepSpeed's engine lines under the framework that drives it) is the answer, none or two
are an error naming the file and the lines. A log of nothing but bare tqdm bars of steps is
read as the Hugging Face Trainer's (accelerate loops print the same bar)."""

from __future__ import annotations

import re
from pathlib import Path

from optimizer.files import read_input_text
from optimizer.inputs.training_logs.composer import COMPOSER
from optimizer.inputs.training_logs.deepspeed import DEEPSPEED
from optimizer.inputs.training_logs.hf_trainer import HF_TRAINER
from optimizer.inputs.training_logs.lightning import LIGHTNING
from optimizer.inputs.training_logs.megatron import MEGATRON
from optimizer.inputs.training_logs.nemo import NEMO
from optimizer.inputs.training_logs.progress_bar import read_bar
from optimizer.inputs.training_logs.records import LogFormat, LogLine, ParsedLog, log_error
from optimizer.inputs.training_logs.torchtitan import TORCHTITAN

__all__ = ["FORMATS", "FORMAT_NAMES", "read_lines", "detect_format", "parse_log"]

#: every format read, in the order detection reports them
FORMATS: tuple[LogFormat, ...] = (TORCHTITAN, MEGATRON, NEMO, DEEPSPEED, HF_TRAINER, LIGHTNING, COMPOSER)
FORMAT_NAMES = {
    "torchtitan": "torchtitan",
    "megatron": "Megatron-LM",
    "nemo": "NeMo 2",
    "deepspeed": "DeepSpeed",
    "hf-trainer": "Hugging Face Trainer",
    "lightning": "PyTorch Lightning (NeMo 1.x)",
    "composer": "Composer (llm-foundry)",
}
#: frameworks that run on DeepSpeed's engine and print its timer lines beside their own
#: (Megatron-DeepSpeed, the Trainer's and Lightning's DeepSpeed strategies): theirs are read
_DRIVES_DEEPSPEED = frozenset({"megatron", "hf-trainer", "lightning"})
#: NeMo 2 runs under Lightning: a Lightning bar beside its lines is its own, and its lines are read
_UNDER_LIGHTNING = frozenset({"nemo"})
#: ANSI colour codes (torchtitan colours its metric line)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: GUESS: a log larger than this is not a training log of a sizing run (read in memory)
MAX_LOG_BYTES = 256 * 2**20


def read_lines(path: str | Path) -> list[LogLine]:
    """The lines of the log, numbered from 1, colour codes removed, a progress bar's carriage
    returns split into segments that keep the line's number.

    Raises:
        ConfigError: missing, unreadable, not UTF-8 or too large (names the file).
    """
    file = str(path)
    try:
        if Path(path).stat().st_size > MAX_LOG_BYTES:
            raise log_error(file, None, f"larger than {MAX_LOG_BYTES // 2**20} MiB; give an excerpt")
        text = read_input_text(path, "--from-log")
    except (OSError, UnicodeDecodeError) as exc:
        raise log_error(file, None, f"cannot be read as a UTF-8 text log ({exc})") from None
    out: list[LogLine] = []
    for number, line in enumerate(text.split("\n"), start=1):
        clean = _ANSI.sub("", line)
        out.extend(LogLine(file, number, seg) for seg in clean.split("\r") if seg.strip())
    return out


def detect_format(lines: list[LogLine], file: str) -> LogFormat:
    """The one format the log's lines belong to.

    Raises:
        ConfigError: no recognised line, or lines of two frameworks (names each one's first line).
    """
    first: dict[str, int] = {}
    for ln in lines:
        for fmt in FORMATS:
            if fmt.name not in first and fmt.claims(ln.text):
                first[fmt.name] = ln.number
    names = [f.name for f in FORMATS if f.name in first]
    if len(names) > 1 and "deepspeed" in names and _DRIVES_DEEPSPEED & set(names):
        names.remove("deepspeed")
    if "lightning" in names and _UNDER_LIGHTNING & set(names):
        names.remove("lightning")
    if not names and any(_bare_bar(ln) for ln in lines):
        return HF_TRAINER  # a bare tqdm bar of steps: the Trainer's (or an accelerate loop's)
    if not names:
        raise log_error(
            file,
            None,
            "no line of a known training log; allowed: " + ", ".join(FORMAT_NAMES.values()),
        )
    if len(names) > 1:
        a, b = names[:2]
        raise log_error(
            file,
            first[b],
            f"a {FORMAT_NAMES[b]} line after {FORMAT_NAMES[a]} lines (line {first[a]}): two "
            "frameworks in one log; give the log of one run",
        )
    return next(f for f in FORMATS if f.name == names[0])


def _bare_bar(ln: LogLine) -> bool:
    """A tqdm bar without a prefix, with a rate: what the Trainer prints of its steps."""
    bar = read_bar(ln)
    return bar is not None and not bar.prefix and bar.s_per_it is not None


def parse_log(path: str | Path) -> ParsedLog:
    """Read, detect and parse a training log (records and memory, not yet summarised)."""
    lines = read_lines(path)
    fmt = detect_format(lines, str(path))
    return fmt.parse(lines)
