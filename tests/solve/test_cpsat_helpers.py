"""The shared CP-SAT helpers: the one core shrinker (deletion filter) and the one tie-break
style (stated key -> ranks -> last level of a lexicographic objective), checked by hand."""

from __future__ import annotations

from ortools.sat.python import cp_model

from optimizer.solve.cpsat.core import shrink_core
from optimizer.solve.cpsat.lexicographic import INT_LIMIT, one_hot_key, solve_lexicographic, tie_ranks
from optimizer.solve.cpsat.solver import solve


def test_deletion_filter_keeps_only_the_needed_members() -> None:
    # the conflict needs b and d together: a and c go, in order
    asked: list[list[str]] = []

    def conflicts(subset: list[str]) -> bool:
        asked.append(subset)
        return {"b", "d"} <= set(subset)

    assert shrink_core(["a", "b", "c", "d"], conflicts) == ["b", "d"]
    # one check per member: without a (drop), without b (keep), without c (drop), without d (keep)
    assert asked == [["b", "c", "d"], ["c", "d"], ["b", "d"], ["b"]]


def test_unknown_checks_keep_the_member_or_give_up() -> None:
    def conflicts(subset: list[str]) -> bool | None:
        return None if "a" not in subset else {"a", "b"} <= set(subset)

    assert shrink_core(["a", "b", "c"], conflicts) == ["a", "b"]  # unknown without a: a kept
    assert shrink_core(["a", "b", "c"], conflicts, unknown="fail") is None


def test_a_single_member_is_not_checked() -> None:
    assert shrink_core(["only"], lambda subset: (_ for _ in ()).throw(AssertionError)) == ["only"]


def test_tie_ranks_follow_the_key_and_keep_input_order_on_equal_keys() -> None:
    # sorted: "a" (index 1), "a" (index 3), "b" (0), "c" (2)
    assert tie_ranks(["b", "a", "c", "a"], lambda s: s) == [3, 1, 4, 2]


def test_one_hot_key_orders_rows_lexicographically() -> None:
    # rows (1, 5, 2), (1, 3, 1), (0, 9, 3): level 2 max 9 -> weight 10: 15, 13, 9; level 3 max 3
    # -> weight 4: 62, 53, 39 (row 3 < row 2 < row 1, as (0, 9, 3) < (1, 3, 1) < (1, 5, 2))
    assert one_hot_key([[1, 1, 0], [5, 3, 9], [2, 1, 3]]) == [62, 53, 39]
    assert one_hot_key([[2**61, 2**61], [1, 1]]) is None  # (2^62 + 1) × 2 ≥ INT_LIMIT
    assert INT_LIMIT == 2**62


def test_staged_and_folded_objectives_pick_the_same_row() -> None:
    cost, rank = [5, 3, 3], [1, 3, 2]  # rows 2 and 3 tie on cost; row 3 ranks first

    def pick(folded: bool) -> int:
        m = cp_model.CpModel()
        x = [m.new_bool_var(f"x{i}") for i in range(3)]
        m.add_exactly_one(x)
        if folded:
            key = one_hot_key([cost, rank])
            assert key is not None
            m.minimize(cp_model.LinearExpr.weighted_sum(x, key))
            last = solve(m)
        else:
            levels = [cp_model.LinearExpr.weighted_sum(x, v) for v in (cost, rank)]
            _, last = solve_lexicographic(m, levels, x, None)
        return next(i for i, xi in enumerate(x) if last.solver.boolean_value(xi))

    assert pick(True) == pick(False) == 2
