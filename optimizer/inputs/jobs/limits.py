"""Upper ends of the stated ranges of job-file numbers, shared by every job-file kind."""

from __future__ import annotations

__all__ = ["MAX_TOKENS", "MAX_DAYS", "MAX_USD"]

#: upper ends of the stated ranges (far beyond any real job; they keep hours, cents and CP-SAT's
#: integers finite): 10^15 tokens (~70× the largest published pretraining run), ten years, $10^10
MAX_TOKENS = 1e15
MAX_DAYS = 3650.0
MAX_USD = 1e10
