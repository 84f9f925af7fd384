"""What only the SQLite repository can get wrong: schema, time format, locks, threads, processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from multiprocessing.synchronize import Barrier as ProcessBarrier
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path
from typing import Any

import pytest

from transcriber_adapters.sqlite import (
    SqliteJobRepository,
    connect,
    from_db,
    job_params,
    migrate,
    shipped_migrations,
    to_db,
)
from transcriber_adapters.sqlite.schema import Migration
from transcriber_adapters.sqlite.statements import ACQUIRE_SHORT_SQL, INSERT_JOB_SQL
from transcriber_contracts.parts import split_job
from transcriber_core.clocks import ManualClock
from transcriber_core.entities import FileRecord, Job, Location, Origin, State, Word
from transcriber_core.errors import Conflict, FileNotFound, RepositoryUnavailable

T0 = datetime(2026, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
NOW = T0 + timedelta(minutes=10)
LEASE = timedelta(minutes=2)
MICROSECOND = timedelta(microseconds=1)
#: Longest a synchronisation point may wait before the test is declared hung.
SYNC_TIMEOUT = 60.0


class FixedClock:
    """A clock that reads what the test set."""

    def __init__(self, now: datetime) -> None:
        self.current = now

    def now(self) -> datetime:
        """The time the test set."""
        return self.current


def make_job(job_id: str, *, created: datetime = T0, **changes: Any) -> Job:
    """A convert job from HTTP."""
    return Job(
        id=job_id,
        state=State.CONVERT,
        origin=Origin.http(),
        created=created,
        updated=created,
        **changes,
    )


#: The clock of each repository ``open_repo`` opened, which ``acquire`` moves.
CLOCKS: weakref.WeakKeyDictionary[SqliteJobRepository, FixedClock] = weakref.WeakKeyDictionary()


async def open_repo(path: Path, **options: Any) -> SqliteJobRepository:
    """A repository on ``path`` whose clock reads ``NOW`` until ``acquire`` moves it."""
    clock = FixedClock(NOW)
    repo = await SqliteJobRepository.open(path, clock=clock, **options)
    CLOCKS[repo] = clock
    return repo


async def acquire(
    repo: SqliteJobRepository, acquisition_id: str, now: datetime = NOW, *, short_only: bool = False
) -> Job | None:
    """Ask for convert work as a worker does, the store's clock at ``now``."""
    CLOCKS[repo].current = now
    return await repo.acquire(
        State.CONVERT, acquisition_id=acquisition_id, lease=LEASE, short_only=short_only
    )


async def create(
    repo: SqliteJobRepository, job: Job, files: Sequence[FileRecord] = ()
) -> tuple[Job, bool]:
    """Store ``job`` with the store's clock at its ``created``, which the store stamps."""
    CLOCKS[repo].current = job.created
    return await repo.create(job, files)


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A bare connection to the file, set up as the repository's are, closed on exit."""
    conn = connect(path)
    try:
        yield conn
    finally:
        conn.close()


def insert(conn: sqlite3.Connection, job: Job) -> None:
    """Insert a job the way the repository does, without its thread."""
    conn.execute(INSERT_JOB_SQL, job_params(job))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's database file lives."""
    return tmp_path / "jobs.db"


@pytest.fixture
async def repo(db_path: Path) -> AsyncIterator[SqliteJobRepository]:
    """An open repository on a fresh file."""
    repo = await open_repo(db_path)
    yield repo
    await repo.close()


# -- migrations ----------------------------------------------------------------


async def test_first_open_applies_every_shipped_migration(db_path: Path) -> None:
    """A fresh file gets the whole schema, each version recorded with the clock's time."""
    repo = await SqliteJobRepository.open(db_path, clock=FixedClock(T0))
    await repo.close()
    versions = tuple(migration.version for migration in shipped_migrations())
    assert versions[0] == 1
    assert repo.applied_migrations == versions
    with raw(db_path) as conn:
        rows = conn.execute("SELECT version, applied FROM schema_migrations").fetchall()
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert rows == [(version, to_db(T0)) for version in versions]
    assert {"jobs", "files", "jobs_state_created", "jobs_created"} <= tables


async def test_second_open_applies_nothing(db_path: Path) -> None:
    """Reopening a current database changes no schema row, so a restart recreates nothing."""
    first = await SqliteJobRepository.open(db_path, clock=FixedClock(T0))
    await first.create(make_job("kept"))
    await first.close()
    with raw(db_path) as conn:
        before = conn.execute("SELECT * FROM schema_migrations").fetchall()
    second = await SqliteJobRepository.open(db_path, clock=FixedClock(T0 + timedelta(days=1)))
    try:
        assert second.applied_migrations == ()
        assert (await second.get("kept")).id == "kept"
    finally:
        await second.close()
    with raw(db_path) as conn:
        assert conn.execute("SELECT * FROM schema_migrations").fetchall() == before


def test_a_failing_migration_changes_nothing(db_path: Path) -> None:
    """A migration that breaks halfway leaves neither its tables nor its version behind."""
    broken = Migration(
        version=len(shipped_migrations()) + 1,
        name="broken",
        sql="CREATE TABLE half (id INTEGER);\nINSERT INTO no_such_table VALUES (1);\n",
    )
    with raw(db_path) as conn:
        with pytest.raises(sqlite3.OperationalError):
            migrate(conn, now=T0, migrations=[*shipped_migrations(), broken])
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "half" not in tables
        assert "jobs" not in tables
        assert not conn.in_transaction


async def test_a_newer_database_is_refused(db_path: Path) -> None:
    """A file migrated by a later version is not opened by an older program that cannot read it."""
    repo = await open_repo(db_path)
    await repo.close()
    with raw(db_path) as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (9999, 0)")
    with pytest.raises(RepositoryUnavailable, match="newer version"):
        await open_repo(db_path)


def test_concurrent_first_opens_migrate_once(db_path: Path) -> None:
    """Eight first opens racing on a fresh file, each its own connection, migrate it once."""
    parties = 8
    barrier = threading.Barrier(parties, timeout=SYNC_TIMEOUT)

    def open_and_close() -> tuple[int, ...]:
        async def run() -> tuple[int, ...]:
            barrier.wait()
            repo = await open_repo(db_path)
            await repo.close()
            return repo.applied_migrations

        return asyncio.run(run())

    with ThreadPoolExecutor(parties) as pool:
        applied = [
            future.result() for future in [pool.submit(open_and_close) for _ in range(parties)]
        ]
    versions = tuple(migration.version for migration in shipped_migrations())
    assert sorted(applied, reverse=True) == [versions] + [()] * (parties - 1)
    with raw(db_path) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
    assert rows == [(version,) for version in versions]


# -- connection ------------------------------------------------------------------


def test_connections_use_wal_and_wait_for_locks(db_path: Path) -> None:
    """WAL, a busy timeout, NORMAL sync and foreign keys: what lets threads and processes share."""
    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert conn.isolation_level is None


async def test_the_file_is_left_in_wal_mode(repo: SqliteJobRepository, db_path: Path) -> None:
    """The repository's own open switched the file to WAL, which persists in the file."""
    await create(repo, make_job("a"))
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        conn.close()


async def test_a_held_lock_becomes_repository_unavailable(db_path: Path) -> None:
    """'database is locked' reaches callers as the transient RepositoryUnavailable, in our words."""
    repo = await open_repo(db_path, busy_timeout=0.05)
    await create(repo, make_job("a"))
    blocker = connect(db_path)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(RepositoryUnavailable) as caught:
            await acquire(repo, "lease-1")
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        assert str(db_path) not in caught.value.message
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        await repo.close()


async def test_a_closed_repository_refuses_calls(db_path: Path) -> None:
    """A call after close fails at once instead of waiting forever on a stopped thread."""
    repo = await open_repo(db_path)
    await repo.close()
    await repo.close()
    with pytest.raises(RepositoryUnavailable, match="closed"):
        await repo.get("a")


async def test_create_is_all_or_nothing(repo: SqliteJobRepository) -> None:
    """A file record that cannot be stored takes the job with it: no job points at nothing."""
    good = FileRecord(id="f1", location=Location.LOCAL, size=1, extension=".mp3", created=T0)
    bad = FileRecord(id="f2", location=Location.LOCAL, size=-1, extension=".mp3", created=T0)
    with pytest.raises(Conflict):
        await create(repo, make_job("a", source_file_id="f1"), [good, bad])
    assert await repo.count_by_state() == {}
    with pytest.raises(FileNotFound):
        await repo.get_file("f1")


async def test_words_are_stored_as_readable_json(repo: SqliteJobRepository, db_path: Path) -> None:
    """Word timings are a JSON array of objects, readable by any SQL client."""
    words = (Word(text="да", start=0.25, end=0.879999999),)
    await create(repo, make_job("a", words=words))
    with raw(db_path) as conn:
        stored = conn.execute("SELECT words FROM jobs").fetchone()
    assert stored == ('[{"text":"да","start":0.25,"end":0.879999999}]',)


# -- one time format (reference: queue rule 8) ---------------------------------------------------


def test_times_convert_both_ways_exactly() -> None:
    """to_db and from_db are inverse to the microsecond, before and after the epoch."""
    moments = [
        T0,
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2100, 1, 1, tzinfo=UTC),
        datetime(2026, 3, 1, 15, 0, 0, 1, tzinfo=timezone(timedelta(hours=3))),
    ]
    for moment in moments:
        assert from_db(to_db(moment)) == moment
        assert from_db(to_db(moment)).tzinfo is UTC
    assert to_db(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == 1_000_000


def test_naive_times_are_refused() -> None:
    """A time without a zone cannot be stored: it would be compared against UTC by accident."""
    with pytest.raises(ValueError, match="timezone-aware"):
        to_db(datetime(2026, 3, 1, 12, 0))  # noqa: DTZ001 - the naive time is the point


async def test_every_time_column_is_integer_microseconds(
    repo: SqliteJobRepository, db_path: Path
) -> None:
    """created, updated, acquire_time and delay_time share one type and unit in the file."""
    await create(repo, make_job("a"))
    await acquire(repo, "lease-1")
    await create(repo, make_job("b", delay_time=NOW))
    with raw(db_path) as conn:
        row = conn.execute(
            "SELECT typeof(created), typeof(updated), typeof(acquire_time), acquire_time - created"
            " FROM jobs WHERE id = 'a'"
        ).fetchone()
        delay = conn.execute("SELECT typeof(delay_time) FROM jobs WHERE id = 'b'").fetchone()
    assert row == ("integer", "integer", "integer", (NOW - T0) // MICROSECOND)
    assert delay == ("integer",)


async def test_lease_comparison_in_raw_sql(repo: SqliteJobRepository, db_path: Path) -> None:
    """acquire_time written by acquire compares in SQL with a cutoff made like created (rule 8)."""
    await create(repo, make_job("a", created=T0))
    await acquire(repo, "lease-1", now=NOW)
    expired = "SELECT acquire_time <= :cutoff, created < acquire_time FROM jobs WHERE id = 'a'"
    with raw(db_path) as conn:
        assert conn.execute(expired, {"cutoff": to_db(NOW)}).fetchone() == (1, 1)
        assert conn.execute(expired, {"cutoff": to_db(NOW - MICROSECOND)}).fetchone() == (0, 1)
    assert await acquire(repo, "lease-2", now=NOW + LEASE - MICROSECOND) is None
    again = await acquire(repo, "lease-2", now=NOW + LEASE)
    assert again is not None
    assert again.attempts == 2


async def test_acquire_time_set_back_hands_the_job_out_again(
    repo: SqliteJobRepository, db_path: Path
) -> None:
    """Acceptance 3: an acquire_time set back past the lease by hand makes the job eligible."""
    await create(repo, make_job("a"))
    await acquire(repo, "lease-1")
    with raw(db_path) as conn:
        conn.execute(
            "UPDATE jobs SET acquire_time = ? WHERE id = 'a'",
            (to_db(NOW - LEASE - timedelta(seconds=1)),),
        )
    again = await acquire(repo, "lease-2")
    assert again is not None
    assert (again.acquisition_id, again.attempts) == ("lease-2", 2)


async def test_express_acquire_walks_its_own_index(
    repo: SqliteJobRepository, db_path: Path
) -> None:
    """The express lane's pick is a search of (state, short, created, id), not a scan."""
    with raw(db_path) as conn:
        params = {"state": "convert", "acquisition_id": "x", "now": 0, "lease_cutoff": 0}
        plan = conn.execute(f"EXPLAIN QUERY PLAN {ACQUIRE_SHORT_SQL}", params).fetchall()
    details = " ".join(row[-1] for row in plan)
    assert "USING INDEX jobs_state_short_created (state=? AND short=?)" in details


async def test_jobs_from_before_the_lanes_are_long(db_path: Path) -> None:
    """A job stored before migration 0007 keeps its place in the general lane, not the express."""
    before = [m for m in shipped_migrations() if m.version < 7]
    with raw(db_path) as conn:
        migrate(conn, now=T0, migrations=before)
        # Only the columns migration 0007 found: later ones did not exist yet.
        later = {
            "short",
            "owner",
            "ended",
            "callback_url",
            "speakers_wanted",
            "speakers",
            "language_requested",
            "prompt",
            "task",
            "prints",
            "heard",
            "source_url",
            "title",
        }
        row = {c: v for c, v in job_params(make_job("old")).items() if c not in later}
        names, values = ", ".join(row), ", ".join(f":{c}" for c in row)
        conn.execute(f"INSERT INTO jobs ({names}) VALUES ({values})", row)
    repo = await open_repo(db_path)
    try:
        assert (await repo.get("old")).short is False
        assert await acquire(repo, "lease-1", short_only=True) is None
        assert await acquire(repo, "lease-2") is not None
    finally:
        await repo.close()


# -- races between real threads ------------------------------------------------------


def _race_rounds(path: Path, name: str, rounds: int, barrier: Any) -> list[str | None]:
    """One acquirer with its own repository and event loop: one acquire per round.

    ``barrier`` is a threading or multiprocessing barrier; both have ``wait()``.
    Acquirers with an even index are express loops (``short_only``), the
    others general ones: both statements race for the same short job.
    """
    short_only = int(name.rsplit("-", 1)[1]) % 2 == 0

    async def run() -> list[str | None]:
        repo = await open_repo(path)
        won: list[str | None] = []
        try:
            for round_ in range(rounds):
                barrier.wait()
                job = await acquire(repo, f"{name}-{round_}", short_only=short_only)
                won.append(None if job is None else job.id)
                barrier.wait()
        finally:
            await repo.close()
        return won

    return asyncio.run(run())


def _race_in_thread(
    path: Path, index: int, rounds: int, barrier: threading.Barrier
) -> list[str | None]:
    """One acquiring thread."""
    return _race_rounds(path, f"thread-{index}", rounds, barrier)


def _run_rounds(rounds: int, wait: Callable[[], object], conn: sqlite3.Connection) -> list[str]:
    """Enqueue one job per round between the acquirers' barriers; return the job ids."""
    job_ids = []
    for round_ in range(rounds):
        job_id = f"job-{round_:05d}"
        insert(conn, make_job(job_id, created=T0 + round_ * MICROSECOND, short=True))
        job_ids.append(job_id)
        wait()
        wait()
    return job_ids


def _assert_one_winner_per_round(
    path: Path, job_ids: list[str], results: list[list[str | None]]
) -> None:
    """Each round's job went to exactly one acquirer, and each job counted one attempt."""
    for round_, job_id in enumerate(job_ids):
        winners = [won[round_] for won in results if won[round_] is not None]
        assert winners == [job_id], f"round {round_}: winners {winners}"
    with raw(path) as conn:
        attempts = conn.execute("SELECT DISTINCT attempts FROM jobs").fetchall()
    assert attempts == [(1,)]


@pytest.mark.slow
@pytest.mark.parametrize(("acquirers", "rounds"), [(3, 1000), (16, 400)])
def test_threads_racing_never_share_a_job(db_path: Path, acquirers: int, rounds: int) -> None:
    """Express and general acquirers in real threads, own connections: each round one wins."""
    with raw(db_path) as conn:
        migrate(conn, now=T0)
    barrier = threading.Barrier(acquirers + 1, timeout=SYNC_TIMEOUT)
    conn = connect(db_path)
    try:
        with ThreadPoolExecutor(acquirers) as pool:
            futures = [
                pool.submit(_race_in_thread, db_path, index, rounds, barrier)
                for index in range(acquirers)
            ]
            try:
                job_ids = _run_rounds(rounds, barrier.wait, conn)
            except threading.BrokenBarrierError:
                for future in futures:
                    future.result()
                raise
            results = [future.result() for future in futures]
    finally:
        conn.close()
    _assert_one_winner_per_round(db_path, job_ids, results)


# -- races between real processes ------------------------------------------------------


def _race_in_process(
    path: Path,
    index: int,
    rounds: int,
    barrier: ProcessBarrier,
    results: multiprocessing.Queue[tuple[int, list[str | None]]],
) -> None:
    """A child process: its own repository on the shared file, one acquire per round."""
    results.put((index, _race_rounds(path, f"process-{index}", rounds, barrier)))


@pytest.mark.slow
@pytest.mark.parametrize(("acquirers", "rounds"), [(3, 300), (16, 120)])
def test_processes_racing_never_share_a_job(db_path: Path, acquirers: int, rounds: int) -> None:
    """Express and general acquirers in processes on one file: each round exactly one wins."""
    with raw(db_path) as conn:
        migrate(conn, now=T0)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(acquirers + 1, timeout=SYNC_TIMEOUT)
    queue: multiprocessing.Queue[tuple[int, list[str | None]]] = context.Queue()
    processes = [
        context.Process(target=_race_in_process, args=(db_path, index, rounds, barrier, queue))
        for index in range(acquirers)
    ]
    for process in processes:
        process.start()
    conn = connect(db_path)
    try:
        job_ids = _run_rounds(rounds, barrier.wait, conn)
        collected = dict(queue.get(timeout=SYNC_TIMEOUT) for _ in processes)
        for process in processes:
            process.join(SYNC_TIMEOUT)
            assert process.exitcode == 0
    finally:
        conn.close()
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    _assert_one_winner_per_round(db_path, job_ids, [collected[i] for i in range(acquirers)])


# -- a worker killed mid-step -----------------------------------------------------------


def _hold_and_hang(path: Path, holding: ProcessEvent) -> None:
    """A child that leases the job, starts writing its result, and hangs until killed."""

    async def lease() -> None:
        repo = await open_repo(path)
        try:
            job = await acquire(repo, "lease-killed")
            assert job is not None
        finally:
            await repo.close()

    asyncio.run(lease())
    conn = connect(path)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE jobs SET text = 'half-written', state = 'recognize'")
    holding.set()
    threading.Event().wait()


@pytest.mark.slow
async def test_a_killed_worker_loses_nothing(repo: SqliteJobRepository, db_path: Path) -> None:
    """SIGKILL mid-step: no half-written result, no stuck lock; the job returns after the lease."""
    job = make_job("a", source_file_id="f1")
    await create(repo, job)
    context = multiprocessing.get_context("spawn")
    holding = context.Event()
    child = context.Process(target=_hold_and_hang, args=(db_path, holding))
    child.start()
    try:
        assert await asyncio.to_thread(holding.wait, SYNC_TIMEOUT)
        child.kill()
        await asyncio.to_thread(child.join, SYNC_TIMEOUT)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -9
    left = await repo.get("a")
    assert (left.state, left.text, left.acquisition_id, left.attempts) == (
        State.CONVERT,
        None,
        "lease-killed",
        1,
    )
    assert await acquire(repo, "lease-early", now=NOW + LEASE - MICROSECOND) is None
    again = await acquire(repo, "lease-rescue", now=NOW + LEASE)
    assert again is not None
    assert (again.id, again.attempts, again.source_file_id) == ("a", 2, "f1")


# -- parts taken by real processes (ADR 52) --------------------------------------------


def _drain_parts(path: Path, name: str, barrier: ProcessBarrier) -> list[tuple[str, int]]:
    """A child process: its own repository on the shared file, taking parts until none is left."""

    async def drain() -> list[tuple[str, int]]:
        repo = await SqliteJobRepository.open(path)
        try:
            await asyncio.to_thread(barrier.wait)
            got: list[tuple[str, int]] = []
            while part := await repo.acquire_part(acquisition_id=f"{name}-{len(got)}", lease=LEASE):
                got.append((part.job_id, part.index))
            return got
        finally:
            await repo.close()

    return asyncio.run(drain())


@pytest.mark.slow
@pytest.mark.parametrize("takers", [3, 16])
async def test_processes_racing_for_parts_take_each_once(db_path: Path, takers: int) -> None:
    """Processes on one file drain the parts of ten split jobs at once: each part goes out once."""
    clock = ManualClock(T0)
    planner = await SqliteJobRepository.open(db_path, clock=clock)
    planned: list[tuple[str, int]] = []
    try:
        for _ in range(10):
            job, parts = await split_job(clock, planner, 6)
            planned.extend((job.id, part.index) for part in parts)
    finally:
        await planner.close()
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(takers, mp_context=context) as pool:
        barrier = manager.Barrier(takers, timeout=SYNC_TIMEOUT)
        loop = asyncio.get_running_loop()
        results = await asyncio.gather(
            *(
                loop.run_in_executor(pool, _drain_parts, db_path, f"p{n}", barrier)
                for n in range(takers)
            )
        )
    taken = [key for got in results for key in got]
    assert sorted(taken) == sorted(planned)
