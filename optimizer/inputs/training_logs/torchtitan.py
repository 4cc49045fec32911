"""torchtitan's metric line (torchtitan/components/metrics.py, MetricsProcessor.log):
`step: 10  loss: ...  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%`.
memory is max_reserved_gib (torch.cuda.max_memory_reserved, % of the card), tps is tokens/s
per GPU, tflops and mfu per GPU."""

from __future__ import annotations

import re

from optimizer.inputs.training_logs.records import LogLine, MarkedLineFormat, ParsedLog, StepRecord

__all__ = ["TORCHTITAN"]

_STEP = re.compile(r"\bstep:\s*(\d+)\s+loss:")
_FIELD = re.compile(r"\b(memory|tps|tflops|mfu):\s*([^\s(%]+)(?:GiB)?(?:\(([^)]*)%\))?")


class _Torchtitan(MarkedLineFormat):
    name = "torchtitan"
    marker = _STEP

    def claims(self, text: str) -> bool:
        return super().claims(text) and "tps:" in text

    def read(self, ln: LogLine, found: re.Match[str], out: ParsedLog) -> None:
        fields = {k: (v, pct) for k, v, pct in _FIELD.findall(ln.text)}
        if "tps" not in fields:
            raise ln.error("a torchtitan step line without tps: (truncated?)")
        out.records.append(
            StepRecord(
                line=ln.number,
                step=ln.count(found.group(1), "step"),
                tokens_per_s_per_gpu=ln.value(fields["tps"][0], "tps"),
                tflops_per_gpu=_opt(fields, "tflops", ln),
                mfu_pct=_opt(fields, "mfu", ln),
            )
        )
        if "memory" in fields:
            gib_text, pct_text = fields["memory"]
            pct = ln.value(pct_text, "memory %") if pct_text else None
            out.memory.append(ln.memory(gib_text.removesuffix("GiB"), "memory", "reserved", card_pct=pct))


def _opt(fields: dict[str, tuple[str, str]], key: str, ln: LogLine) -> float | None:
    return ln.value(fields[key][0], key) if key in fields else None


TORCHTITAN = _Torchtitan()
