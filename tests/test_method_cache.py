"""Dataclass methods compiled once and kept (optimizer/method_cache.py): a class defined through
the kept table behaves exactly as one compiled as usual, the table is read back on the next
run, and a table that is not the user's own, damaged or from another Python is ignored."""

from __future__ import annotations

import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer import method_cache


def _define(table: method_cache._Table | None, monkeypatch: pytest.MonkeyPatch) -> type:
    """A frozen dataclass with a default, a default factory and a post-init check, defined
    through `table` (None: as Python does it)."""
    if table is not None:
        monkeypatch.setattr(dataclasses, "exec", method_cache._BoundExec(table), raising=False)
    else:
        monkeypatch.delattr(dataclasses, "exec", raising=False)

    @dataclasses.dataclass(frozen=True)
    class Shard:
        gpus: int
        name: str = "h100"
        tags: list[str] = dataclasses.field(default_factory=list, hash=False)

        def __post_init__(self) -> None:
            if self.gpus < 1:
                raise ValueError("gpus < 1")

    monkeypatch.delattr(dataclasses, "exec", raising=False)
    return Shard


def _behaviour(cls: type) -> tuple:
    a, b = cls(8), cls(8, "h100", [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.gpus = 4  # type: ignore[misc]
    with pytest.raises(ValueError, match="gpus < 1"):
        cls(0)
    return (
        a == b,
        hash(cls(2, "a100")) == hash(cls(2, "a100")),
        repr(a),
        a.tags is not cls(8).tags,
        str(inspect.signature(cls)),
        # the generated methods' annotations are the fields' types (here the strings this
        # module's `from __future__ import annotations` makes of them), as the dataclasses
        # module compiles them, not the names of its locals ('_type_gpus')
        dict(cls.__init__.__annotations__),
    )


def test_a_class_from_the_table_behaves_as_one_compiled_as_usual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usual = _behaviour(_define(None, monkeypatch))
    table = method_cache._Table(tmp_path / "t.marshal")
    first = _behaviour(_define(table, monkeypatch))  # compiled, added to the table
    assert table.added and not table.known
    table.save()
    again = method_cache._Table(tmp_path / "t.marshal")  # the next run reads it
    assert set(again.known) == set(table.known) and not again.added
    second = _behaviour(_define(again, monkeypatch))
    assert not again.added  # nothing compiled: every method came from the table
    assert usual == first == second
    assert usual[3] and "gpus=8, name='h100', tags=[]" in usual[2]
    assert usual[5] == {"gpus": "int", "name": "str", "tags": "list[str]", "return": None}


def test_the_kept_table_is_private_to_the_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "methods" / "t.marshal"
    table = method_cache._Table(path)
    _define(table, monkeypatch)
    table.save()
    assert (path.stat().st_mode & 0o777) == 0o600
    assert method_cache._read(path)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_table_others_may_write_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.marshal"
    table = method_cache._Table(path)
    _define(table, monkeypatch)
    table.save()
    os.chmod(path, 0o620)  # group-writable: someone else could have planted code in it
    assert method_cache._read(path) == {}
    os.chmod(path, 0o602)
    assert method_cache._read(path) == {}


@pytest.mark.parametrize(
    "content",
    [
        b"",  # empty
        b"\x00\x01\x02garbage",  # not ours
        b"XXXX" + marshal.dumps({}),  # another Python's magic number
        method_cache.MAGIC + b"\xff\xfe not marshal",  # damaged
        method_cache.MAGIC + marshal.dumps({b"k": "not code"}),  # not a table of code
        method_cache.MAGIC + marshal.dumps([1, 2]),
    ],
)
def test_a_damaged_or_foreign_table_is_ignored_and_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    path = tmp_path / "t.marshal"
    path.write_bytes(content)
    os.chmod(path, 0o600)
    table = method_cache._Table(path)
    assert table.known == {}
    usual = _behaviour(_define(None, monkeypatch))
    assert _behaviour(_define(table, monkeypatch)) == usual  # compiled as usual
    table.save()
    assert method_cache._read(path)  # replaced by a good table


def test_an_unwritable_cache_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    table = method_cache._Table(blocker / "methods" / "t.marshal")
    usual = _behaviour(_define(None, monkeypatch))
    assert _behaviour(_define(table, monkeypatch)) == usual
    table.save()  # cannot create the folder: silently nothing


_RUN = """
import dataclasses, sys
from optimizer import method_cache
method_cache.install()
method_cache.install()  # idempotent
table = dataclasses.exec.table
@dataclasses.dataclass(frozen=True)
class Probe:
    x: int
    y: float = 1.5
assert Probe(2) == Probe(2, 1.5) and Probe(2).y == 1.5
print(len(table.known), len(table.added))
"""


def test_the_entry_points_table_is_written_once_then_read(tmp_path: Path) -> None:
    env = {**os.environ, "CCOPT_CACHE_DIR": str(tmp_path / "cache")}

    def run() -> tuple[int, int]:
        done = subprocess.run(
            [sys.executable, "-c", _RUN], capture_output=True, text=True, env=env, check=True
        )
        known, added = done.stdout.split()
        return int(known), int(added)

    first = run()
    assert first[0] == 0 and first[1] > 0  # nothing kept yet: compiled, then saved at exit
    assert method_cache.table_path().name.endswith(f"{sys.implementation.cache_tag}.marshal")
    second = run()
    assert second == (first[1], 0)  # all read back, nothing compiled


def test_a_table_grown_past_its_limit_keeps_only_the_saving_runs_methods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.marshal"
    stale = {bytes([i % 256, i // 256]) * 16: compile("x = 1", "<string>", "exec") for i in range(30)}
    path.write_bytes(method_cache.MAGIC + marshal.dumps(stale))
    os.chmod(path, 0o600)
    monkeypatch.setattr(method_cache, "MAX_METHODS", 10)
    table = method_cache._Table(path)
    assert len(table.known) == 30
    _define(table, monkeypatch)  # compiles this run's methods (a few)
    used = set(table.added)
    table.save()
    assert set(method_cache._read(path)) == used  # the 30 stale ones dropped
    monkeypatch.setattr(method_cache, "MAX_METHODS", 5000)
    again = method_cache._Table(path)
    _define(again, monkeypatch)
    assert not again.added and again.used == used


def test_without_a_home_folder_the_cli_compiles_as_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(method_cache, "table_path", no_home)
    monkeypatch.delattr(dataclasses, "exec", raising=False)
    method_cache.install()
    assert not hasattr(dataclasses, "exec")  # nothing installed, no error
