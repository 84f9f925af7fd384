"""A correction's alignment, difflib (before ADR 65) against Myers' bounded O(ND), on one CPU.

Each case is what the transcript page showed (the stretch's tokens) and
what the person typed, normalised as corrections compare them. The red
team's two-symbol patterns (SPEC §29) at 1,000, 2,000 and 4,000 words, and
realistic edits of natural text (Zipf-drawn words from a vocabulary of
3,000): one word changed in 5,000, every tenth word changed, a few words
inserted and deleted, and a 1,000-word turn typed anew.

Old: ``difflib.SequenceMatcher(autojunk=False).get_opcodes()`` after the
common head and tail are set aside, as ``corrections.realign`` did; it runs
in a child process killed after ``--cap`` seconds (then shown as "> cap").
New: ``transcriber_core.alignment.align`` with the correction's budget
(``MAX_ALIGNMENT_STEPS``): its seconds, its steps, and "refused" when the
budget ran out (the correction is then a 422). Prints one row a case with
the ratio old / new; new is the median of ``--rounds`` runs.

Usage: .venv/bin/python bench/corrections.py [--cap 60] [--rounds 3] [--only two-symbol]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` (which multiprocessing imports).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402 - after the path
import difflib  # noqa: E402
import multiprocessing  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

from transcriber_core.alignment import AlignmentTooCostly, align  # noqa: E402
from transcriber_core.corrections import MAX_ALIGNMENT_STEPS  # noqa: E402

Case = tuple[list[str], list[str]]


def difflib_seconds(a: list[str], b: list[str]) -> float:
    """The seconds ``realign`` took before ADR 65: trim the ends, then difflib's opcodes."""
    began = time.perf_counter()
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(
        None, a[head : len(a) - tail], b[head : len(b) - tail], autojunk=False
    )
    matcher.get_opcodes()
    return time.perf_counter() - began


def _child(a: list[str], b: list[str], answer: multiprocessing.Queue[float]) -> None:
    answer.put(difflib_seconds(a, b))


def old_seconds(case: Case, cap: float) -> float | None:
    """difflib's seconds on ``case`` in a child process; None when it ran past ``cap``."""
    answer: multiprocessing.Queue[float] = multiprocessing.Queue()
    child = multiprocessing.Process(target=_child, args=(*case, answer))
    child.start()
    child.join(cap)
    if child.is_alive():
        child.kill()
        child.join()
        return None
    return answer.get()


def new_run(case: Case) -> tuple[float, int, bool]:
    """Myers' seconds, steps, and whether the budget refused it."""
    began = time.perf_counter()
    try:
        steps, refused = align(*case, budget=MAX_ALIGNMENT_STEPS).steps, False
    except AlignmentTooCostly as stopped:
        steps, refused = stopped.steps, True
    return time.perf_counter() - began, steps, refused


def two_symbol_cases() -> dict[str, Callable[[int], Case]]:
    """The red team's patterns: what was shown, what was typed, at ``n`` words."""
    return {
        "a… → a b…": lambda n: (["a"] * n, ["a", "b"] * (n // 2)),
        "a b… → a…": lambda n: (["a", "b"] * (n // 2), ["a"] * n),
        "a b… → a a b…": lambda n: (["a", "b"] * (n // 2), (["a", "a", "b"] * n)[:n]),
        "a b… → b a…": lambda n: (["a", "b"] * (n // 2), ["b", "a"] * (n // 2)),
    }


def natural(n: int, rng: random.Random) -> list[str]:
    """``n`` words drawn by a Zipf law from 3,000 made-up ones."""
    vocabulary = [f"w{i}" for i in range(3_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return rng.choices(vocabulary, weights, k=n)


def realistic_cases(rng: random.Random) -> dict[str, Case]:
    """Edits a person makes, on natural text."""
    long = natural(5_000, rng)
    one = list(long)
    one[2_500] = "changed"
    tenth = [rng.choice(long) if i % 10 == 5 else w for i, w in enumerate(long)]
    edited = list(long[:2_000])
    for at in sorted(rng.sample(range(2_000), 40), reverse=True):
        if at % 2:
            del edited[at]
        else:
            edited.insert(at, rng.choice(long))
    return {
        "5,000 words, one changed": (long, one),
        "5,000 words, every 10th changed": (long, tenth),
        "2,000 words, 20 in + 20 out": (long[:2_000], edited),
        "1,000 words typed anew": (long[:1_000], natural(1_000, rng)),
    }


def row(name: str, case: Case, cap: float, rounds: int) -> None:
    """Time one case both ways and print its row."""
    runs = [new_run(case) for _ in range(rounds)]
    new = statistics.median(seconds for seconds, _, _ in runs)
    _, steps, refused = runs[0]
    old = old_seconds(case, cap)
    shown = f"> {cap:.0f} s" if old is None else f"{old:.3f} s"
    ratio = f"> {cap / new:,.0f}x" if old is None else f"{old / new:,.1f}x"
    outcome = "refused (422)" if refused else "aligned"
    print(
        f"| {name} | {len(case[0]):,} → {len(case[1]):,} | {shown} | {new:.3f} s "
        f"| {steps:,} | {outcome} | {ratio} |",
        flush=True,
    )


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=60.0, help="seconds difflib may take")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=["two-symbol", "realistic"])
    options = parser.parse_args()
    print(f"budget {MAX_ALIGNMENT_STEPS:,} steps")
    print("| case | words shown → typed | difflib | Myers | steps | outcome | old / new |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    if options.only != "realistic":
        for name, make in two_symbol_cases().items():
            for words in (1_000, 2_000, 4_000):
                row(name, make(words), options.cap, options.rounds)
    if options.only != "two-symbol":
        for name, case in realistic_cases(random.Random(7)).items():
            row(name, case, options.cap, options.rounds)


if __name__ == "__main__":
    main()
