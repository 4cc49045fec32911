"""The Hugging Face Trainer's console (transformers/trainer.py; accelerate-launched Trainer runs
print the same): per-log dicts `{'loss': 1.26, 'grad_norm': ..., 'learning_rate': ...,
'epoch': 0.03}`, the tqdm bar of optimizer steps `| 2086/2120 [26:01<00:22,  1.49it/s]`
and the closing `{'train_runtime': 437.85, 'train_samples_per_second': 25.132, ...}`
(whole run, warm-up included). Some wrappers (axolotl) add 'memory/max_mem_allocated(gib)'."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.progress_bar import read_bar
from optimizer.inputs.training_logs.records import LogLine, ParsedLog, StepRecord

__all__ = ["HF_TRAINER"]

_LOSS_DICT = re.compile(r"\{'(?:loss|train_runtime|eval_loss)': ")
_SUMMARY = re.compile(r"'train_samples_per_second':\s*([^\s,}]+)")
_MEMORY = re.compile(r"'memory/max_mem_allocated\(gib\)':\s*([^\s,}]+)")


class _HfTrainer:
    name = "hf-trainer"

    def claims(self, text: str) -> bool:
        return bool(_LOSS_DICT.search(text)) or "trainer.py:" in text and "Running training" in text

    def parse(self, lines: list[LogLine]) -> ParsedLog:
        out = ParsedLog(self.name)
        seen: set[int] = set()
        total: int | None = None  # the training bar's (max_steps); evaluation bars differ
        for ln in lines:
            summary = _SUMMARY.search(ln.text)
            if summary:
                rate = ln.value(summary.group(1), "train_samples_per_second")
                out.summary = StepRecord(line=ln.number, step=0, samples_per_s=rate)
            mem = _MEMORY.search(ln.text)
            if mem:
                out.memory.append(ln.memory(mem.group(1), "memory/max_mem_allocated(gib)", "allocated"))
            bar = read_bar(ln)
            # a bar of optimizer steps: no "Epoch" prefix (Lightning's), once per step count
            if bar is None or bar.s_per_it is None or bar.prefix or bar.n in seen:
                continue
            total = bar.total if total is None else total
            if bar.total != total:
                continue  # an evaluation or prediction bar: not training steps
            seen.add(bar.n)
            out.records.append(StepRecord(line=ln.number, step=bar.n, step_time_s=bar.s_per_it))
        return out


HF_TRAINER = _HfTrainer()
