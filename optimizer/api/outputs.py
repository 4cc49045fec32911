"""The output files a command writes (`-o`, `--plot`): checked by optimizer.files against the
command's inputs and the stores ccopt keeps (the calibration store, the price cache)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from optimizer.files import OutputFile
from optimizer.files import output_file as _output_file
from optimizer.inputs.calibration_file import calibration_path
from optimizer.pricing.cache_meta import META_FILE
from optimizer.pricing.catalog import CACHE_FILE, cache_dir

__all__ = ["output_file", "kept_stores"]


def kept_stores() -> dict[Path, str]:
    """The files ccopt keeps between runs, which no output may replace: path -> what it is."""
    kept = {calibration_path(): "the calibration store"}
    cache = cache_dir()
    if cache is not None:
        kept.update({cache / CACHE_FILE: "the price cache", cache / META_FILE: "the price cache's metadata"})
    return kept


def output_file(
    path: str | Path,
    flag: str,
    *,
    force: bool = False,
    inputs: Mapping[str, str | Path | None] | None = None,
) -> OutputFile:
    """The output `path` named by `flag`, checked now; write it with `.write(data)` at the end.

    Args:
        path: the file the user named.
        flag: the option that named it ("-o", "--plot"), for messages.
        force: replace an existing file that is not an earlier ccopt output.
        inputs: what each input of the command is -> its path (None: not given), e.g.
            {"the job file": job}; files read later are refused too (optimizer.files).

    Raises:
        ConfigError: refused, one line naming the flag, the path and why (optimizer.files).
    """
    keep = [(p, what) for what, p in (inputs or {}).items() if p is not None]
    keep += [(p, what) for p, what in kept_stores().items()]
    return _output_file(path, flag, force=force, keep=keep)
