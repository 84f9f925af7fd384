"""Queue throughput, pickup latency and idle cost of the job repository (SQLite or PostgreSQL).

Prints its figures; the numbers in docs/benchmarks.md come from here.

SQLite (the default):

1. Throughput: N jobs acquired and completed (acquire, then a fenced save of
   the next state) by 3 concurrent workers through the async repository, vs.
   the same statements and row mapping on one bare sqlite3 connection.
2. Pickup latency: enqueue to step start for an idle worker in the same process.
3. Idle cost: repository queries per second of an idle process running 6 loops.

PostgreSQL (``--postgres URL``; each part in a fresh database the script
makes on that server and drops):

1. Throughput: ``--processes`` worker processes of ``--workers`` tasks each
   create N no-op jobs (one ``create`` per job), then acquire each and save
   it ``done`` (fenced) through ``PostgresJobRepository``; against it, in the
   same run, procrastinate deferring and running N no-op tasks with as many
   processes and as much concurrency (``bench/procrastinate_queue.py``,
   run with ``--procrastinate-python``, a Python that has procrastinate).
2. Pickup latency: from ``create`` of a job in this process (the API side,
   through ``submit``, after the upload's file is stored) to an idle worker
   process's acquire returning it, and to its convert step starting, woken
   by NOTIFY (the fallback poll an hour away).
3. Idle cost: the transactions the server counts on a private database
   while one idle worker process runs ``--idle-loops`` loops per step state
   and its wake-up listener (``pg_stat_database``).

Usage: .venv/bin/python bench/queue.py [--jobs 20000] [--workers 3] [--pickups 200]
       .venv/bin/python bench/queue.py --postgres postgresql://postgres@127.0.0.1/postgres
           [--procrastinate-python /path/to/python] [--jobs 10000] [--processes 4] [--workers 4]
"""

from __future__ import annotations

import sys
from pathlib import Path

# This script shares its name with the stdlib module ``queue``, which sqlite3's
# thread and asyncio import: keep the script's own folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from multiprocessing.synchronize import Barrier
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs
import psycopg

from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory import (
    MemoryConverter,
    MemoryFileStore,
    MemoryNotifier,
    MemoryRecognizer,
)
from transcriber_adapters.postgres import Database, PostgresJobRepository, PostgresWakeupFeed
from transcriber_adapters.sqlite import SqliteJobRepository
from transcriber_adapters.sqlite.schema import connect
from transcriber_adapters.sqlite.statements import (
    ACQUIRE_SQL,
    INSERT_JOB_SQL,
    ROWS,
    SAVE_IF_HELD_SQL,
)
from transcriber_adapters.sqlite.times import to_db
from transcriber_adapters.system import RandomIds, SystemClock
from transcriber_core.entities import STEP_STATES, Job, Origin, State
from transcriber_core.intake import submit
from transcriber_core.policy import DEFAULT_SETTINGS, Settings
from transcriber_core.ports import Event, JobRepository, ProgressCallback
from transcriber_core.services import Services
from transcriber_core.transitions import transition
from transcriber_core.worker import Workers

CLOCK = SystemClock()
IDS = RandomIds()


def new_jobs(count: int, state: State = State.CONVERT) -> list[Job]:
    """Jobs in ``state``, created in order a microsecond apart."""
    start = CLOCK.now() - timedelta(hours=1)
    return [
        Job(
            id=IDS.new_id(),
            state=state,
            origin=Origin.http(),
            created=start + timedelta(microseconds=i),
            updated=start + timedelta(microseconds=i),
        )
        for i in range(count)
    ]


async def drain(repo: JobRepository, state: State, to: State) -> int:
    """Acquire each job of ``state`` and save it fenced in ``to`` until none is left; how many."""
    done = 0
    while True:
        acquisition_id = IDS.new_id()
        job = await repo.acquire(state, acquisition_id=acquisition_id, lease=DEFAULT_SETTINGS.lease)
        if job is None:
            return done
        finished = transition(job, to, now=CLOCK.now())
        await repo.save_if_held(finished, acquisition_id=acquisition_id)
        done += 1


async def async_throughput(path: Path, jobs: list[Job], workers: int) -> float:
    """Jobs per second through ``SqliteJobRepository`` with ``workers`` coroutines."""
    repo = await SqliteJobRepository.open(path)
    for job in jobs:
        await repo.create(job)

    async def worker() -> int:
        return await drain(repo, State.CONVERT, State.RECOGNIZE)

    started = time.perf_counter()
    counts = await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - started
    await repo.close()
    assert sum(counts) == len(jobs), counts
    return len(jobs) / elapsed


def raw_throughput(path: Path, jobs: list[Job]) -> float:
    """Jobs per second running the same statements on one bare sqlite3 connection."""
    asyncio.run(_create_schema(path))
    conn = connect(path)
    conn.execute("BEGIN")
    conn.executemany(INSERT_JOB_SQL, [ROWS.job_params(job) for job in jobs])
    conn.execute("COMMIT")
    done = 0
    started = time.perf_counter()
    while True:
        acquisition_id = IDS.new_id()
        now = CLOCK.now()
        row = conn.execute(
            ACQUIRE_SQL,
            {
                "state": State.CONVERT.value,
                "acquisition_id": acquisition_id,
                "now": to_db(now),
                "lease_cutoff": to_db(now - DEFAULT_SETTINGS.lease),
            },
        ).fetchone()
        if row is None:
            break
        finished = transition(ROWS.job_from_row(row), State.RECOGNIZE, now=CLOCK.now())
        cursor = conn.execute(
            SAVE_IF_HELD_SQL, {**ROWS.job_params(finished), "held_by": acquisition_id}
        )
        assert cursor.rowcount == 1
        done += 1
    elapsed = time.perf_counter() - started
    conn.close()
    assert done == len(jobs)
    return done / elapsed


async def _create_schema(path: Path) -> None:
    repo = await SqliteJobRepository.open(path)
    await repo.close()


@attrs.define
class StampingConverter:
    """Notes when a step starts, then converts like the memory converter."""

    inner: MemoryConverter
    entered: Callable[[], None]

    @property
    def output_extension(self) -> str:
        return self.inner.output_extension

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        self.entered()
        return await self.inner.convert(
            source, target, on_progress=on_progress, background=background
        )


class CountingRepository:
    """Counts every call made to the wrapped repository; notes when each method was last called."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.called_at: dict[str, float] = {}

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.called_at[name] = time.perf_counter()
            return attribute(*args, **kwargs)

        return counted


async def pickup_latency(folder: Path, rounds: int) -> list[float]:
    """Milliseconds from ``submit`` to the convert step starting, idle worker, same process."""
    repo = await SqliteJobRepository.open(folder / "pickup.db")
    entered_at: list[float] = []
    converter = StampingConverter(MemoryConverter(), lambda: entered_at.append(time.perf_counter()))
    notifier = MemoryNotifier()
    services = Services(
        repo=repo,
        files=MemoryFileStore(),
        converter=converter,
        recognizer=MemoryRecognizer(),
        notifier=notifier,
        clock=CLOCK,
        ids=IDS,
        # Only wake-ups may move a job: the fallback poll is an hour away.
        settings=Settings(idle_poll_interval=timedelta(hours=1)),
    )
    workers = Workers(services)
    workers.start()
    latencies = []
    for i in range(rounds):
        upload = folder / f"upload-{i}"
        upload.write_bytes(b"recording bytes " * 64)
        before = len(entered_at)
        started = time.perf_counter()
        job, _ = await submit(services, upload, extension=".ogg", origin=Origin.telegram(1, i))
        await notifier.wait_for(job.id, Event.DONE)
        assert len(entered_at) == before + 1
        latencies.append((entered_at[before] - started) * 1000)
    await workers.drain(grace=5)
    await repo.close()
    return latencies


async def idle_queries_per_second(folder: Path, seconds: float) -> float:
    """Repository calls per second of an idle process with 2 loops per step state."""
    repo = CountingRepository(await SqliteJobRepository.open(folder / "idle.db"))
    services = Services(
        repo=repo,
        files=MemoryFileStore(),
        converter=MemoryConverter(),
        recognizer=MemoryRecognizer(),
        notifier=MemoryNotifier(),
        clock=CLOCK,
        ids=IDS,
        settings=DEFAULT_SETTINGS,
    )
    workers = Workers(services, dict.fromkeys(STEP_STATES, 2))
    workers.start()
    await asyncio.sleep(1)  # let each loop make its first acquire
    repo.calls = 0
    await asyncio.sleep(seconds)
    calls = repo.calls
    await workers.drain(grace=1)
    await repo.inner.close()
    return calls / seconds


# -- PostgreSQL ---------------------------------------------------------------------------------

#: The multiprocessing start method: a fresh interpreter, no event loop or pool inherited.
SPAWN = multiprocessing.get_context("spawn")


@contextmanager
def fresh_database(url: str, name: str) -> Iterator[str]:
    """The URL of a new database ``name`` on ``url``'s server, dropped on exit."""
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _migrate(url: str) -> None:
    database = await Database.open(url, pool_size=1)
    await database.close()


def _pg_throughput_process(url: str, jobs: int, tasks: int, barrier: Barrier) -> None:
    """One worker process: create its share of no-op jobs, then work until none is left."""
    asyncio.run(_pg_throughput_worker(url, jobs, tasks, barrier))


async def _pg_throughput_worker(url: str, jobs: int, tasks: int, barrier: Barrier) -> None:
    database = await Database.open(url, pool_size=tasks)
    repo = PostgresJobRepository(database)
    mine = new_jobs(jobs, State.RECOGNIZE)

    async def creator(share: list[Job]) -> None:
        for job in share:
            await repo.create(job)

    async def worker() -> int:
        return await drain(repo, State.RECOGNIZE, State.DONE)

    barrier.wait()  # every process connected: the creates start together
    await asyncio.gather(*(creator(mine[i::tasks]) for i in range(tasks)))
    barrier.wait()  # every job created
    barrier.wait()  # the parent analysed the table, if asked: the work starts together
    await asyncio.gather(*(worker() for _ in range(tasks)))
    await database.close()


#: Finished jobs of a service that has been running: ``history`` rows, older than the bench's.
_HISTORY_SQL = (
    "INSERT INTO jobs (id, state, origin_kind, created, updated)"
    " SELECT 'history-' || g, 'done', 'http',"
    " now() - interval '30 days' + g * interval '1 s', now()"
    " FROM generate_series(1, %(history)s) AS g"
)


def pg_throughput(
    url: str, jobs: int, processes: int, tasks: int, *, analyze: bool, history: int
) -> dict[str, float]:
    """Seconds to create ``jobs`` no-op jobs and to run them, ``processes`` x ``tasks``.

    The table starts with ``history`` finished jobs (a service that has been
    running; none: a fresh one). With ``analyze`` the table's statistics are
    taken between the two phases (untimed), as autovacuum does within a minute
    of a burst of inserts.
    """
    asyncio.run(_migrate(url))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_HISTORY_SQL, {"history": history})
        conn.execute("VACUUM ANALYZE jobs")
    barrier = SPAWN.Barrier(processes + 1)
    children = [
        SPAWN.Process(target=_pg_throughput_process, args=(url, jobs // processes, tasks, barrier))
        for _ in range(processes)
    ]
    for child in children:
        child.start()
    barrier.wait()
    started = time.perf_counter()
    barrier.wait()
    created_seconds = time.perf_counter() - started
    if analyze:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE jobs")
    barrier.wait()
    created = time.perf_counter()
    for child in children:
        child.join()
        if child.exitcode != 0:
            raise RuntimeError(f"a worker process failed ({child.exitcode})")
    finished = time.perf_counter()
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FILTER (WHERE state = 'done'), count(*) FROM jobs")
        done, total = row.fetchone() or (0, 0)
    if done != total or total != jobs // processes * processes + history:
        raise RuntimeError(f"{done} jobs done of {total}")
    total -= history
    return {"jobs": total, "create_seconds": created_seconds, "run_seconds": finished - created}


def procrastinate_throughput(
    python: str, url: str, jobs: int, processes: int, tasks: int, *, analyze: bool
) -> dict[str, float]:
    """``bench/procrastinate_queue.py``'s figures, run by ``python`` on ``url``."""
    script = Path(__file__).with_name("procrastinate_queue.py")
    command = [python, str(script), "--dsn", url, "--jobs", str(jobs)]
    command += ["--workers", str(processes), "--concurrency", str(tasks)]
    command += ["--analyze"] if analyze else []
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(result.stdout.splitlines()[-1])
    return figures


def _pg_services(url: str, root: Path, converter: Any, settings: Settings, repo: Any) -> Services:
    """Services on ``repo`` with files under ``root``, shared by the bench's processes."""
    return Services(
        repo=repo,
        files=FilesystemFileStore(root / "files", staging_dir=root / "staging"),
        converter=converter,
        recognizer=MemoryRecognizer(),
        notifier=MemoryNotifier(),
        clock=CLOCK,
        ids=IDS,
        settings=settings,
        wakeup_feed=PostgresWakeupFeed(url, settings=settings),
    )


class StampingRepository(PostgresJobRepository):
    """Reports when an acquire in ``convert`` returned a job (``("acquired", time)``)."""

    def __init__(self, database: Database, reports: Any) -> None:
        super().__init__(database)
        self._reports = reports

    async def acquire(self, state: State, **kwargs: Any) -> Job | None:
        job = await super().acquire(state, **kwargs)
        if job is not None and state is State.CONVERT:
            self._reports.put(("acquired", time.perf_counter()))
        return job


def _pg_worker_process(url: str, root: Path, loops: int, reports: Any) -> None:
    """A worker process with ``loops`` loops per step state, woken by NOTIFY, until killed.

    With one loop (the pickup figure) it reports when it acquires a job in
    convert and when the convert step starts, and its fallback poll is an
    hour away, so only a wake-up can explain a pickup. With more (the idle
    figure) it polls each second, as configured by default, and reports
    every second how many statements its connections have sent.
    """
    asyncio.run(_pg_worker(url, root, loops, reports))


async def _pg_worker(url: str, root: Path, loops: int, reports: Any) -> None:
    statements = 0
    execute = psycopg.AsyncCursor.execute

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal statements
        statements += 1
        return await execute(self, *args, **kwargs)

    # AsyncConnection.execute goes through here too: the pool's and the listener's.
    psycopg.AsyncCursor.execute = counted  # type: ignore[method-assign]
    database = await Database.open(url)
    pickup = loops == 1
    converter = StampingConverter(
        MemoryConverter(), lambda: reports.put(("step", time.perf_counter()))
    )
    poll = timedelta(hours=1) if pickup else DEFAULT_SETTINGS.idle_poll_interval
    settings = Settings(idle_poll_interval=poll)
    services = _pg_services(url, root, converter, settings, StampingRepository(database, reports))
    Workers(services, dict.fromkeys(STEP_STATES, loops)).start()
    while True:
        await asyncio.sleep(1)
        if not pickup:
            reports.put((time.perf_counter(), statements))


async def _pg_pickups(url: str, root: Path, rounds: int, stamps: Any) -> list[tuple[float, float]]:
    database = await Database.open(url, pool_size=2)
    repo = CountingRepository(PostgresJobRepository(database))
    services = _pg_services(url, root, MemoryConverter(), DEFAULT_SETTINGS, repo)
    latencies = []
    for i in range(rounds):
        upload = root / f"upload-{i}"
        upload.write_bytes(b"recording bytes " * 64)
        job, _ = await submit(services, upload, extension=".ogg", origin=Origin.telegram(1, i))
        seen = dict([await asyncio.to_thread(stamps.get, timeout=30) for _ in range(2)])
        # From the job's insert (after the upload's file is stored) to the acquire, the step.
        created = repo.called_at["create"]
        latencies.append(((seen["acquired"] - created) * 1000, (seen["step"] - created) * 1000))
        # An idle pickup: the next job comes once the worker is done with this one.
        while not (await repo.get(job.id)).state.is_terminal:  # noqa: ASYNC110 - another process
            await asyncio.sleep(0.005)
    await database.close()
    return latencies


def pg_pickup_latency(url: str, rounds: int, warmup: int = 5) -> list[tuple[float, float]]:
    """Milliseconds from ``create`` here to the acquire, and to the step, in a worker process."""
    asyncio.run(_migrate(url))
    stamps = SPAWN.Queue()
    with tempfile.TemporaryDirectory(prefix="bench-queue-pg-") as tmp:
        root = Path(tmp)
        for folder in ("files", "staging"):
            (root / folder).mkdir()
        child = SPAWN.Process(target=_pg_worker_process, args=(url, root, 1, stamps))
        child.start()
        try:
            latencies = asyncio.run(_pg_pickups(url, root, warmup + rounds, stamps))
        finally:
            child.kill()
            child.join()
    return latencies[warmup:]


def _transactions(admin: psycopg.Connection[Any], name: str) -> int:
    row = admin.execute(
        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (name,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _latest(reports: Any) -> tuple[float, int]:
    """The newest (time, statements) report of the idle worker, waiting for one."""
    latest = reports.get(timeout=30)
    while not reports.empty():
        latest = reports.get()
    return latest  # type: ignore[no-any-return]


def pg_idle_queries_per_second(
    url: str, name: str, loops: int, seconds: float
) -> tuple[float, float]:
    """Statements per second one idle worker process sends, and transactions the server counts.

    The second figure is every transaction on the database ``name``
    (``pg_stat_database``), whoever ran it: autovacuum too, which the
    ``VACUUM ANALYZE`` after the migrations keeps away.
    """
    asyncio.run(_migrate(url))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    reports = SPAWN.Queue()
    with tempfile.TemporaryDirectory(prefix="bench-queue-pg-") as tmp:
        child = SPAWN.Process(target=_pg_worker_process, args=(url, Path(tmp), loops, reports))
        child.start()
        try:
            with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
                # Backends report their counts at most every second, idle ones within
                # ten: start counting once the worker is settled, and count for long.
                time.sleep(15)
                started, sent_before = _latest(reports)
                before = _transactions(admin, name)
                time.sleep(seconds)
                after = _transactions(admin, name)
                ended, sent_after = _latest(reports)
        finally:
            child.kill()
            child.join()
    return (sent_after - sent_before) / (ended - started), (after - before) / seconds


def postgres_main(args: argparse.Namespace) -> None:
    """Print the PostgreSQL figures, procrastinate's beside ours."""
    prefix = f"bench_queue_{os.getpid()}"
    jobs, processes, tasks = args.jobs, args.processes, args.workers
    # Parts run in order; the caller picks which (all by default).
    if "throughput" in args.parts:
        with fresh_database(args.postgres, f"{prefix}_ours") as url:
            ours = pg_throughput(
                url, jobs, processes, tasks, analyze=args.analyze, history=args.history
            )
        print(
            f"throughput: {ours['jobs']:.0f} no-op jobs, {processes} processes x {tasks} tasks,"
            f" {args.history} finished jobs before,"
            f" {'ANALYZE' if args.analyze else 'no ANALYZE'} between create and run"
        )
        rows = [
            ("PostgresJobRepository", ours["jobs"], ours["create_seconds"], ours["run_seconds"])
        ]
        if args.procrastinate_python:
            with fresh_database(args.postgres, f"{prefix}_procrastinate") as url:
                theirs = procrastinate_throughput(
                    args.procrastinate_python, url, jobs, processes, tasks, analyze=args.analyze
                )
            rows.append(
                ("procrastinate", theirs["jobs"], theirs["defer_seconds"], theirs["run_seconds"])
            )
        rates = []
        for label, count, create, run in rows:
            rates.append(count / (create + run))
            print(
                f"  {label:<22} {rates[-1]:8.0f} jobs/s  (create {count / create:6.0f}/s,"
                f" then acquire + save {count / run:6.0f}/s)"
            )
        if len(rates) == 2:
            print(f"  ratio:                 {rates[0] / rates[1]:8.2f}")
    if "pickup" in args.parts:
        with fresh_database(args.postgres, f"{prefix}_pickup") as url:
            pickups = pg_pickup_latency(url, args.pickups)
        print(f"pickup latency over {args.pickups} idle pickups, create -> other process:")
        for index, label in enumerate(("acquire returned", "convert step starts")):
            latencies = [pair[index] for pair in pickups]
            quantiles = statistics.quantiles(latencies, n=100)
            p50, p95, top = quantiles[49], quantiles[94], max(latencies)
            print(f"  {label:<20} p50 {p50:.2f} ms, p95 {p95:.2f} ms, max {top:.2f} ms")
    if "idle" in args.parts:
        for loops in args.idle_loops:
            name = f"{prefix}_idle"
            with fresh_database(args.postgres, name) as url:
                sent, seen = pg_idle_queries_per_second(url, name, loops, args.idle_seconds)
            print(
                f"idle cost, one process with {loops * len(STEP_STATES)} worker loops and the"
                f" listener: {sent:.3f} statements/s sent, {seen:.3f} transactions/s on the server"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--pickups", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--postgres", metavar="URL", help="measure PostgreSQL on this server")
    parser.add_argument("--processes", type=int, default=4, help="PostgreSQL worker processes")
    parser.add_argument("--procrastinate-python", metavar="PYTHON", help="has procrastinate")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=("throughput", "pickup", "idle"),
        default=["throughput", "pickup", "idle"],
        help="the PostgreSQL figures to measure",
    )
    parser.add_argument(
        "--history", type=int, default=20_000, help="finished jobs in the table before the run"
    )
    parser.add_argument(
        "--no-analyze",
        dest="analyze",
        action="store_false",
        help="run the queued jobs on the planner's guesses, not the statistics autovacuum takes",
    )
    parser.add_argument(
        "--idle-loops", type=int, nargs="+", default=[2, 8], help="loops per step state"
    )
    args = parser.parse_args()
    if args.postgres:
        postgres_main(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as tmp:
        folder = Path(tmp)
        jobs = new_jobs(args.jobs)
        raw = raw_throughput(folder / "raw.db", jobs)
        ours = asyncio.run(async_throughput(folder / "async.db", jobs, args.workers))
        print(f"throughput: {args.jobs} jobs, {args.workers} async workers")
        print(f"  async repository: {ours:8.0f} jobs/s")
        print(f"  raw sqlite3:      {raw:8.0f} jobs/s (same statements, one connection)")
        print(f"  ratio:            {ours / raw:8.2f}")
        latencies = asyncio.run(pickup_latency(folder, args.pickups))
        quantiles = statistics.quantiles(latencies, n=100)
        print(f"pickup latency over {args.pickups} idle pickups (enqueue -> step start):")
        print(
            f"  p50 {quantiles[49]:.2f} ms, p95 {quantiles[94]:.2f} ms, max {max(latencies):.2f} ms"
        )
        idle = asyncio.run(idle_queries_per_second(folder, args.idle_seconds))
        print(f"idle cost: {idle:.2f} repository queries/s (6 worker loops, one process)")


if __name__ == "__main__":
    main()
