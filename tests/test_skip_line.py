"""The README's promise: with the README's own test command (`python -m pytest -q`), tests that
skip (no browser, no torch) say so in one line with how to enable them (pytest's -rs, set in
pyproject's addopts, shows the reason even with -q)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_pytest_q_prints_one_line_per_skip_reason(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(3))\n"
        "def test_needs_a_browser(n):\n"
        "    pytest.skip('chromium not found: `apt-get install -y chromium` to run the browser tests')\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            str(ROOT / "pyproject.toml"),
            "-p",
            "no:cacheprovider",
            str(probe),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if "apt-get install -y chromium" in line]
    assert len(lines) == 1 and lines[0].startswith("SKIPPED [3]"), done.stdout
