"""Cost of the job row mapping (``job_from_row``, ``job_params``) of both SQL adapters.

Prints the best time per call of each, for a job without words (the queue's
hot path: acquire and save before recognition) and with ``--words`` words.
With ``--against DIR`` (the ``src/transcriber_adapters`` of another checkout,
e.g. ``git archive REV src | tar -x -C /tmp/rev``) it loads that tree's
``sqlite/statements.py`` and ``postgres/statements.py`` beside this one's and
times both in turn in one process, so machine load hits them alike.

Usage: .venv/bin/python bench/row_mapping.py [--words 20] [--rounds 30] [--against DIR]
"""

# ruff: noqa: E402 - the imports must follow the sys.path fix below

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that psycopg imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import importlib.util
import json
import timeit
from collections.abc import Callable
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from transcriber_adapters.postgres import statements as postgres
from transcriber_adapters.sqlite import statements as sqlite
from transcriber_core.entities import Job, Origin, State, Word

NOW = datetime(2026, 12, 1, tzinfo=UTC)
CALLS = 5000


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cases(sq: Any, pg: Any, job: Job) -> dict[str, Callable[[], object]]:
    """The four calls to time, on the statements modules ``sq`` and ``pg``.

    A statements module exports its row mapping as ``ROWS``; an older
    checkout (``--against``) exported the bound methods themselves.
    """
    sq, pg = getattr(sq, "ROWS", sq), getattr(pg, "ROWS", pg)
    # A row as selected: the written columns, then the progress and status message (none)
    # and the correction's version and originals (never corrected), which an older
    # checkout's mapping ignores as trailing columns.
    no_progress = (None, None, None, None, 0, None, None)
    sqlite_row = (*sq.job_params(job).values(), *no_progress)
    pg_params = pg.job_params(job)
    pg_params["words"] = json.loads(pg_params["words"])  # psycopg reads jsonb as a list
    pg_row = (*pg_params.values(), *no_progress)
    assert sq.job_from_row(sqlite_row) == job
    assert pg.job_from_row(pg_row) == job
    return {
        "sqlite job_from_row": lambda: sq.job_from_row(sqlite_row),
        "postgres job_from_row": lambda: pg.job_from_row(pg_row),
        "sqlite job_params": lambda: sq.job_params(job),
        "postgres job_params": lambda: pg.job_params(job),
    }


def measure(words: int, rounds: int, against: Path | None) -> None:
    """Print microseconds per call, best of ``rounds``; beside ``against``'s when given."""
    spoken = tuple(Word(text=f"w{i}", start=i * 0.5, end=i * 0.5 + 0.4) for i in range(words))
    job = Job(
        id="job-1",
        state=State.RECOGNIZE,
        origin=Origin.http(),
        created=NOW,
        updated=NOW,
        acquire_time=NOW,
        acquisition_id="lease-1",
        words=spoken,
        text="hello" if spoken else None,
    )
    trees = {"this tree": _cases(sqlite, postgres, job)}
    if against is not None:
        trees["against"] = _cases(
            _load("against_sqlite", against / "sqlite" / "statements.py"),
            _load("against_postgres", against / "postgres" / "statements.py"),
            job,
        )
    best: dict[tuple[str, str], float] = {}
    for _ in range(rounds):
        for tree, cases in trees.items():
            for name, call in cases.items():
                took = timeit.timeit(call, number=CALLS) / CALLS
                best[tree, name] = min(best.get((tree, name), took), took)
    print(f"{words} words a job, best of {rounds} rounds of {CALLS} calls")
    for name in trees["this tree"]:
        here = best["this tree", name] * 1e6
        line = f"  {name}: {here:.2f} us"
        if against is not None:
            there = best["against", name] * 1e6
            line += f" (against: {there:.2f} us, {(here / there - 1) * 100:+.0f}%)"
        print(line)


def main() -> None:
    """Parse the options and print the figures without words and with ``--words``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    for words in (0, args.words):
        measure(words, args.rounds, args.against)


if __name__ == "__main__":
    main()
