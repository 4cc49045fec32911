"""README snippets that cannot drift: every shown command's output is produced by running it.

A block in README.md

    <!-- ccopt:run ccopt plan examples/llama7b_10days.toml -->
    ```
    ...output...
    ```
    <!-- ccopt:end -->

is re-run by `python -m tools.readme --write` (offline, bundled prices, no user calibration);
`tests/test_readme.py` fails when a shown output no longer matches (timings and the price
tables' age in days ignored). Benchmark blocks, `<!-- ccopt:bench python benchmarks/X.py ... -->`,
are slow and timing-dependent: `--write --benchmarks` reruns them and stamps the date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: the documents with generated blocks (fields blocks: tools/job_fields.py tables)
DOCUMENTS = (README, ROOT / "docs" / "job-files.md")
_BLOCK = re.compile(
    r"<!-- ccopt:(run|bench|fields) (?P<cmd>.+?) -->\n(?P<body>.*?)"
    r"<!-- ccopt:end -->\n",
    re.S,
)
#: what changes run to run or day to day, masked before comparing
_VOLATILE = [
    (re.compile(r"(CP-SAT, \d+ [a-z ]+, )\d+\.\d+ s"), r"\1<t> s"),
    (re.compile(r"(CP-SAT )\d+\.\d+ s"), r"\1<t> s"),
    (re.compile(r"\b\d+ days? old"), "<n> days old"),
    (re.compile(r"prices: (.*), as of .*"), r"prices: \1"),
]


#: what every benchmark may read: the package (code and its data tables) and the benchmark
#: folder (the scripts, their shared helpers and the validation CSVs)
_PACKAGE_AND_BENCHMARKS = ("optimizer", "benchmarks")
#: benchmark script -> the files (or folders) whose code or data it measures; its README block
#: records a hash of them, and tests/test_readme.py fails when they changed after the block was
#: regenerated. Timings and accuracy tables depend on the whole package, so they are stale after
#: any change to it (over-approximate: a needless rerun, never a stale table)
BENCH_SOURCES: dict[str, tuple[str, ...]] = {
    "benchmarks/accuracy.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/batch_scaling.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/calibration_ceiling.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/calibration_points.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/mix_rows.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/mix_speed.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/new_sources.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/plan_speed.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/published_cases.py": _PACKAGE_AND_BENCHMARKS,
    "benchmarks/rl_accuracy.py": _PACKAGE_AND_BENCHMARKS,
}
#: the files of a listed folder that count: code and the data it reads
_MEASURED_SUFFIXES = (".py", ".csv", ".toml", ".json")
_SOURCES_STAMP = re.compile(r"sources ([0-9a-f]{12})\)")


def sources_hash(script: str) -> str | None:
    """The first 12 hex digits of a SHA-256 over the measured files (path and bytes, in path
    order; a folder's code and data files, _MEASURED_SUFFIXES); None for a benchmark without
    listed sources."""
    paths = BENCH_SOURCES.get(script)
    if paths is None:
        return None
    files: list[Path] = []
    for rel in paths:
        p = ROOT / rel
        if p.is_dir():
            files += [
                f for f in p.rglob("*") if f.suffix in _MEASURED_SUFFIXES and "__pycache__" not in f.parts
            ]
        else:
            files.append(p)
    h = hashlib.sha256()
    for f in sorted(set(files)):
        h.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def bench_script(command: str) -> str:
    """The script a bench block runs (`python benchmarks/X.py ...` -> benchmarks/X.py)."""
    return shlex.split(command)[1]


def recorded_hash(block: Block) -> str | None:
    """The sources hash a bench block's stamp records (None: none recorded)."""
    m = _SOURCES_STAMP.search(block.body)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Block:
    kind: str  # run | bench | fields
    command: str
    body: str
    span: tuple[int, int]


def blocks(text: str) -> list[Block]:
    """The generated blocks of a README text, in order."""
    return [Block(m.group(1), m.group("cmd"), m.group("body"), m.span()) for m in _BLOCK.finditer(text)]


def mask(text: str) -> str:
    """`text` with timings and ages replaced by markers, trailing spaces dropped."""
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def run_ccopt(command: str) -> str:
    """Output of one `ccopt ...` command as the README shows it (in-process, offline)."""
    from typer.testing import CliRunner  # lazy: only when regenerating or testing

    from optimizer.cli import app  # lazy: the tool imports the package only to run it

    args = shlex.split(command)
    assert args[0] == "ccopt", command
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "CCOPT_OFFLINE": "1",
            "CCOPT_PRICES_OVERLAY": "",  # the docs show the catalog prices, not a reader's own
            "CCOPT_CALIBRATION": str(Path(tmp) / "cal.json"),
            "CCOPT_CACHE_DIR": str(Path(tmp) / "cache"),
            "COLUMNS": "160",
        }
        cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            result = CliRunner().invoke(app, args[1:], env=env)
        finally:
            os.chdir(cwd)
    out = result.stdout.rstrip("\n")
    tail = f"\n(exit code {result.exit_code})" if result.exit_code else ""
    return f"$ {command}\n{out}{tail}"


#: run blocks that run a script of tools/ instead of one ccopt command (it prints its own steps)
_TOOL_SCRIPT = re.compile(r"python -m (tools\.[a-z_]+)( .*)?$")


def run_command(command: str) -> str:
    """Output of a run block: one `ccopt ...` command in-process, or a tools/ script (a
    subprocess, offline, its output prefixed by the command as a ccopt block is)."""
    if _TOOL_SCRIPT.match(command) is None:
        return run_ccopt(command)
    args = [sys.executable, *shlex.split(command)[1:]]
    env = {**os.environ, "CCOPT_OFFLINE": "1", "CCOPT_PRICES_OVERLAY": "", "COLUMNS": "160"}
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True, env=env)
    return f"$ {command}\n{done.stdout.rstrip()}"


def run_bench(command: str) -> str:
    """Output of a benchmark script (a subprocess), stamped with today's date."""
    out = subprocess.run(
        shlex.split(command.replace("python ", f"{sys.executable} ", 1)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "CCOPT_OFFLINE": "1"},
    ).stdout.rstrip("\n")
    digest = sources_hash(bench_script(command))
    sources = f" (sources {digest})" if digest else ""
    return f"{out}\n\n_Regenerated {dt.date.today().isoformat()} by `{command}`{sources}._"


def render(block: Block) -> str:
    fence = "```\n" if block.kind == "run" else ""
    if block.kind == "fields":
        from tools.job_fields import markdown  # lazy: imports the package

        body = markdown(block.command)
    else:
        body = run_command(block.command) if block.kind == "run" else run_bench(block.command)
    end = "\n```\n" if block.kind == "run" else "\n"
    return f"<!-- ccopt:{block.kind} {block.command} -->\n{fence}{body}{end}<!-- ccopt:end -->\n"


def shown_output(block: Block) -> str:
    """What the README currently shows inside a run block (without the fence)."""
    return block.body.removeprefix("```\n").removesuffix("```\n").rstrip("\n")


def regenerate(text: str, benchmarks: bool = False, only: str | None = None) -> str:
    """README text with every run block (and bench blocks if asked: all, or those whose
    command contains `only`) re-run."""
    out, last = [], 0
    for b in blocks(text):
        out.append(text[last : b.span[0]])
        rerun = b.kind != "bench" or (benchmarks and (only is None or only in b.command))
        out.append(render(b) if rerun else text[b.span[0] : b.span[1]])
        last = b.span[1]
    out.append(text[last:])
    return "".join(out)


def stale_blocks(path: Path) -> list[str]:
    """Commands (or field tables) whose shown output differs from a fresh run (masked)."""
    text = path.read_text(encoding="utf-8")
    new = regenerate(text)
    return [
        b.command
        for b, n in zip(blocks(text), blocks(new), strict=True)
        if b.kind != "bench" and mask(shown_output(b)) != mask(shown_output(n))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the documents in place")
    parser.add_argument("--benchmarks", action="store_true", help="also rerun benchmark blocks")
    parser.add_argument(
        "--only", help="with --benchmarks: only the blocks whose command contains this text (e.g. plan_speed)"
    )
    args = parser.parse_args()
    stale: list[str] = []
    for path in DOCUMENTS:
        if args.write:
            new = regenerate(path.read_text(encoding="utf-8"), benchmarks=args.benchmarks, only=args.only)
            tmp = path.with_suffix(".md.tmp")
            tmp.write_text(new, encoding="utf-8")
            tmp.replace(path)  # atomic: never a half-written document
            print(f"{path.relative_to(ROOT)}: {len(blocks(new))} generated blocks")
        else:
            stale += [f"{path.relative_to(ROOT)}: {c}" for c in stale_blocks(path)]
    if not args.write:
        print("\n".join(f"stale: {c}" for c in stale) or "documents are up to date")
        sys.exit(1 if stale else 0)


if __name__ == "__main__":
    main()
