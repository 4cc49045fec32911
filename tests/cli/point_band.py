"""A job file planned at the model's point prediction (its band exactly 1), for tests that
compare a plan with `estimate`."""

from __future__ import annotations

#: appended to a job file: its band is exactly 1 (a prior of [1, 1] outweighing any fitted
#: band), so a plan made at any confidence is the model's point prediction, as `estimate` gives
POINT_BAND_TOML = "\n[assumptions]\nband_prior = [1.0, 1.0]\nband_prior_cases = 1e12\n"


def at_point_prediction(path, tmp_path):
    """A copy of job file `path` planned at the model's point prediction (POINT_BAND_TOML)."""
    from pathlib import Path

    out = Path(tmp_path) / Path(path).name
    out.write_text(Path(path).read_text() + POINT_BAND_TOML)
    return out
