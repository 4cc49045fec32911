"""Fixtures of the reliability tests: an isolated user state and `ccopt` run in-process."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from optimizer.cli import main
from tests.reliability.refresh_support import BUNDLED, RawServer


@dataclass(frozen=True)
class Run:
    """What one `ccopt ...` call did: its exit code and its two streams."""

    code: int
    out: str
    err: str


def _strict_constant(name: str) -> float:
    raise ValueError(f"not strict JSON: {name}")


def strict_json(text: str) -> object:
    """json.loads that refuses NaN / Infinity (what strict JSON parsers do)."""
    return json.loads(text, parse_constant=_strict_constant)


@pytest.fixture
def loads() -> Callable[[str], object]:
    """strict_json, for tests (conftest modules are not importable by name)."""
    return strict_json


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Offline, no stored calibration, an empty price cache."""
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CCOPT_PRICES_URL", raising=False)
    return tmp_path


@pytest.fixture
def ccopt(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """Run `ccopt ARGS` through optimizer.cli.main (what users run), capturing its output."""

    def run(*args: str) -> Run:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def cache(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache holding the bundled table (253 rows), online."""
    monkeypatch.delenv("CCOPT_OFFLINE")
    directory = isolated / "cache"
    directory.mkdir()
    (directory / "offerings.csv").write_bytes(BUNDLED)
    return directory


@pytest.fixture
def raw() -> Iterator[RawServer]:
    """A raw-bytes HTTP server on 127.0.0.1 (tests/reliability/refresh_support.py)."""
    server = RawServer()
    yield server
    server.stop.set()
    server.sock.close()
