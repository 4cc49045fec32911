"""The measure-then-plan loop of issue 45, end to end on a throwaway calibration store: the
sizing run of the headline's median-plan box (as `ccopt sizing` lists it), a SYNTHETIC
torchtitan-format log of that run (made up here,
not measured), `ccopt calibrate --from-log` with the calibrate line `ccopt sizing` prints, and
the re-plan. README's *Measure before you commit* shows its output:

    python -m tools.loop_example [--speed F]

F is the measured step as a fraction of the sizing line's threshold × its predicted step
(default 0.97: a run 3% faster than the threshold, so the cheaper plan holds; above 1 it does
not). tests/cli/test_loop_end_to_end.py checks the same loop's numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = "examples/llama7b_10days.toml"
#: tokens/s per GPU of a torchtitan warm-up step, as a fraction of the steady rate (made up: the
#: first steps compile and fill the allocator)
_WARMUP_FRACTION = 0.6
#: a stored run's id in calibrate's report ("run 3b6af6cb: ...")
_RUN_ID = re.compile(r"^(run )[0-9a-f]{8}:", re.M)
#: step-to-step jitter of the made-up steady steps, tokens/s per GPU (symmetric: the median is
#: the steady rate)
_JITTER = (40, -40, 20, -20, 0)


def sizing_tokens_per_s_per_gpu(block: dict, tokens_per_step: int, speed: float) -> int:
    """Tokens/s per GPU of a run whose step is `speed` × the sizing line's threshold × its
    predicted step (tokens/s = tokens per step / step time), rounded down (a slightly slower
    step than asked)."""
    step_s = speed * block["threshold_multiplier"] * block["step_time_s"]
    return int(tokens_per_step / step_s / block["gpus"])


def torchtitan_log(path: Path, steps: int, warmup_steps: int, tps_per_gpu: int) -> Path:
    """A SYNTHETIC torchtitan log (its `step: N loss: L memory: XGiB(P%) tps: T` line, as
    torchtitan's metrics logger prints it): `warmup_steps` slower steps, then `tps_per_gpu`
    with a symmetric jitter (tests/inputs/training_logs/fixtures/torchtitan.log is a real one)."""
    lines = ["# SYNTHETIC: a made-up torchtitan log of the headline job's sizing run, not a measurement"]
    for s in range(1, steps + 1):
        tps = int(tps_per_gpu * _WARMUP_FRACTION) if s <= warmup_steps else tps_per_gpu + _JITTER[s % 5]
        stamp = f"2026-12-05 04:{10 + s // 60:02d}:{s % 60:02d},000"
        lines.append(
            f"[rank0]:[titan] {stamp} - root - INFO - step: {s:2d}  loss: {10 - s * 0.05:.4f}  "
            f"memory: 152.40GiB(85.62%)  tps: {tps:,}"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@contextmanager
def _store(tmp: Path) -> Iterator[dict[str, str]]:
    """A calibration store and price cache of their own in `tmp`, offline (the README's
    environment); run in `tmp` with a copy of the job, so every path shown is relative."""
    (tmp / Path(JOB).parent).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / JOB, tmp / JOB)
    yield {
        "CCOPT_OFFLINE": "1",
        "CCOPT_PRICES_OVERLAY": "",
        "CCOPT_CALIBRATION": "calibration.json",
        "CCOPT_CACHE_DIR": "cache",
        "COLUMNS": "160",
    }


def _run(args: Sequence[str], env: dict[str, str]) -> str:
    from typer.testing import CliRunner  # lazy: the tool imports the package only to run it

    from optimizer.cli import app  # lazy: as above

    result = CliRunner().invoke(app, list(args), env=env)
    if result.exit_code != 0:
        raise SystemExit(f"ccopt {shlex.join(args)}: exit {result.exit_code}\n{result.stderr}")
    return result.stdout


def loop(speed: float, tmp: Path) -> str:
    """Run the loop in `tmp`; the printed steps."""
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        with _store(tmp) as env:
            shown = _loop(speed, env)
    finally:
        os.chdir(cwd)
    return _RUN_ID.sub(r"\1<id>:", shown)  # a stored run's id differs run to run


def _loop(speed: float, env: dict[str, str]) -> str:
    out: list[str] = []
    plan = _run(["plan", JOB, "--alternatives", "0"], env)
    out += [f"$ ccopt plan {JOB}", *_paragraph(plan, ("4×", "P50", "a P50 plan", "sizing run:"))]
    # followed on the median plan's box (8x B200): the plan's own sizing line may name another
    # contender (the one of largest expected saving); `ccopt sizing` lists this one's block too
    med = json.loads(_run(["plan", JOB, "--json"], env))["median_plan"]
    sizing = json.loads(_run(["sizing", JOB, "--json"], env))
    run = next(
        r
        for r in sizing["runs"]
        if (r["provider"], r["instance"], r["instances"])
        == (med["provider"], med["instance"], med["instances"])
    )
    block = run["settles"]
    args = shlex.split(run["command"])[1:]
    tokens_per_step = int(_flag(args, "--global-batch")) * int(_flag(args, "--seq-len"))
    tps = sizing_tokens_per_s_per_gpu(block, tokens_per_step, speed)
    steps = block["warmup_steps"] + block["measured_steps"]
    log = torchtitan_log(Path("b200_sizing.log"), steps, block["warmup_steps"], tps)
    out += [
        "",
        f"# the sizing run, {steps} steps; its log here is SYNTHETIC: {tps:,} tokens/s per GPU, a step of",
        f"# {speed} × the threshold {block['threshold_multiplier']} × the predicted {block['step_time_s']} s",
        f"$ tail -n 2 {log}",
        *log.read_text(encoding="utf-8").splitlines()[-2:],
    ]
    at = args.index("--tokens-per-s")
    args[at : at + 2] = ["--from-log", str(log), "--warmup-steps", str(block["warmup_steps"])]
    calibrated = _run(args, env)
    lines = calibrated.splitlines()
    fit = next(i for i, line in enumerate(lines) if line.startswith("run "))
    model = _flag(args, "--model")  # the stored peak's paragraph starts with the model's name
    end = next((i for i in range(fit + 1, len(lines)) if lines[i].startswith(model)), len(lines))
    out += ["", f"$ ccopt {shlex.join(args)}", *lines[:2], "...", *lines[fit:end], "..."]
    replan = _run(["plan", JOB, "--alternatives", "1"], env)
    kept = ("1×", "4×", "P50", "a P50 plan", "sizing run:", "speed:", "check:")
    table = [line for line in replan.splitlines() if line[:1] in "┏┃┡│└"]
    out += ["", f"$ ccopt plan {JOB} --alternatives 1", *_paragraph(replan, kept), *table]
    return "\n".join(out)


def _flag(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def _paragraph(text: str, starts: tuple[str, ...]) -> list[str]:
    """The first line of the output and the lines starting with `starts` (with the lines rich
    wrapped them onto: those not starting with two spaces)."""
    lines = text.splitlines()
    out = [lines[0]]
    keep = False
    for line in lines[1:]:
        if line.startswith("  "):
            keep = line.strip().startswith(starts)
        if keep:
            out.append(line.rstrip())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=0.97, help="measured step ÷ (threshold × prediction)")
    speed = parser.parse_args().speed
    with tempfile.TemporaryDirectory() as tmp:
        print(loop(speed, Path(tmp)))


if __name__ == "__main__":
    main()
