"""The contract every JobRepository adapter passes: the union of one suite per role (ADR 40).

Use it from your own tests::

    class TestMyRepository(JobRepositoryContract):
        @pytest.fixture
        async def repo(self, clock, tmp_path):
            repo = await MyRepository.open(tmp_path / "jobs.db", clock=clock)
            yield repo
            await repo.close()

        @pytest.fixture
        async def another_repo(self, clock, tmp_path):
            opened = []

            async def another():
                opened.append(await MyRepository.open(tmp_path / "jobs.db", clock=clock))
                return opened[-1]

            yield another
            for repo in opened:
                await repo.close()

``repo`` must yield a fresh, empty repository whose clock is the suite's
``clock`` (a ``ManualClock`` the suite moves: the store judges every lease
and delay by it, ADR 30). ``another_repo`` must yield an async function that
opens one more independent instance on the same database and clock (its own
connection, as a second process would have); the race tests run several at
once. Under pytest-asyncio's strict mode, decorate async fixtures with
``pytest_asyncio.fixture``. Every time is timezone-aware and fixed; nothing
reads the system clock.

The suites, one module each: ``jobs.JobsContract``, ``queue.QueueContract``,
``progress.ProgressContract``, ``links.LinksContract``, ``file_records.FileRecordsContract``,
``listings.ListingsContract`` (all five in ``JobRepositoryContract``), ``outbox.OutboxContract`` and
``removals.RemovalsContract`` (also ``JobLifecycleContract``); their shared
jobs and helpers are in ``repository_support``.
"""

from __future__ import annotations

from transcriber_contracts.file_records import FileRecordsContract
from transcriber_contracts.jobs import JobsContract
from transcriber_contracts.links import LinksContract
from transcriber_contracts.listings import ListingsContract
from transcriber_contracts.progress import ProgressContract
from transcriber_contracts.queue import QueueContract
from transcriber_contracts.removals import FILES_AGE, JOBS_AGE, RemovalsContract
from transcriber_contracts.repository_support import (
    DIGEST,
    LEASE,
    MICROSECOND,
    NOW,
    T0,
    OpenAnother,
    RepositorySuite,
    acquire,
    check_one_winner,
    create,
    make_file,
    make_job,
    new_id,
    position,
    renew,
    states_ready,
    stored,
)

__all__ = [
    "DIGEST",
    "FILES_AGE",
    "JOBS_AGE",
    "LEASE",
    "MICROSECOND",
    "NOW",
    "T0",
    "FileRecordsContract",
    "JobLifecycleContract",
    "JobRepositoryContract",
    "JobsContract",
    "LinksContract",
    "ListingsContract",
    "OpenAnother",
    "ProgressContract",
    "QueueContract",
    "RemovalsContract",
    "RepositorySuite",
    "acquire",
    "check_one_winner",
    "create",
    "make_file",
    "make_job",
    "new_id",
    "position",
    "renew",
    "states_ready",
    "stored",
]


class JobRepositoryContract(
    JobsContract,
    QueueContract,
    ProgressContract,
    LinksContract,
    FileRecordsContract,
    ListingsContract,
):
    """Subclass and provide the fixtures ``repo`` and ``another_repo`` (module docstring)."""


#: Deletion, sweep leases and retention, by the name it had before the split.
JobLifecycleContract = RemovalsContract
