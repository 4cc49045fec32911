"""Bundled data parsed once per content (optimizer/user_cache.py): a changed file is parsed
again, a damaged or unwritable cache falls back to parsing, the answer is the parser's."""

from __future__ import annotations

import pytest

from optimizer.user_cache import parsed, parsed_toml, user_cache_dir


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "parsed"


def _counting():
    calls: list[bytes] = []

    def parse(data: bytes) -> dict[str, str]:
        calls.append(data)
        return {"text": data.decode()}

    return parse, calls


def test_same_bytes_parse_once_changed_bytes_again(cache) -> None:
    parse, calls = _counting()
    assert parsed("t.toml", b"a", parse) == {"text": "a"}
    assert parsed("t.toml", b"a", parse) == {"text": "a"}
    assert calls == [b"a"]  # the second came from the pickle
    assert parsed("t.toml", b"b", parse) == {"text": "b"}  # new content: never the old parse
    assert calls == [b"a", b"b"]
    assert len(list(cache.glob("t.toml-*.pickle"))) == 2


def test_damaged_pickle_falls_back_to_parsing(cache) -> None:
    parse, calls = _counting()
    parsed("t.toml", b"a", parse)
    (pickle_file,) = cache.glob("t.toml-*.pickle")
    pickle_file.write_bytes(b"\x80\x05not a pickle")
    assert parsed("t.toml", b"a", parse) == {"text": "a"}
    assert len(calls) == 2


class _Planted:
    """What a planted pickle would build: any importable class (here, one that says it ran)."""

    ran = False

    def __reduce__(self):
        return (_mark_ran, ())


def _mark_ran() -> dict:
    _Planted.ran = True
    return {"text": "planted"}


def test_planted_pickle_runs_no_code_and_is_parsed_again(cache) -> None:
    import pickle

    parse, calls = _counting()
    parsed("t.toml", b"a", parse)
    (pickle_file,) = cache.glob("t.toml-*.pickle")
    pickle_file.write_bytes(pickle.dumps(_Planted()))
    assert parsed("t.toml", b"a", parse) == {"text": "a"}
    assert not _Planted.ran and len(calls) == 2


def test_toml_datetimes_come_back_from_the_cache(cache) -> None:
    data = b"fitted = 2026-12-04\nat = 2026-12-04T01:02:03Z\n"
    first = parsed_toml("d.toml", data)
    again = parsed_toml("d.toml", data)
    assert again == first and str(again["fitted"]) == "2026-12-04"


def test_unwritable_cache_still_parses(monkeypatch, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(blocker))  # a file: no folder can be made in it
    parse, calls = _counting()
    assert parsed("t.toml", b"a", parse) == {"text": "a"}
    assert parsed("t.toml", b"a", parse) == {"text": "a"}
    assert len(calls) == 2


def test_toml_from_the_cache_equals_a_fresh_parse(cache) -> None:
    data = b'[generic]\nx = 1.5\nnames = ["a", "b"]\n'
    first = parsed_toml("s.toml", data)
    assert parsed_toml("s.toml", data) == first == {"generic": {"x": 1.5, "names": ["a", "b"]}}


def test_cache_dir_order(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("CCOPT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache_dir() == tmp_path / "ccopt"
    monkeypatch.setenv("CCOPT_CACHE_DIR", str(tmp_path / "mine"))
    assert user_cache_dir() == tmp_path / "mine"
