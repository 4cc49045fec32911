"""What a front end (the CLI) checks of its own arguments with the rules job files follow: a
number in range (the one message format) and old names that still work with a warning."""

from __future__ import annotations

from optimizer.inputs.aliases import DeprecatedName, warn_renamed
from optimizer.inputs.validation import check_number

__all__ = ["check_number", "warn_renamed", "DeprecatedName"]
