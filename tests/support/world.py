"""A whole pipeline on the memory adapters, for tests that drive steps one by one.

``make_world`` takes another job repository (SQLite in the pipeline tests);
the other ports are always the memory ones, so tests can script them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import attrs

from tests.support.gates import GatedConverter
from transcriber_adapters.memory import (
    ManualClock,
    MemoryConditionStore,
    MemoryConverter,
    MemoryFileStore,
    MemoryJobRepository,
    MemoryNotifier,
    MemoryRecognizer,
)
from transcriber_adapters.system import RandomIds
from transcriber_core.entities import Job, JobPart, Origin, State
from transcriber_core.intake import submit
from transcriber_core.naming import extension_of
from transcriber_core.outbox import deliver_next
from transcriber_core.policy import Settings
from transcriber_core.ports import FileStore, JobRepository
from transcriber_core.services import Services
from transcriber_core.worker import acquire_next, acquire_next_part, process, process_part

#: Settings for tests: real numbers, but a lease short enough to read easily.
TEST_SETTINGS = Settings()
#: The host the world's workers run on, the scope of its disk's conditions.
HOST = "worker-host-a"


@attrs.define
class World:
    """The adapters wired into ``Services``, with handles on each fake."""

    services: Services
    repo: JobRepository
    files: MemoryFileStore
    converter: MemoryConverter
    recognizer: MemoryRecognizer
    notifier: MemoryNotifier
    clock: ManualClock
    conditions: MemoryConditionStore
    tmp: Path
    _uploads: int = 0

    async def submit(
        self,
        data: bytes = b"RIFF fake recording bytes",
        *,
        filename: str = "voice.ogg",
        origin: Origin | None = None,
        dedup_key: str | None = None,
        speakers_wanted: int | None = None,
        owner: str | None = None,
    ) -> Job:
        """Upload ``data`` the way an intake does: a temp file moved into storage."""
        self._uploads += 1
        upload = self.tmp / f"upload-{self._uploads}"
        upload.write_bytes(data)
        job, _ = await submit(
            self.services,
            upload,
            extension=extension_of(filename),
            origin=origin or Origin.telegram(chat_id=7, message_id=70),
            dedup_key=dedup_key,
            speakers_wanted=speakers_wanted,
            owner=owner,
        )
        await self.deliver()
        return job

    async def step(self, state: State) -> Job | None:
        """Acquire one job in ``state``, run its step and send what it owes; None without work."""
        lease = await acquire_next(self.services, state)
        if lease is None:
            await self.deliver()
            return None
        result = await process(self.services, lease)
        await self.deliver()
        return result

    async def deliver(self) -> int:
        """Try every delivery of the outbox that is due now, as a delivery loop would; how many."""
        tried = 0
        while await deliver_next(self.services):
            tried += 1
        return tried

    async def step_part(self) -> JobPart | None:
        """Take the next part of any split job and run its step (ADR 52); None without one."""
        lease = await acquire_next_part(self.services)
        if lease is None:
            return None
        result = await process_part(self.services, lease)
        await self.deliver()
        return result

    async def advance(self, job_id: str) -> bool:
        """Run the job's next step or part, moving the clock past a delay; False once it ended."""
        job = await self.repo.get(job_id)
        if job.state.is_terminal:
            return False
        if job.state is State.CHECK and await self.step_part() is not None:
            return True
        now = self.clock.now()
        if job.delay_time is not None and job.delay_time > now:
            parts = await self.repo.get_parts(job_id)
            dues = [p.delay_time for p in parts if not p.finished and p.delay_time is not None]
            self.clock.set(min([job.delay_time, *(due for due in dues if due > now)]))
            return True
        await self.step(job.state)
        return True

    async def run_to_end(self, job_id: str) -> Job:
        """Run steps and parts, moving the clock past every delay, until the job is terminal."""
        for _ in range(80):
            if not await self.advance(job_id):
                return await self.repo.get(job_id)
        raise AssertionError("job did not finish in 80 steps and parts")

    def gate_converter(self) -> GatedConverter:
        """Swap in a converter that waits inside each call until the test releases it."""
        gate = GatedConverter(self.converter)
        self.services = attrs.evolve(self.services, converter=gate)
        return gate

    def later(self, delta: timedelta) -> None:
        """Move the clock forward."""
        self.clock.advance(delta)


def make_world(
    tmp: Path,
    *,
    settings: Settings = TEST_SETTINGS,
    repo: JobRepository | None = None,
    clock: ManualClock | None = None,
    recognizer_files: FileStore | None = None,
    files: MemoryFileStore | None = None,
) -> World:
    """A fresh world on memory adapters (or the given repository and file store, on ``clock``)."""
    clock = clock or ManualClock()
    files = files if files is not None else MemoryFileStore()
    converter = MemoryConverter()
    recognizer = MemoryRecognizer()
    notifier = MemoryNotifier()
    conditions = MemoryConditionStore(clock)
    repository = repo if repo is not None else MemoryJobRepository(clock)
    services = Services(
        repo=repository,
        files=files,
        converter=converter,
        recognizer=recognizer,
        notifier=notifier,
        clock=clock,
        ids=RandomIds(),
        recognizer_files=recognizer_files,
        conditions=conditions,
        host=HOST,
        settings=settings,
    )
    return World(
        services=services,
        repo=repository,
        files=files,
        converter=converter,
        recognizer=recognizer,
        notifier=notifier,
        clock=clock,
        conditions=conditions,
        tmp=tmp,
    )
