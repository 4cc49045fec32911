"""The user cache is data read like any untrusted input (optimizer/user_cache.py).

For each cache family — the parsed bundled tables (`parsed/*.json`) and the refreshed price
table (`offerings.csv` + `offerings.meta.json`) — a FIFO, a symlink to another file, a folder
others may write, a relative cache directory, damaged bytes and JSON nested 5,000 deep: the
command still gives the answer it gives without a cache (exit 0) and says in a `note:` line
what it ignored. Nothing in the cache is ever executed (there is nothing to execute: JSON).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from optimizer.cli import main
from optimizer.pricing.catalog import bundled_path
from optimizer.user_cache import parsed_toml, read_cache_json, write_cache_file

ROOT = Path(__file__).resolve().parents[1]
JOB = str(ROOT / "examples" / "bert_base_finetune_8gb.toml")
DEEP = b"[" * 5000 + b"]" * 5000


def _plan(cache: str, cwd: Path = ROOT) -> tuple[int, dict, str]:
    """`ccopt plan JOB --json` in a fresh process (the parsed tables are read once per process),
    run in `cwd` (where a relative cache directory would land)."""
    env = {**os.environ, "CCOPT_CACHE_DIR": cache, "CCOPT_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "optimizer", "plan", JOB, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return done.returncode, json.loads(done.stdout) if done.stdout else {}, done.stderr


def _cost(result: dict) -> float:
    return result["plan"]["cost_usd"] if "plan" in result else result["cost_usd"]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """A cache written by a first run, and the plan's cost (the same with or without cache)."""
    cache = tmp_path_factory.mktemp("clean") / "cache"
    code, first, _ = _plan(str(cache))
    code_again, again, err = _plan(str(cache))
    assert code == code_again == 0 and "note:" not in err
    assert _cost(first) == _cost(again)
    assert len(list((cache / "parsed").glob("*.json"))) == 2
    return cache, _cost(first)


def _stacks_file(cache: Path) -> Path:
    (file,) = (cache / "parsed").glob("stacks.toml-*.json")
    return file


HOSTILE: dict[str, Callable[[Path], None]] = {
    "fifo": lambda f: (f.unlink(), os.mkfifo(f)),
    "symlink to another file": lambda f: (f.unlink(), f.symlink_to("/etc/hostname")),
    "damaged bytes": lambda f: f.write_bytes(f.read_bytes()[:-40] + b"\x00" * 40),
    "a flipped digit": lambda f: f.write_bytes(f.read_bytes().replace(b"0.", b"9.", 1)),
    "deep JSON": lambda f: f.write_bytes(hashlib.sha256(DEEP).hexdigest().encode() + b"\n" + DEEP),
    "world-writable folder": lambda f: f.parent.chmod(0o777),
    "world-writable file": lambda f: f.chmod(0o666),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_parsed_tables_hostile_cache_is_ignored_with_a_note(name: str, clean, tmp_path: Path) -> None:
    source, cost = clean
    cache = tmp_path / "cache"
    subprocess.run(["cp", "-a", str(source), str(cache)], check=True)
    HOSTILE[name](_stacks_file(cache))
    code, result, err = _plan(str(cache))
    assert code == 0 and _cost(result) == cost
    assert "note: ignored" in err and "Traceback" not in err


def test_a_damaged_parse_is_rewritten_by_the_next_run(clean, tmp_path: Path) -> None:
    source, cost = clean
    cache = tmp_path / "cache"
    subprocess.run(["cp", "-a", str(source), str(cache)], check=True)
    HOSTILE["damaged bytes"](_stacks_file(cache))
    assert "note: ignored" in _plan(str(cache))[2]
    code, result, err = _plan(str(cache))
    assert code == 0 and _cost(result) == cost and "note:" not in err


def test_a_relative_cache_directory_is_refused_and_nothing_written_there(clean, tmp_path: Path) -> None:
    _, cost = clean
    code, result, err = _plan("relative-cache", cwd=tmp_path)
    assert code == 0 and _cost(result) == cost
    assert "note: cache not used" in err and "relative" in err
    assert err.count("note: cache not used") == 1  # one line, not one per cache family
    assert not (tmp_path / "relative-cache").exists()


def test_xdg_relative_is_refused_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CCOPT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", ".cache-here")
    assert read_cache_json("parsed/x.json") is None
    assert not write_cache_file("parsed/x.json", b"{}")


# --- the price cache: in-process (the table is read on each command) ---


@pytest.fixture
def price_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A refreshed price cache as `prices refresh` writes it (the bundled rows, a checksum)."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    body = bundled_path().read_bytes()
    (cache / "offerings.csv").write_bytes(body)
    rows = body.count(b"\n") - 1
    meta = {"sha256": hashlib.sha256(body).hexdigest(), "rows": rows}
    (cache / "offerings.meta.json").write_text(json.dumps(meta))
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(cache))
    monkeypatch.delenv("CCOPT_OFFLINE", raising=False)
    return cache


def _prices(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`ccopt prices --json`: exit code, where the first row's price came from, stderr."""
    capsys.readouterr()
    try:
        main(["prices", "--json", "--gpu", "H100-80GB"])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, json.loads(out)[0]["price_source"], err


def test_a_valid_price_cache_is_used_without_a_note(price_cache: Path, capsys) -> None:
    code, listing, err = _prices(capsys)
    assert code == 0 and listing == "refreshed" and "note:" not in err


PRICE_HOSTILE: dict[str, Callable[[Path], None]] = {
    "fifo": lambda c: ((c / "offerings.csv").unlink(), os.mkfifo(c / "offerings.csv")),
    "symlink to another file": lambda c: (
        (c / "offerings.csv").rename(c.parent / "elsewhere.csv"),
        (c / "offerings.csv").symlink_to(c.parent / "elsewhere.csv"),
    ),
    "world-writable folder": lambda c: c.chmod(0o777),
    "damaged bytes": lambda c: (c / "offerings.csv").write_bytes(
        (c / "offerings.csv").read_bytes().replace(b",", b";", 3)
    ),
    "deep JSON metadata": lambda c: (c / "offerings.meta.json").write_bytes(DEEP),
    "fifo metadata": lambda c: ((c / "offerings.meta.json").unlink(), os.mkfifo(c / "offerings.meta.json")),
}


@pytest.mark.parametrize("name", sorted(PRICE_HOSTILE))
def test_price_cache_hostile_is_ignored_with_a_note(name: str, price_cache: Path, capsys) -> None:
    PRICE_HOSTILE[name](price_cache)
    code, listing, err = _prices(capsys)
    assert code == 0 and listing == "bundled"
    assert "ignored" in err


def test_relative_price_cache_directory_is_refused(monkeypatch, capsys, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CCOPT_CACHE_DIR", "cache")
    monkeypatch.delenv("CCOPT_OFFLINE", raising=False)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "offerings.csv").write_bytes(b"planted")
    code, listing, err = _prices(capsys)
    assert code == 0 and listing == "bundled"
    assert "note: cache not used" in err and "relative" in err


# --- the parse kept as JSON: the parser's answer, never a different one ---


def test_same_bytes_parse_once_changed_bytes_are_parsed_again(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    assert parsed_toml("t.toml", b"a = 1\n") == {"a": 1}
    assert parsed_toml("t.toml", b"a = 1\n") == {"a": 1}
    assert parsed_toml("t.toml", b"a = 2\n") == {"a": 2}  # other bytes, other file
    kept = sorted((tmp_path / "cache" / "parsed").glob("t.toml-*.json"))
    assert len(kept) == 2
    first = kept[0].read_bytes()
    checksum, _, body = first.partition(b"\n")
    assert hashlib.sha256(body).hexdigest().encode() == checksum and json.loads(body) in ({"a": 1}, {"a": 2})
    assert oct(kept[0].stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "cache" / "parsed").stat().st_mode & 0o777) == "0o700"


def test_a_table_with_dates_is_parsed_and_not_kept(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    value = parsed_toml("d.toml", b"fitted = 2026-12-04\n")
    assert str(value["fitted"]) == "2026-12-04"
    assert not list((tmp_path / "cache").rglob("d.toml-*"))


def test_an_unwritable_cache_still_parses(monkeypatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(blocker / "cache"))  # a folder under a file
    assert parsed_toml("t.toml", b"a = 1\n") == {"a": 1}


def test_refresh_into_a_relative_cache_directory_is_refused(monkeypatch, capsys, tmp_path: Path) -> None:
    """It would write a cache that every later read refuses: bad input, before any download."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CCOPT_CACHE_DIR", "relative-cache")
    with pytest.raises(SystemExit) as exit_info:
        main(["prices", "refresh", "--url", "http://127.0.0.1:9/offerings.csv"])
    assert exit_info.value.code == 2
    assert "relative" in capsys.readouterr().err
    assert not (tmp_path / "relative-cache").exists()
