"""Myers' alignment with bounded work (ADR 65): a longest common subsequence, in counted steps."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transcriber_core.alignment import SLICE_STEPS, AlignmentTooCostly, align, aligning


def _period_two_retyped_as_period_three(n: int) -> tuple[list[str], list[str]]:
    return ["a", "b"] * (n // 2), (["a", "a", "b"] * n)[:n]


def _halves_swapped(n: int) -> tuple[list[str], list[str]]:
    half = n // 2
    return ["a"] * half + ["b"] * half, ["b"] * half + ["a"] * half


#: The red team's two-symbol patterns (SPEC §29): what the page showed, what was typed.
PATTERNS: dict[str, Callable[[int], tuple[list[str], list[str]]]] = {
    "one token retyped as two alternating": lambda n: (["a"] * n, ["a", "b"] * (n // 2)),
    "two alternating retyped as one": lambda n: (["a", "b"] * (n // 2), ["a"] * n),
    "period two retyped as period three": _period_two_retyped_as_period_three,
    "halves swapped": _halves_swapped,
}
#: The most Python lines the alignment runs per step of its count, with room to spare.
LINES_PER_STEP = 12


def _longest_common(a: list[str], b: list[str]) -> int:
    """The length of the longest common subsequence, by the textbook table."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in reversed(range(len(a))):
        for j in reversed(range(len(b))):
            if a[i] == b[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


class TooManyLinesError(Exception):
    """The traced code ran past its allowance of lines."""


@contextmanager
def lines_counted(allowance: int) -> Iterator[list[int]]:
    """Count the Python lines run in the block, in any module; raise past ``allowance``."""
    count = [0]

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
            if count[0] > allowance:
                raise TooManyLinesError(count[0])
        return trace

    previous = sys.gettrace()  # a coverage tracer, say: given back after
    sys.settrace(trace)
    try:
        yield count
    finally:
        sys.settrace(previous)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["ab", "abc", "abcdefgh"]).flatmap(
        lambda letters: st.tuples(
            st.lists(st.sampled_from(letters), max_size=14),
            st.lists(st.sampled_from(letters), max_size=14),
        )
    )
)
def test_the_alignment_is_a_longest_common_subsequence(pair: tuple[list[str], list[str]]) -> None:
    """The opcodes cover both sequences in order and their equal runs are a longest common one."""
    a, b = pair
    found = align(a, b, budget=10**9)
    i = j = same = 0
    for tag, i1, i2, j1, j2 in found.opcodes:
        assert (i1, j1) == (i, j)
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
            same += i2 - i1
        else:
            assert (i2 - i1, j2 - j1) != (0, 0)
        i, j = i2, j2
    assert (i, j) == (len(a), len(b))
    assert same == _longest_common(a, b)
    assert found.distance == len(a) + len(b) - 2 * same


def test_the_steps_are_the_tokens_compared_and_the_diagonals_visited() -> None:
    """One token changed in the middle: head and tail compared, then two rounds of search."""
    found = align(list("abcde"), list("abxde"), budget=100)
    assert found.opcodes == (
        ("equal", 0, 2, 0, 2),
        ("replace", 2, 3, 2, 3),
        ("equal", 3, 5, 3, 5),
    )
    # 2 + 2 compared at the ends, 1 counted to start, 2 middle tokens seen; c and x
    # share nothing, so the search has nothing to do.
    assert found.steps == 7


@pytest.mark.parametrize("words", [1_000, 2_000, 4_000])
@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_two_symbol_patterns_stay_within_the_budget(pattern: str, words: int) -> None:
    """The red team's patterns are aligned or refused within the budget, counted in steps."""
    a, b = PATTERNS[pattern](words)
    budget = 1_000_000
    try:
        steps = align(a, b, budget=budget).steps
    except AlignmentTooCostly as refused:
        steps = refused.steps
    # Refused, it stopped within a slice (and a diagonal's run) past the budget.
    assert steps <= budget + SLICE_STEPS + len(a) + len(b)


def test_the_budget_bounds_the_lines_the_interpreter_runs() -> None:
    """Counted by a tracer, not by the alignment: a refused search ran a bounded number of lines."""
    a, b = PATTERNS["one token retyped as two alternating"](2_000)
    budget = 20_000
    allowance = LINES_PER_STEP * (budget + SLICE_STEPS) + 20 * (len(a) + len(b))
    with lines_counted(allowance) as lines, pytest.raises(AlignmentTooCostly):
        align(a, b, budget=budget)
    assert lines[0] > budget  # the tracer did see the search


def test_the_work_comes_in_slices() -> None:
    """A long search yields between slices of about ``slice_steps`` steps, then returns."""
    a, b = PATTERNS["one token retyped as two alternating"](1_000)
    work = aligning(a, b, budget=10**9, slice_steps=1_000)
    slices = 0
    while True:
        try:
            next(work)
        except StopIteration as done:
            steps = done.value.steps
            break
        slices += 1
    # Every slice did its thousand steps; none ran on far past them (snakes here are short).
    assert steps // 2_000 <= slices <= steps // 1_000
