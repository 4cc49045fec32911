"""The model's memo (optimizer/model/memo.py): answers remembered for the last objects asked
about, compared by identity; a new object, even an equal one, is asked afresh."""

from __future__ import annotations

import pytest

from optimizer.model.memo import remember_last


@pytest.mark.parametrize("n", [1, 2, 3])
def test_answers_are_remembered_for_the_same_objects_only(n: int) -> None:
    calls: list[tuple] = []

    @remember_last(n)
    def f(*args: object) -> float:
        calls.append(args)
        return float(sum(len(a) if isinstance(a, list) else a for a in args))  # type: ignore[arg-type]

    objects = [[1], [1, 2], [1, 2, 3]][:n]  # lists: equal copies are other objects
    assert f(*objects, 4) == f(*objects, 4) == sum(len(o) for o in objects) + 4
    assert len(calls) == 1  # the second call was remembered
    assert f(*objects, 5) == sum(len(o) for o in objects) + 5  # other plain arguments: asked
    assert len(calls) == 2
    for i in range(n):  # an equal copy of any identity argument is a new object: asked again
        fresh = [list(o) if j == i else o for j, o in enumerate(objects)]
        before = len(calls)
        assert f(*fresh, 4) == sum(len(o) for o in objects) + 4
        assert len(calls) == before + 1
        objects = fresh  # and it replaces the remembered ones
        assert f(*objects, 4) == sum(len(o) for o in objects) + 4
        assert len(calls) == before + 1


def test_more_identity_arguments_than_three_are_refused() -> None:
    with pytest.raises(ValueError, match="1, 2 or 3"):
        remember_last(4)
