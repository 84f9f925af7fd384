"""Two token sequences lined up with bounded work: Myers' O(ND) difference (ADR 65).

A correction lines the words a person saw up with the words they typed
(``corrections.realign``). ``difflib.SequenceMatcher`` did it before, and
its cost depends on how often tokens repeat, not on how much changed: two
alternating tokens made a 2,000-word stretch take 26 s (SPEC §29). Myers'
greedy algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986)
costs ``O((N + M) · D)`` for ``D`` tokens deleted or inserted and finds the
longest common subsequence, so a small edit of a long stretch is cheap
whatever its tokens.

The work is counted in **steps**: a token compared (the common head and
tail, each match along a diagonal) or a diagonal visited. Past ``budget``
steps the alignment stops with ``AlignmentTooCostly``; the bound is on what
the machine does, not on how fast it does it. ``aligning`` is a generator
that yields every ``slice_steps`` steps or so, so a caller on an event loop
can let other work run between slices and stop when nobody waits for the
answer any more; ``align`` (``finished``) runs it to the end.

The answer is ``difflib``'s opcodes (``equal``, ``replace``, ``delete``,
``insert``), so a caller that read them keeps reading them. Pure, no I/O.
"""

from __future__ import annotations

from array import array
from collections.abc import Generator, Hashable, Sequence
from typing import Literal, TypeVar

import attrs

#: What a stretch of the old sequence became: ``(tag, i1, i2, j1, j2)`` as difflib's opcodes.
Opcode = tuple[Literal["equal", "replace", "delete", "insert"], int, int, int, int]
#: A run of equal tokens: ``a[i : i + size] == b[j : j + size]``.
Block = tuple[int, int, int]

#: Steps between two slices of ``aligning`` unless told otherwise.
SLICE_STEPS = 5_000

_T = TypeVar("_T")


class AlignmentTooCostly(Exception):  # noqa: N818 - the condition, as the core's errors are named
    """The sequences differ too much to be lined up within the budget."""

    def __init__(self, steps: int, budget: int) -> None:
        super().__init__(f"alignment stopped after {steps} steps (budget {budget})")
        #: The steps done when it stopped: past the budget by at most a slice and a diagonal's run.
        self.steps = steps
        #: The budget it was given.
        self.budget = budget


@attrs.frozen(kw_only=True)
class Alignment:
    """How ``b`` lines up with ``a``, and what it cost."""

    #: difflib's opcodes, in order, covering both sequences.
    opcodes: tuple[Opcode, ...]
    #: Tokens deleted plus tokens inserted (Myers' ``D``).
    distance: int
    #: The work done, in steps (tokens compared and diagonals visited).
    steps: int


def finished(work: Generator[None, None, _T]) -> _T:
    """What a sliced piece of work returns, run to its end in one go."""
    while True:
        try:
            next(work)
        except StopIteration as done:
            result: _T = done.value
            return result


def align(a: Sequence[Hashable], b: Sequence[Hashable], *, budget: int) -> Alignment:
    """``aligning`` run to its end in one go; ``AlignmentTooCostly`` past ``budget`` steps."""
    return finished(aligning(a, b, budget=budget))


def aligning(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    budget: int,
    slice_steps: int = SLICE_STEPS,
) -> Generator[None, None, Alignment]:
    """Line ``b`` up with ``a``, yielding every ``slice_steps`` steps or so; returns the result.

    Raises ``AlignmentTooCostly`` (from the generator) once the steps pass
    ``budget``. Tokens compare by equality; they are numbered first, so the
    comparisons inside are of small integers.
    """
    numbers: dict[Hashable, int] = {}
    left = [numbers.setdefault(token, len(numbers)) for token in a]
    right = [numbers.setdefault(token, len(numbers)) for token in b]
    n, m = len(left), len(right)
    head = 0
    while head < min(n, m) and left[head] == right[head]:
        head += 1
    tail = 0
    while tail < min(n, m) - head and left[n - 1 - tail] == right[m - 1 - tail]:
        tail += 1
    steps = head + tail + 1
    if steps > budget:
        raise AlignmentTooCostly(steps, budget)
    middle_a, middle_b = left[head : n - tail], right[head : m - tail]
    # A token the other side lacks is deleted or inserted whatever the path: the
    # search runs without them (GNU diff's "discard"), so a stretch typed anew
    # costs as much as the tokens both sides share.
    shared = set(middle_a) & set(middle_b)
    at_a = [i for i, token in enumerate(middle_a, start=head) if token in shared]
    at_b = [j for j, token in enumerate(middle_b, start=head) if token in shared]
    steps += len(middle_a) + len(middle_b)
    found, steps = yield from _myers(
        [left[i] for i in at_a], [right[j] for j in at_b], steps, budget, slice_steps
    )
    blocks: list[Block] = [(0, 0, head)] if head else []
    for i, j, size in found:
        for step in range(size):
            x, y = at_a[i + step], at_b[j + step]
            last_i, last_j, run = blocks[-1] if blocks else (-1, -1, 0)
            if (x, y) == (last_i + run, last_j + run):
                blocks[-1] = (last_i, last_j, run + 1)
            else:
                blocks.append((x, y, 1))
    if tail:
        blocks.append((n - tail, m - tail, tail))
    distance = n + m - 2 * sum(size for _, _, size in blocks)
    return Alignment(opcodes=tuple(_opcodes(blocks, n, m)), distance=distance, steps=steps)


def _myers(
    a: list[int], b: list[int], steps: int, budget: int, slice_steps: int
) -> Generator[None, None, tuple[list[Block], int]]:
    """Myers' greedy forward search; the matching blocks and the steps in all."""
    n, m = len(a), len(b)
    if not n or not m:
        return [], steps
    # reach[k] is how far along a the furthest path on diagonal k = x - y got (k < 0 from
    # the list's end); the rounds of one parity only read those of the other, so one list
    # serves them all.
    reach = [0] * (2 * (n + m) + 3)
    # rounds[d][(k + d) // 2] is reach[k] after round d (k of d's parity): the way back.
    rounds: list[array[int]] = []
    sliced = steps
    for d in range(n + m + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and reach[k - 1] < reach[k + 1]):
                x = run = reach[k + 1]
            else:
                x = run = reach[k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            reach[k] = x
            steps += 1 + x - run
            if x >= n and y >= m:
                rounds.append(array("l"))  # the way back never reads the last round
                return _way_back(rounds, n, m), steps + d
            if steps - sliced >= slice_steps:
                if steps > budget:
                    raise AlignmentTooCostly(steps, budget)
                sliced = steps
                yield
        if steps > budget:
            raise AlignmentTooCostly(steps, budget)
        rounds.append(array("l", reach[-d::2] + reach[d % 2 : d + 1 : 2] if d else reach[:1]))
    raise AssertionError("a path of n + m rounds always reaches the end")  # pragma: no cover


def _way_back(rounds: list[array[int]], n: int, m: int) -> list[Block]:
    """The matching blocks along the path that reached ``(n, m)``, from its rounds."""
    blocks: list[Block] = []
    x, y = n, m
    for d in range(len(rounds) - 1, 0, -1):
        k = x - y
        # Round d - 1 holds the diagonals -(d - 1), -(d - 3), ..., d - 1, in that order.
        before = rounds[d - 1]
        if k == -d or (k != d and before[(k + d - 2) // 2] < before[(k + d) // 2]):
            came_from, came_x = k + 1, before[(k + d) // 2]
            start_x = came_x
        else:
            came_from, came_x = k - 1, before[(k + d - 2) // 2]
            start_x = came_x + 1
        if x > start_x:
            blocks.append((start_x, start_x - k, x - start_x))
        x, y = came_x, came_x - came_from
    if x:
        blocks.append((0, 0, x))
    blocks.reverse()
    return blocks


def _opcodes(blocks: Sequence[Block], n: int, m: int) -> list[Opcode]:
    """difflib's opcodes from increasing matching blocks (its ``get_opcodes``, over ours)."""
    opcodes: list[Opcode] = []
    i = j = 0
    for block_i, block_j, size in (*blocks, (n, m, 0)):
        if i < block_i and j < block_j:
            opcodes.append(("replace", i, block_i, j, block_j))
        elif i < block_i:
            opcodes.append(("delete", i, block_i, j, block_j))
        elif j < block_j:
            opcodes.append(("insert", i, block_i, j, block_j))
        if size:
            opcodes.append(("equal", block_i, block_i + size, block_j, block_j + size))
        i, j = block_i + size, block_j + size
    return opcodes
