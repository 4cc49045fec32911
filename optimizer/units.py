"""Units and conversions: the one place each of these facts lives."""

from __future__ import annotations

__all__ = [
    "HOURS_PER_DAY",
    "HOURS_PER_YEAR",
    "HOURS_PER_MONTH",
    "DAYS_PER_MONTH",
    "SECONDS_PER_HOUR",
    "SECONDS_PER_MINUTE",
    "MINUTES_PER_HOUR",
    "GIB",
    "MIB",
    "GB",
    "CENTS_PER_USD",
    "BYTES_PER_DTYPE",
    "hours_to_days",
    "quantile_label",
    "money",
]

HOURS_PER_DAY = 24
HOURS_PER_YEAR = 8760  # 365 × 24; reserved terms bill every hour of the term
HOURS_PER_MONTH = 730  # HOURS_PER_YEAR / 12: the month used for monthly prices and amortisation
DAYS_PER_MONTH = HOURS_PER_MONTH / HOURS_PER_DAY
SECONDS_PER_MINUTE = 60
MINUTES_PER_HOUR = 60
SECONDS_PER_HOUR = 3600
GIB = 2**30  # bytes in a GiB (memory is reported in GiB)
MIB = 2**20  # bytes in a MiB (activation sizes per sample in job files)
GB = 1e9  # bytes in a GB (bandwidths are GB/s, dataset sizes GB)
CENTS_PER_USD = 100
#: bytes per element of each numeric format (weights, gradients, activations, KV cache)
BYTES_PER_DTYPE: dict[str, float] = {
    "fp32": 4,
    "tf32": 4,
    "bf16": 2,
    "fp16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
}


def hours_to_days(hours: float) -> float:
    """Hours as days (24 h)."""
    return hours / HOURS_PER_DAY


def quantile_label(q: float) -> str:
    """A quantile as a percentile label: 0.8 -> "P80"."""
    return f"P{q * 100:.0f}"


def money(usd: float) -> str:
    """USD as the terminal and the HTML report print it: whole dollars from $100 up, cents below."""
    return f"${usd:,.0f}" if abs(usd) >= 100 else f"${usd:,.2f}"
