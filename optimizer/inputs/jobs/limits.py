"""Upper ends of the stated ranges of job-file and price-table numbers, shared by every kind.

They keep hours, cents and CP-SAT's integers finite: the solver's own scale is
optimizer/solve/cpsat/scale.py (MAX_SOLVER_INT), which every value below stays well inside
(a budget of MAX_USD is 10^12 cents; ten years are 3.2e8 seconds).
"""

from __future__ import annotations

__all__ = [
    "MAX_TOKENS",
    "MAX_DAYS",
    "MAX_USD",
    "MAX_USD_PER_GPU_HOUR",
    "MIN_USD_PER_GPU_HOUR",
    "MAX_GPUS_PER_INSTANCE",
    "MAX_INSTANCES",
]

#: upper ends of the stated ranges (far beyond any real job): 10^15 tokens (~70× the largest
#: published pretraining run), ten years, $10^10
MAX_TOKENS = 1e15
MAX_DAYS = 3650.0
MAX_USD = 1e10
#: sanity ceiling of a price table or a [pricing] section; the dearest GPU-hour in the
#: reference is ~17.8 USD (p6-b300). A value far above it almost surely is cents or a
#: per-month figure. Chosen bound, not a market fact.
MAX_USD_PER_GPU_HOUR = 200.0
#: floor of a price you give (a [pricing] row or price): one cent per GPU-hour, below the
#: cheapest GPU-hour any catalog lists (~$0.03, a consumer card on a marketplace); a smaller
#: figure is a unit mistake and would make a plan cost $0.00. Free hardware is [[hardware.owned]].
MIN_USD_PER_GPU_HOUR = 0.01
#: GPUs in one instance (the largest sold hold 8-16; a rack-scale NVL72 box is 72 split in nodes)
MAX_GPUS_PER_INSTANCE = 64
#: instances of one offering available together (a price table's or [pricing] row's
#: max_instances); a million is beyond any provider's largest cluster
MAX_INSTANCES = 10**6
