"""Load the validation set: every `<source_id>.csv` in this folder as typed rows.

    from load import load_rows          # with benchmarks/validation on sys.path
    rows = load_rows()                  # list[Row], file by file, in file-name order

The header of each file must equal the column list of SCHEMA.md (same names, same order);
`model_profiles_source.csv` is not a measurement file and is skipped. Empty fields become None;
integer, float and boolean columns are parsed (a malformed number raises `ValidationError`
naming the file, line and column).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

__all__ = [
    "HERE",
    "SCHEMA",
    "EXCLUDED_FILES",
    "Row",
    "ValidationError",
    "schema_columns",
    "csv_files",
    "load_file",
    "load_rows",
]

HERE = Path(__file__).resolve().parent
SCHEMA = HERE / "SCHEMA.md"
#: CSV files in this folder that are not measurement files
EXCLUDED_FILES = frozenset({"model_profiles_source.csv"})


class ValidationError(ValueError):
    """A validation CSV does not follow SCHEMA.md."""


@dataclass(frozen=True)
class Row:
    """One measured run (one CSV row), typed. Field names are the SCHEMA.md columns."""

    case_id: str
    source_id: str
    source_url: str
    source_where: str
    kind: str
    stack: str
    stack_version: str | None
    model: str
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    ffn: int | None
    vocab: int | None
    ffn_kind: str | None
    moe_experts: int | None
    moe_active: int | None
    gpu: str | None
    gpu_note: str | None
    num_gpus: int | None
    gpus_per_node: int | None
    inter_node_gbps: float | None
    precision: str | None
    method: str | None
    lora_rank: int | None
    lora_targets: str | None
    optimizer: str | None
    tp: int | None
    pp: int | None
    dp: int | None
    cp: int | None
    vp: int | None
    ep: int | None
    sequence_parallel: bool | None
    zero_stage: int | None
    activation_checkpointing: str | None
    micro_batch: int | None
    global_batch: int | None
    seq_len: int | None
    serve_batch: int | None
    input_tokens: int | None
    output_tokens: int | None
    kv_cache_precision: str | None
    weight_precision: str | None
    metric: str
    value: float
    metric_meaning: str | None
    quote: str | None
    assumptions: str | None
    confidence: str | None
    head_dim: int | None = None  # optional trailing column (OPTIONAL_COLUMNS)
    #: file the row was read from (not a CSV column) and its 1-based line of the CSV record
    file: str = ""
    line: int = 0


_INT = {
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "ffn",
    "vocab",
    "moe_experts",
    "moe_active",
    "num_gpus",
    "gpus_per_node",
    "lora_rank",
    "tp",
    "pp",
    "dp",
    "cp",
    "vp",
    "ep",
    "zero_stage",
    "micro_batch",
    "global_batch",
    "seq_len",
    "serve_batch",
    "input_tokens",
    "output_tokens",
}
_FLOAT = {"inter_node_gbps", "value"}
_BOOL = {"sequence_parallel"}
_REQUIRED = {"case_id", "source_id", "kind", "stack", "model", "metric", "value"}
_EXTRA = {"file", "line"}
#: trailing SCHEMA.md columns a file may leave out as a whole (read as empty)
OPTIONAL_COLUMNS = ("head_dim",)


@lru_cache(maxsize=1)
def schema_columns(schema: Path = SCHEMA) -> tuple[str, ...]:
    """Column names in the order of SCHEMA.md's column table (`a,b,c` cells are split)."""
    names: list[str] = []
    in_table = False
    for line in schema.read_text(encoding="utf-8").splitlines():
        if line.startswith("| column |"):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith("|"):
            if names:
                break
            continue
        cell = line.split("|")[1].strip()
        if set(cell) <= {"-", ":", " "}:
            continue
        for name in cell.strip("`").split(","):
            name = name.strip().strip("`")
            if name and name not in names:
                names.append(name)
    if not names:
        raise ValidationError(f"{schema}: no column table found")
    return tuple(names)


def _check_row_fields() -> None:
    row_fields = [f.name for f in fields(Row) if f.name not in _EXTRA]
    if tuple(row_fields) != schema_columns():
        raise ValidationError("load.Row fields differ from SCHEMA.md columns: update load.py")


def accepted_headers() -> tuple[tuple[str, ...], ...]:
    """The headers a file may have: every column, or without the optional trailing ones."""
    columns = schema_columns()
    assert columns[-len(OPTIONAL_COLUMNS) :] == OPTIONAL_COLUMNS, "optional columns close the table"
    return columns, columns[: -len(OPTIONAL_COLUMNS)]


def csv_files(folder: Path = HERE) -> list[Path]:
    """The measurement CSVs of the folder, in file-name order."""
    return sorted(p for p in folder.glob("*.csv") if p.name not in EXCLUDED_FILES)


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _parse(name: str, raw: str, where: str) -> object:
    text = raw.strip()
    if text == "":
        if name in _REQUIRED:
            raise ValidationError(f"{where}: {name} is empty")
        return None
    if name in _INT:
        try:
            number = float(text) if _NUMBER.match(text) else None
        except ValueError:
            number = None
        if number is None or number != int(number):
            raise ValidationError(f"{where}: {name}={text!r} is not an integer")
        return int(number)
    if name in _FLOAT:
        if not _NUMBER.match(text):
            raise ValidationError(f"{where}: {name}={text!r} is not a number")
        return float(text)
    if name in _BOOL:
        low = text.lower()
        if low not in ("true", "false"):
            raise ValidationError(f"{where}: {name}={text!r} is not true/false")
        return low == "true"
    return text


def load_file(path: Path) -> list[Row]:
    """Rows of one validation CSV; the header must be SCHEMA.md's columns, in order (the optional
    trailing columns may be left out as a whole, and then read as empty)."""
    _check_row_fields()
    columns = schema_columns()
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise ValidationError(f"{path.name}: empty file") from None
        if tuple(header) in accepted_headers():
            columns = tuple(header)
        else:
            missing = [c for c in columns if c not in header]
            extra = [c for c in header if c not in columns]
            raise ValidationError(
                f"{path.name}: header differs from SCHEMA.md (missing "
                f"{missing or 'none'}, unexpected {extra or 'none'}"
                f"{', order differs' if not missing and not extra else ''})"
            )
        rows: list[Row] = []
        for record in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in record):
                continue
            if len(record) != len(columns):
                raise ValidationError(f"{path.name}:{line}: {len(record)} fields, expected {len(columns)}")
            values = {
                name: _parse(name, raw, f"{path.name}:{line}")
                for name, raw in zip(columns, record, strict=True)
            }
            rows.append(Row(**values, file=path.name, line=line))  # type: ignore[arg-type]
    return rows


def load_rows(folder: Path = HERE) -> list[Row]:
    """Every measurement row of every validation CSV in the folder."""
    rows: list[Row] = []
    for path in csv_files(folder):
        rows += load_file(path)
    return rows


if __name__ == "__main__":
    import collections

    loaded = load_rows()
    by_file = collections.Counter(r.file for r in loaded)
    for name, count in sorted(by_file.items()):
        print(f"{count:5d}  {name}")
    print(f"{len(loaded):5d}  rows in {len(by_file)} files")


#: the kept-aside collections (sub-folders of this one, never fitted), newest first: (folder,
#: what it is); benchmarks/accuracy.py scores each, memory_accuracy.py pools their memory rows
ASIDE_FOLDERS = (
    ("aside28", "collected after aside26 was scored, d 0.55 (repositories, pages), scored once"),
    ("aside26", "collected after aside24 was scored, two-source memory terms (repos, threads), scored once"),
    ("aside24", "collected after aside22 was scored, d 0.48 (repositories, threads), scored once"),
    (
        "aside22",
        "collected after aside20 and aside21 were scored, d 0.49 (repositories, threads), scored once",
    ),
    ("aside21", "collected after aside18 was scored (GitHub issue threads), scored once"),
    ("aside20", "collected after aside18 was scored (GitHub repository files), scored once"),
    ("aside18", "collected after aside16 and aside17 were scored (GitHub repositories), scored once"),
    (
        "aside17",
        "collected after aside15 was scored and the widening recalibrated (AMD, Ampere), scored once",
    ),
    ("aside16", "collected after aside15 was scored and the widening recalibrated (Hopper), scored once"),
    ("aside15", "collected after aside14 was scored, scored once with nothing changed since"),
    ("aside14", "collected after aside13 was scored, scored once after this round's fixes and recalibration"),
    ("aside13", "collected after aside12 was scored, scored once after the fix aside12 showed"),
    ("aside12", "collected after aside11 was scored, scored once, then development data"),
    ("aside11", "collected after aside10 was scored, scored once, then development data"),
    ("aside10", "collected after aside9 was scored, scored once, then development data"),
    ("aside9", "collected after aside8 was scored, scored once, then development data"),
    ("aside8", "collected after the quadrature widening, scored once, then development data"),
    ("aside7", "collected in issue 44's last round, scored once, then development data (in the widening)"),
    ("aside6", "collected in issue 44's sixth round, scored once, then development data (in the widening)"),
    ("aside5", "collected in issue 44's fifth round before its fixes, scored once, then development data"),
    ("aside4", "collected in issue 44's fourth round before its fixes, scored once, then development data"),
    ("aside3", "collected in issue 44's review before its fixes, scored once, then development data"),
    ("aside2", "collected in issue 44, scored once, then development data for its review"),
    ("aside", "collected in issue 26, scored in earlier rounds"),
)
