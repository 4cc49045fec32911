"""Refuse a downloaded price table that lost much of the one in use (a half or partial table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.errors import RefreshError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAX_ROW_LOSS", "check_shrink"]

#: GUESS: a table losing more than a fifth of its rows at once is more likely cut off or
#: partial than a real market change (providers retire a few instance types at a time)
MAX_ROW_LOSS = 0.2


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
    if problems:
        raise RefreshError(
            f"the new table has {' and '.join(problems)}; refused as likely cut off "
            "or partial (pass --allow-shrink to accept it)"
        )
