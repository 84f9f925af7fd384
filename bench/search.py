"""Full-text search over 10,000 transcripts (issue 23, ADR 58): p50/p95 on SQLite and PostgreSQL.

Builds one person's 10,000 done transcripts (the worst case: every one is a
candidate of that person's search) plus ``--others`` of other people's,
through the repository's own ``create`` (so SQLite's triggers and
PostgreSQL's generated column do the indexing), each with timed words.
Lengths are log-normal around ``--median`` words (a voice note to an
interview, at most 4,000); the words are drawn by a Zipf law from a mixed
vocabulary: common English and Russian words first, then a long tail of
made-up ones, so some words are in nearly every transcript and most in few.

Then ``--queries`` searches of each kind, one at a time, timed around
``repo.search(owner, query, limit=LIMIT)`` (the index, the rows read, the core's
hits): a common word, a mid-frequency word, a rare word, two words, a
4-letter prefix, and a word in no transcript; p50 and p95 per kind and over
all. PostgreSQL runs on a database made and dropped for the run.

Usage: .venv/bin/python bench/search.py [--transcripts 10000] [--queries 40] [--median 250]
       [--others 2000] [--url postgresql://postgres@127.0.0.1:5432/postgres] [--only sqlite]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/queue.py would shadow the stdlib ``queue``.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402 - after the path
import asyncio  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import AsyncIterator, Callable  # noqa: E402
from contextlib import AbstractAsyncContextManager, asynccontextmanager  # noqa: E402
from datetime import UTC, datetime, timedelta  # noqa: E402
from urllib.parse import urlsplit, urlunsplit  # noqa: E402

import psycopg  # noqa: E402

from transcriber_adapters.postgres import Database, PostgresJobRepository  # noqa: E402
from transcriber_adapters.sqlite import SqliteJobRepository  # noqa: E402
from transcriber_core.clocks import ManualClock  # noqa: E402
from transcriber_core.entities import Job, Origin, State, Word  # noqa: E402
from transcriber_core.ports import JobRepository  # noqa: E402
from transcriber_core.search import SearchQuery  # noqa: E402

#: The searching person, and the others whose transcripts must never come up.
PERSON = f"person:{'a' * 57}"
OTHER = f"person:{'b' * 57}"
COMMON = (  # noqa: SIM905 - a word list reads best as words
    "the and to of a in that is it you we was for on this they with have be at but not so"
    " what about there one all do just like know think can people them he she are if our"
    " и в не что на я с он как это по но все она так его только мы было вот мне уже"
    " когда если ещё нет они был бы меня сказал можно очень там чтобы"
).split()
SYLLABLES = (  # noqa: SIM905 - as COMMON
    "ka ri to mo na ly se ve pa dor lin tra bel gor vin mar pro sta len ко ра ми ту ле но"
    " ва сто при дра бер мор ли"
).split()
T0 = datetime(2026, 1, 1, tzinfo=UTC)
#: Hits asked for: one page of the workspace's search (``web/workspace/search.py``).
LIMIT = 20


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """The common words, then made-up ones of 2 to 4 syllables, ``size`` in all, no repeats."""
    words = list(dict.fromkeys(COMMON))
    seen = set(words)
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def transcripts(
    rng: random.Random, count: int, median: int, vocab: list[str]
) -> list[tuple[str, tuple[Word, ...]]]:
    """``count`` transcripts: Zipf-drawn words, sentences with a capital and a full stop."""
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    cumulative = list(_accumulate(weights))
    made = []
    for _ in range(count):
        length = min(4000, max(20, round(rng.lognormvariate(math.log(median), 0.9))))
        drawn = rng.choices(vocab, cum_weights=cumulative, k=length)
        tokens = []
        for index, word in enumerate(drawn):
            token = word.capitalize() if index % 12 == 0 else word
            if index % 12 == 11 or index == length - 1:
                token += "."
            tokens.append(token)
        words = tuple(
            Word(text=token, start=round(n * 0.4, 2), end=round(n * 0.4 + 0.3, 2))
            for n, token in enumerate(tokens)
        )
        made.append((" ".join(tokens), words))
    return made


def _accumulate(weights: list[float]) -> list[float]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return out


async def fill(
    repo: JobRepository, clock: ManualClock, made: list[tuple[str, tuple[Word, ...]]], others: int
) -> float:
    """Store the person's transcripts, then ``others`` of another person's; seconds taken."""
    started = time.perf_counter()
    for n, (text, words) in enumerate(made):
        owner = PERSON if n >= others else OTHER
        created = T0 + timedelta(seconds=n)
        clock.set(created)
        job = Job(
            id=f"bench-{n:06d}",
            state=State.DONE,
            origin=Origin.http(),
            text=text,
            words=words,
            owner=owner,
            duration=words[-1].end,
            created=created,
            updated=created,
            ended=created,
        )
        await repo.create(job)
    return time.perf_counter() - started


def query_kinds(
    rng: random.Random, vocab: list[str], counts: Counter[str], queries: int
) -> dict[str, list[str]]:
    """``queries`` queries of each kind, from what the transcripts actually hold."""
    ranked = [word for word, _ in counts.most_common()]
    common = ranked[:30]
    middle = ranked[len(ranked) // 50 : len(ranked) // 10]
    rare = [word for word in ranked if counts[word] <= 3]
    missing = [word + "xq" for word in vocab[-200:]]
    return {
        "common word": [rng.choice(common) for _ in range(queries)],
        "mid word": [rng.choice(middle) for _ in range(queries)],
        "rare word": [rng.choice(rare) for _ in range(queries)],
        "two words": [f"{rng.choice(common)} {rng.choice(middle)}" for _ in range(queries)],
        "prefix": [rng.choice([w for w in middle if len(w) > 5])[:4] for _ in range(queries)],
        "no match": [rng.choice(missing) for _ in range(queries)],
    }


def percentile(samples: list[float], share: float) -> float:
    """The ``share`` quantile of ``samples`` (nearest rank)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


async def measure(repo: JobRepository, kinds: dict[str, list[str]]) -> None:
    """Run every query once to warm the caches, then time each; print a row per kind."""
    for typed in (q for queries in kinds.values() for q in queries[:3]):
        await repo.search(PERSON, SearchQuery.parse(typed), limit=LIMIT)
    everything: list[float] = []
    print("| query | p50 ms | p95 ms | max ms | hits (median) |")
    print("| --- | --- | --- | --- | --- |")
    for kind, queries in kinds.items():
        times, found = [], []
        for typed in queries:
            query = SearchQuery.parse(typed)
            started = time.perf_counter()
            hits = await repo.search(PERSON, query, limit=LIMIT)
            times.append((time.perf_counter() - started) * 1000)
            found.append(len(hits))
        everything += times
        print(
            f"| {kind} | {statistics.median(times):.1f} | {percentile(times, 0.95):.1f}"
            f" | {max(times):.1f} | {statistics.median(found):.0f} |"
        )
    print(
        f"| **all {len(everything)}** | **{statistics.median(everything):.1f}**"
        f" | **{percentile(everything, 0.95):.1f}** | {max(everything):.1f} | |"
    )


@asynccontextmanager
async def sqlite_repo(clock: ManualClock) -> AsyncIterator[JobRepository]:
    """A SQLite repository on a file of its own in a temporary directory."""
    with tempfile.TemporaryDirectory() as folder:
        repo = await SqliteJobRepository.open(Path(folder) / "jobs.db", clock=clock)
        try:
            yield repo
        finally:
            size = sum(p.stat().st_size for p in Path(folder).iterdir())  # noqa: ASYNC240
            print(f"\nSQLite file and WAL: {size / 2**20:.0f} MiB")
            await repo.close()


Opener = Callable[[ManualClock], AbstractAsyncContextManager[JobRepository]]


def postgres_repo(url: str, *, keep: bool = False) -> Opener:
    """A PostgreSQL repository on a database made for the run and dropped after it."""

    @asynccontextmanager
    async def opened(clock: ManualClock) -> AsyncIterator[JobRepository]:
        name = f"transcriber_bench_search_{os.getpid()}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        target = urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
        database = await Database.open(target, pool_size=2)
        try:
            yield PostgresJobRepository(database, clock=clock)
        finally:
            async with database.connection() as conn:
                cursor = await conn.execute(
                    "SELECT pg_size_pretty(pg_total_relation_size('jobs')),"
                    " pg_size_pretty(pg_relation_size('jobs_search'))"
                )
                print(
                    "\nPostgreSQL jobs (with TOAST and indexes), GIN index:",
                    await cursor.fetchone(),
                )
            await database.close()
            if keep:
                print(f"kept: {target}")
            else:
                with psycopg.connect(url, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # type: ignore[arg-type]

    return opened


async def run(name: str, opener: Opener, args: argparse.Namespace) -> None:
    """Fill one store and time the queries on it."""
    rng = random.Random(23)
    vocab = vocabulary(rng, args.vocabulary)
    made = transcripts(rng, args.transcripts + args.others, args.median, vocab)
    counts: Counter[str] = Counter()
    for text, _ in made[args.others :]:
        counts.update({token.lower().strip(".") for token in text.split()})
    kinds = query_kinds(rng, vocab, counts, args.queries)
    words = sum(len(w) for _, w in made[args.others :])
    clock = ManualClock(T0)
    async with opener(clock) as repo:
        seconds = await fill(repo, clock, made, args.others)
        if isinstance(repo, PostgresJobRepository):
            await repo._db.execute("VACUUM ANALYZE jobs")
        print(
            f"\n## {name}: {args.transcripts:,} transcripts of the person"
            f" ({words:,} words, median {statistics.median(len(w) for _, w in made):.0f}),"
            f" {args.others:,} of another; filled in {seconds:.0f} s\n"
        )
        await measure(repo, kinds)


def main() -> None:
    """Parse the options and run each store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=2_000)
    parser.add_argument("--median", type=int, default=250)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--only", choices=("sqlite", "postgres"))
    parser.add_argument("--keep", action="store_true", help="keep PostgreSQL's database")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()}")
    if args.only != "postgres":
        asyncio.run(run("SQLite (FTS5)", sqlite_repo, args))
    if args.only != "sqlite":
        opener = postgres_repo(args.url, keep=args.keep)
        asyncio.run(run("PostgreSQL (tsvector, GIN)", opener, args))


if __name__ == "__main__":
    main()
