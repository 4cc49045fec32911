"""`ccopt calibrate --from-plan FILE`: the run's configuration read back from a file that
`ccopt plan --export` wrote (its `ccopt-plan: {...}` header line: a comment of the YAML, TOML
and shell formats, an entry of the `_ccopt` list of the DeepSpeed JSON) or from a saved
`ccopt plan --json` output (its plan row)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError
from optimizer.files import parse_json, read_input_text

__all__ = ["read_plan_header", "PLAN_HEADER_PREFIX", "HEADER_FIELDS"]

#: the prefix report/export/common.py writes (PLAN_HEADER_PREFIX there; a test checks both)
PLAN_HEADER_PREFIX = "ccopt-plan: "
#: the options a header may carry (estimate's and calibrate's configuration flags by name)
HEADER_FIELDS = frozenset(
    {
        "model", "instance", "gpu", "gpus_per_instance", "inter_node_gbps", "num_gpus", "tp", "pp",
        "context_parallel", "virtual_stages", "zero_stage", "activation_checkpointing",
        "sequence_parallel", "micro_batch", "global_batch", "seq_len", "precision", "optimizer",
        "kind", "lora_rank", "lora_targets", "attention", "stack", "offload_optimizer",
        "offload_params", "fused_kernels", "head",
    }
)  # fmt: skip


def read_plan_header(path: str | Path) -> dict[str, Any] | None:
    """The header's options of an exported file ({option: value}), or None when the file is a
    saved `ccopt plan --json` output (the caller reads its row).

    Raises:
        ConfigError: unreadable, no header line, or a header that is not the JSON object written
            (names the file, the line and the field).
    """
    file = str(path)
    try:
        text = read_input_text(path, "--from-plan")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--from-plan: {file} cannot be read ({exc})") from None
    doc = _json_doc(text, file)
    if isinstance(doc, dict) and "plan" in doc and "job" in doc:
        return None
    entries = doc.get("_ccopt") if isinstance(doc, dict) else None
    if isinstance(entries, list):  # DeepSpeed JSON: the header is a list of strings
        lines = [(i + 1, e) for i, e in enumerate(entries) if isinstance(e, str)]
    else:
        lines = [(i + 1, ln.lstrip("#").strip()) for i, ln in enumerate(text.splitlines())]
    for number, line in lines:
        if line.startswith(PLAN_HEADER_PREFIX):
            return _options(line[len(PLAN_HEADER_PREFIX) :], file, number)
    raise ConfigError(
        f"--from-plan: {file}: no '{PLAN_HEADER_PREFIX.strip()}' header line; allowed: a file written "
        "by `ccopt plan --export` (this version) or a saved `ccopt plan --json` output"
    )


def _json_doc(text: str, file: str) -> Any:
    """The file as JSON when it is JSON (DeepSpeed config, plan output), else None."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        return parse_json(text, f"--from-plan: {file}")
    except json.JSONDecodeError:
        return None


def _options(raw: str, file: str, line: int) -> dict[str, Any]:
    try:
        value = parse_json(raw, f"--from-plan: {file} line {line}")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--from-plan: {file} line {line}: the plan header is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--from-plan: {file} line {line}: the plan header is not a JSON object")
    unknown = sorted(set(value) - HEADER_FIELDS)
    if unknown:
        raise ConfigError(
            f"--from-plan: {file} line {line}: unknown field {unknown[0]!r}; allowed: "
            + ", ".join(sorted(HEADER_FIELDS))
        )
    for key, item in value.items():
        scalar = item is None or isinstance(item, str | int | float | bool)
        if not scalar and not (key == "lora_targets" and isinstance(item, list)):
            raise ConfigError(f"--from-plan: {file} line {line}: {key} must be a number, string or boolean")
    if isinstance(value.get("lora_targets"), list):
        value["lora_targets"] = tuple(str(t) for t in value["lora_targets"])
    return value
