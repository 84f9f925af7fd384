"""A summary is a unit of work (ADR 83): it survives a killed worker, an outage, a restart, a race.

The real ``openai`` client talks to the fake chat server on 127.0.0.1; the
SQLite store judges leases and pauses by the test's clock, and every wait
is on a condition (a request received, a wake-up), never a sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer, Reply
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, LlmConfig, StorageConfig, WorkersConfig
from transcriber_contracts.repository_support import make_job
from transcriber_core.entities import Job, Speaker, State, Word
from transcriber_core.summaries import Summary, SummaryState
from transcriber_core.summary_steps import acquire_next_summary, process_summary, request

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
#: Longest wait for a condition; a healthy run takes milliseconds.
PATIENCE = 30.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeChatServer]:
    """The chat server the runtime's ``[llm]`` names."""
    async with FakeChatServer() as server:
        yield server


def _config(data_dir: Path, fake: FakeChatServer, **workers: int) -> Config:
    return Config(
        storage=StorageConfig(data_dir=data_dir),
        llm=LlmConfig(base_url=fake.base_url, api_key=API_KEY, model=MODEL, timeout_seconds=5.0),
        workers=WorkersConfig(**workers) if workers else WorkersConfig(),
    )


@pytest.fixture
async def runtime(
    tmp_path: Path, clock: ManualClock, fake: FakeChatServer
) -> AsyncIterator[Runtime]:
    """A runtime on SQLite with ``[llm]`` on the fake; the test runs the summaries."""
    built = await build(_config(tmp_path / "data", fake), clock=clock)
    yield built
    await built.close()


def _done_job(created: datetime = T0) -> Job:
    words = (
        Word(text="We", start=0.0, end=0.4, speaker="S1"),
        Word(text="ship", start=0.4, end=0.9, speaker="S1"),
        Word(text="Friday.", start=0.9, end=1.5, speaker="S1"),
        Word(text="Agreed.", start=2.0, end=2.6, speaker="S2"),
    )
    return make_job(
        created=created,
        state=State.DONE,
        text="We ship Friday. Agreed.",
        words=words,
        speakers=(Speaker(id="S1", name="Diane"), Speaker(id="S2", name="Omar")),
        duration=3.0,
        ended=created,
    )


async def _asked(runtime: Runtime) -> Job:
    """A done job in the store, its summary asked for."""
    job, _ = await runtime.services.jobs.create(_done_job())
    await request(runtime.services, job.id)
    return job


async def _summary(runtime: Runtime, job: Job) -> Summary:
    assert runtime.services.summaries is not None
    found = await runtime.services.summaries.get_summary(job.id)
    assert found is not None
    return found


async def _received(fake: FakeChatServer, count: int) -> None:
    """Wait until the fake has received ``count`` requests."""
    async with asyncio.timeout(PATIENCE):
        while len(fake.requests) < count:
            fake.received.clear()
            await fake.received.wait()


async def test_a_killed_worker_s_summary_is_finished_by_another(
    runtime: Runtime, fake: FakeChatServer, clock: ManualClock
) -> None:
    """A stuck worker: once its lease is old another finishes it; the first is fenced."""
    job = await _asked(runtime)
    stuck = asyncio.Event()
    fake.answer_next(Reply(until=stuck))
    first = await acquire_next_summary(runtime.services)
    assert first is not None
    killed = asyncio.create_task(process_summary(runtime.services, first))
    await _received(fake, 1)
    # The first worker says nothing any more; its lease grows old on the store's clock.
    clock.advance(runtime.services.settings.lease)
    second = await acquire_next_summary(runtime.services)
    assert second is not None
    assert second.summary.attempts == 2
    assert (await process_summary(runtime.services, second)) is not None
    built = await _summary(runtime, job)
    assert built.state is SummaryState.DONE
    # The first one's answer comes at last: its save is fenced out, writing nothing.
    stuck.set()
    assert await killed is None
    assert await _summary(runtime, job) == built


async def test_a_server_down_for_a_while_delays_the_summary(
    runtime: Runtime, fake: FakeChatServer, clock: ManualClock
) -> None:
    """Connections refused: pending with the reason and a pause; the server back: built."""
    job = await _asked(runtime)
    await fake.stop()
    lease = await acquire_next_summary(runtime.services)
    assert lease is not None
    await process_summary(runtime.services, lease)
    waiting = await _summary(runtime, job)
    assert waiting.state is SummaryState.PENDING
    assert waiting.error == "the language model's server cannot be reached"
    assert waiting.delay_time is not None
    assert await acquire_next_summary(runtime.services) is None
    await fake.start()
    clock.set(waiting.delay_time)
    lease = await acquire_next_summary(runtime.services)
    assert lease is not None
    await process_summary(runtime.services, lease)
    assert (await _summary(runtime, job)).state is SummaryState.DONE
    assert len(fake.requests) == 1


async def test_two_workers_racing_make_one_model_call(
    runtime: Runtime, tmp_path: Path, fake: FakeChatServer, clock: ManualClock
) -> None:
    """Two worker processes' runtimes (a connection each) race for one summary: one request."""
    job = await _asked(runtime)
    other = await build(_config(tmp_path / "data", fake), clock=clock, intake=False)
    try:
        hold = asyncio.Event()
        fake.answer_next(Reply(until=hold))

        async def worker(on: Runtime) -> bool:
            lease = await acquire_next_summary(on.services)
            if lease is None:
                return False
            await process_summary(on.services, lease)
            return True

        racing = [asyncio.create_task(worker(r)) for r in (runtime, other)]
        await _received(fake, 1)
        done, _ = await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        assert [task.result() for task in done] == [False]
        hold.set()
        assert sorted(await asyncio.gather(*racing)) == [False, True]
    finally:
        await other.close()
    assert (await _summary(runtime, job)).state is SummaryState.DONE
    assert len(fake.requests) == 1


async def test_a_pending_summary_survives_a_restart(
    tmp_path: Path, fake: FakeChatServer, clock: ManualClock
) -> None:
    """Asked for, then the service stops: the next start builds it from the same database."""
    data_dir = tmp_path / "data"
    first = await build(_config(data_dir, fake), clock=clock)
    try:
        job = await _asked(first)
    finally:
        await first.close()
    again = await build(_config(data_dir, fake), clock=clock)
    try:
        lease = await acquire_next_summary(again.services)
        assert lease is not None
        await process_summary(again.services, lease)
        built = await _summary(again, job)
    finally:
        await again.close()
    assert built.state is SummaryState.DONE
    assert built.text is not None
    assert "Diane" in built.text
    assert " Diane: We ship Friday." in fake.requests[0].text
    assert " Omar: Agreed." in fake.requests[0].text


async def test_the_workers_summary_loop_builds_it(tmp_path: Path, fake: FakeChatServer) -> None:
    """Started workers run a summary loop: a summary asked for is built without a hand on it."""
    runtime = await build(_config(tmp_path / "data", fake, convert=0, recognize=0, check=1))
    try:
        before = asyncio.all_tasks()
        runtime.workers.start()
        assert "transcriber-summaries" in {t.get_name() for t in asyncio.all_tasks() - before}
        job, _ = await runtime.services.jobs.create(_done_job(datetime.now(UTC)))
        token = runtime.services.wakeup.job_token(job.id)
        await request(runtime.services, job.id)
        async with asyncio.timeout(PATIENCE):
            while (await _summary(runtime, job)).state is not SummaryState.DONE:
                await token.wait()
                token = runtime.services.wakeup.job_token(job.id)
        await runtime.workers.drain(0)
    finally:
        await runtime.close()
