"""A job file planned at the model's point prediction, for tests that compare a plan with
`estimate`: at confidence 0.5, where every band's multiplier is 1 (the point carries its band's
P50: optimizer/model/bands.py) and memory fits at the point."""

from __future__ import annotations

import re


def at_point_prediction(path, tmp_path):
    """A copy of job file `path` planned at confidence 0.5 (its existing value replaced)."""
    from pathlib import Path

    text = re.sub(r"(?m)^confidence\s*=.*\n", "", Path(path).read_text())
    if re.search(r"(?m)^\[constraints\]\s*$", text):
        text = re.sub(r"(?m)^\[constraints\]\s*$", "[constraints]\nconfidence = 0.5", text, count=1)
    else:
        text += "\n[constraints]\nconfidence = 0.5\n"
    out = Path(tmp_path) / Path(path).name
    out.write_text(text)
    return out
