"""Refuse a downloaded price table that lost much of the one in use (a half or partial table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.errors import RefreshError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_ROW_LOSS", "MAX_PRICE_SHIFT", "check_shrink"]

#: GUESS: a table losing more than a fifth of its rows at once is more likely cut off or
#: partial than a real market change (providers retire a few instance types at a time)
MAX_ROW_LOSS = 0.2
#: GUESS: the median price of the offerings both tables list moving by more than this factor
#: (either way) at once is a unit or scale mistake (cents, per month, ÷1000), not the market
#: (list prices of one generation move by tens of percent a year)
MAX_PRICE_SHIFT = 2.0


def check_shrink(
    old: pd.DataFrame, new: pd.DataFrame, old_label: str, max_loss: float = MAX_ROW_LOSS
) -> None:
    """Raise when `new` has lost more than `max_loss` of the rows of `old`, or a whole provider.

    Raises:
        RefreshError: one line with the counts, the providers lost and `--allow-shrink`.
    """
    lost = sorted(set(old["provider"]) - set(new["provider"]))
    n_old, n_new = len(old), len(new)
    share = (n_old - n_new) / n_old if n_old else 0.0
    problems = []
    if share > max_loss:
        problems.append(
            f"{n_new} rows against {n_old} in the {old_label} ({share:.0%} fewer; "
            f"at most {max_loss:.0%} allowed)"
        )
    if lost:
        problems.append(f"no rows of provider{'s' if len(lost) > 1 else ''} {', '.join(lost)}")
    shift = median_price_ratio(old, new)
    if shift is not None and not 1 / MAX_PRICE_SHIFT <= shift <= MAX_PRICE_SHIFT:
        problems.append(
            f"prices {shift:.3g}× those of the {old_label} (median over the offerings both list; "
            f"at most {MAX_PRICE_SHIFT:g}× either way)"
        )
    if problems:
        raise RefreshError(
            f"the new table has {' and '.join(problems)}; refused as likely cut off, partial "
            "or in other units (pass --allow-shrink to accept it)"
        )


def median_price_ratio(old: pd.DataFrame, new: pd.DataFrame) -> float | None:
    """The median of new ÷ old usd_per_hour over the offerings (provider, instance, region,
    pricing model) both tables list; None when they share none."""
    key = ["provider", "instance_type", "region", "pricing_model"]
    both = old[[*key, "usd_per_hour"]].merge(new[[*key, "usd_per_hour"]], on=key, suffixes=("_old", "_new"))
    both = both[both["usd_per_hour_old"] > 0]
    if both.empty:
        return None
    return float((both["usd_per_hour_new"] / both["usd_per_hour_old"]).median())
