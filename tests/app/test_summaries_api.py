"""Summaries and questions in-process (SPEC §27): the real ``openai`` client, a fake chat server.

The app is built with ``[llm]`` pointing at ``tests/support/fake_chat.py``
on 127.0.0.1; the test runs the job's steps and the summary's work itself
(``acquire_next_summary``, ``process_summary``), so nothing waits on time.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from tests.app.test_voices_api import STATIC, transcribed
from tests.support.admin import in_process_client
from tests.support.fake_chat import API_KEY, MODEL, FakeChatServer, Reply
from tests.support.media import tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, LlmConfig, MemoryConfig, StorageConfig
from transcriber_core.budgets import burst_of
from transcriber_core.entities import State
from transcriber_core.policy import ASK_CAPACITY, ASK_PER
from transcriber_core.summary_steps import acquire_next_summary, process_summary
from transcriber_core.worker import acquire_next, process

#: Three sentences, two voices taking turns.
TEXT = "We ship the release on Friday. Diane writes the notes. Then we celebrate."
HEADERS = {"Authorization": f"Bearer {STATIC}"}


@pytest.fixture
async def fake() -> AsyncIterator[FakeChatServer]:
    """The chat server the runtime's ``[llm]`` names."""
    async with FakeChatServer() as server:
        yield server


def _config(tmp_path: Path, fake: FakeChatServer | None, text: str = TEXT, **llm: Any) -> Config:
    return Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123, api_tokens=(STATIC,)),
        memory=MemoryConfig(text=text, speakers=2),
        llm=None
        if fake is None
        else LlmConfig(
            base_url=fake.base_url,
            api_key=API_KEY,
            model=MODEL,
            timeout_seconds=5.0,
            **llm,
        ),
    )


@pytest.fixture
async def runtime(
    tmp_path: Path, clock: ManualClock, fake: FakeChatServer
) -> AsyncIterator[Runtime]:
    """A runtime with ``[llm]`` on the fake; steps and summaries run by the test."""
    built = await build(_config(tmp_path, fake), clock=clock)
    yield built
    await built.close()


@pytest.fixture
async def client(runtime: Runtime) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app over ``runtime``."""
    async with in_process_client(runtime) as found:
        yield found


@pytest.fixture
def wav(tmp_path: Path) -> bytes:
    """A short real recording."""
    return tone(tmp_path / "tone.wav", 1.0).read_bytes()


async def run_summaries(runtime: Runtime) -> int:
    """Build every summary due now; how many were taken."""
    taken = 0
    while (lease := await acquire_next_summary(runtime.services)) is not None:
        await process_summary(runtime.services, lease)
        taken += 1
    return taken


async def _summary(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    answer = await client.get(f"/api/jobs/{job_id}/summary", headers=HEADERS)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def test_without_llm_the_routes_answer_llm_unavailable(tmp_path: Path, wav: bytes) -> None:
    """No ``[llm]``: the summary and question routes of a job are 404 ``llm_unavailable``."""
    runtime = await build(_config(tmp_path, None))
    try:
        async with in_process_client(runtime) as client:
            job_id = await _upload_and_transcribe(runtime, client, wav)
            for method, path in (
                ("POST", f"/api/jobs/{job_id}/summary"),
                ("GET", f"/api/jobs/{job_id}/summary"),
                ("POST", f"/api/jobs/{job_id}/ask"),
            ):
                answer = await client.request(method, path, headers=HEADERS, json={})
                assert answer.status_code == 404, answer.text
                assert answer.json()["error"] == "llm_unavailable"
    finally:
        await runtime.close()


async def test_summary_asked_at_upload_is_built_from_the_named_transcript(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, fake: FakeChatServer
) -> None:
    """``summary=true`` queues it; once done it names the speakers, and the server got the words."""
    job_id = await _upload_and_transcribe(runtime, client, wav, summary="true")
    assert (await _summary(client, job_id))["state"] == "pending"
    assert await run_summaries(runtime) == 1
    summary = await _summary(client, job_id)
    assert summary["state"] == "done", summary
    assert summary["model"] == MODEL
    assert summary["stale"] is False
    assert summary["created"]
    assert summary["points"]
    assert summary["actions"][0]["text"] == "send the report"
    [request] = fake.requests
    assert request.model == MODEL
    assert request.authorization == f"Bearer {API_KEY}"
    assert request.response_format == {"type": "json_object"}
    assert "We ship the release on Friday." in request.text
    speakers = [s["name"] for s in (await _status(client, job_id))["speakers"]]
    assert len(speakers) == 2
    for name in speakers:
        assert f" {name}: " in request.text
        assert name in summary["text"]
    # The recording is done whatever its summary is.
    assert (await runtime.services.jobs.get(job_id)).state is State.DONE


async def test_summary_is_asked_for_later_and_goes_stale_after_a_rename(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, fake: FakeChatServer
) -> None:
    """Never asked: 404; POST: 202 pending; renamed speakers: stale; asked again: rebuilt."""
    job_id = await _upload_and_transcribe(runtime, client, wav)
    never = await client.get(f"/api/jobs/{job_id}/summary", headers=HEADERS)
    assert (never.status_code, never.json()["error"]) == (404, "summary_not_found")
    asked = await client.post(f"/api/jobs/{job_id}/summary", headers=HEADERS)
    assert asked.status_code == 202, asked.text
    assert asked.json()["state"] == "pending"
    await run_summaries(runtime)
    assert (await _summary(client, job_id))["stale"] is False
    renamed = await client.patch(
        f"/api/jobs/{job_id}/speakers", headers=HEADERS, json={"S1": "Diane"}
    )
    assert renamed.status_code == 200, renamed.text
    assert (await _summary(client, job_id))["stale"] is True
    await client.post(f"/api/jobs/{job_id}/summary", headers=HEADERS)
    await run_summaries(runtime)
    rebuilt = await _summary(client, job_id)
    assert (rebuilt["state"], rebuilt["stale"]) == ("done", False)
    assert "Diane:" in fake.requests[-1].text


async def test_asked_twice_while_pending_it_is_built_once(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, fake: FakeChatServer
) -> None:
    """A second POST while the summary is pending changes nothing: one build, one request."""
    job_id = await _upload_and_transcribe(runtime, client, wav)
    first = await client.post(f"/api/jobs/{job_id}/summary", headers=HEADERS)
    again = await client.post(f"/api/jobs/{job_id}/summary", headers=HEADERS)
    assert (first.status_code, again.status_code) == (202, 202)
    assert await run_summaries(runtime) == 1
    assert len(fake.requests) == 1


async def test_a_summary_of_a_recording_that_failed_has_failed(
    tmp_path: Path, clock: ManualClock, fake: FakeChatServer, wav: bytes
) -> None:
    """``summary=true`` on a recording the recognizer rejects: the summary shows failed, unbuilt."""
    config = _config(tmp_path, fake)
    config = attrs.evolve(config, memory=MemoryConfig(fail_with="unreadable"))
    runtime = await build(config, clock=clock)
    try:
        async with in_process_client(runtime) as client:
            sent = await client.post(
                "/api/audio",
                files={"file": ("a.wav", wav, "audio/wav")},
                data={"summary": "true"},
                headers=HEADERS,
            )
            job_id = sent.json()["job_id"]
            for _ in range(10):
                job = await runtime.services.jobs.get(job_id)
                if job.state.is_terminal:
                    break
                lease = await acquire_next(runtime.services, job.state)
                assert lease is not None
                await process(runtime.services, lease)
            assert job.state is State.FAILED
            summary = await _summary(client, job_id)
            assert await run_summaries(runtime) == 0
    finally:
        await runtime.close()
    assert (summary["state"], summary["error"]) == ("failed", "the recording was not transcribed")
    assert fake.requests == []


async def test_before_done_a_summary_or_a_question_is_not_done(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes
) -> None:
    """A recording still in the queue answers 409 ``not_done``; another's job 404."""
    sent = await client.post(
        "/api/audio", files={"file": ("a.wav", wav, "audio/wav")}, headers=HEADERS
    )
    job_id = sent.json()["job_id"]
    for method, path, body in (
        ("POST", f"/api/jobs/{job_id}/summary", None),
        ("POST", f"/api/jobs/{job_id}/ask", {"question": "What?"}),
    ):
        answer = await client.request(method, path, headers=HEADERS, json=body)
        assert (answer.status_code, answer.json()["error"]) == (409, "not_done")
    unknown = await client.post("/api/jobs/no-such-job/summary", headers=HEADERS)
    assert (unknown.status_code, unknown.json()["error"]) == (404, "job_not_found")


async def test_a_question_is_answered_with_real_transcript_times(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, fake: FakeChatServer
) -> None:
    """The answer's quotes are transcript lines with their own times, never the model's."""
    job_id = await _upload_and_transcribe(runtime, client, wav)
    fake.answer_next(json.dumps({"answer": "On Friday.", "lines": [1, 99, "[2]", "x"]}))
    answer = await client.post(
        f"/api/jobs/{job_id}/ask", headers=HEADERS, json={"question": "When do we ship?"}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["answer"] == "On Friday."
    segments = (
        await client.get(f"/api/jobs/{job_id}/transcript?format=json", headers=HEADERS)
    ).json()["segments"]
    starts = {s["start"] for s in segments}
    ends = {s["end"] for s in segments}
    assert [q["start"] in starts and q["end"] in ends for q in body["quotes"]] == [True, True]
    assert "Friday" in body["quotes"][0]["text"]
    assert "When do we ship?" in fake.requests[-1].text
    bad = await client.post(f"/api/jobs/{job_id}/ask", headers=HEADERS, json={"q": 1})
    assert (bad.status_code, bad.json()["error"]) == (400, "bad_question")


async def test_questions_past_the_owners_pace_are_429_until_it_fills_again(
    runtime: Runtime,
    client: httpx.AsyncClient,
    wav: bytes,
    fake: FakeChatServer,
    clock: ManualClock,
) -> None:
    """A burst of questions is answered; the next is 429 with Retry-After, unsent; later, one."""
    job_id = await _upload_and_transcribe(runtime, client, wav)
    path = f"/api/jobs/{job_id}/ask"
    burst = burst_of(ASK_CAPACITY)
    assert burst >= 10
    for _ in range(burst):
        answered = await client.post(path, headers=HEADERS, json={"question": "Who?"})
        assert answered.status_code == 200, answered.text
    sent = len(fake.requests)
    over = await client.post(path, headers=HEADERS, json={"question": "Who?"})
    assert (over.status_code, over.json()["error"]) == (429, "too_many_questions")
    refill = ASK_PER / (ASK_CAPACITY - burst)
    assert int(over.headers["Retry-After"]) == math.ceil(refill.total_seconds())
    assert len(fake.requests) == sent
    clock.advance(refill)
    again = await client.post(path, headers=HEADERS, json={"question": "Who?"})
    assert again.status_code == 200, again.text
    still = await client.post(path, headers=HEADERS, json={"question": "Who?"})
    assert still.status_code == 429


async def test_a_pending_summary_shows_in_metrics(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes
) -> None:
    """A summary asked for and not yet built is ``transcriber_summaries_pending`` 1."""
    await _upload_and_transcribe(runtime, client, wav, summary="true")
    scraped = await client.get("/metrics")
    assert scraped.status_code == 200
    assert "\ntranscriber_summaries_pending 1.0\n" in scraped.text


async def test_a_question_the_server_cannot_answer_now_is_503(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, fake: FakeChatServer
) -> None:
    """429 from the model's server: 503 ``model_unavailable`` with Retry-After; 401: 502."""
    job_id = await _upload_and_transcribe(runtime, client, wav)
    fake.answer_next(Reply(status=429), Reply(status=401))
    path = f"/api/jobs/{job_id}/ask"
    busy = await client.post(path, headers=HEADERS, json={"question": "Who?"})
    assert (busy.status_code, busy.json()["error"]) == (503, "model_unavailable")
    assert busy.headers["Retry-After"]
    refused = await client.post(path, headers=HEADERS, json={"question": "Who?"})
    assert (refused.status_code, refused.json()["error"]) == (502, "model_refused")
    assert "Friday" not in refused.text


async def test_throttled_and_malformed_answers_are_retried_then_built(
    runtime: Runtime,
    client: httpx.AsyncClient,
    wav: bytes,
    fake: FakeChatServer,
    clock: ManualClock,
) -> None:
    """429, then 500, then prose without JSON: each a retry after its pause; then done."""
    job_id = await _upload_and_transcribe(runtime, client, wav, summary="true")
    fake.answer_next(Reply(status=429), Reply(status=500), "Sure! Here is a summary of it.")
    for _ in range(3):
        assert await run_summaries(runtime) == 1
        pending = await _summary(client, job_id)
        assert pending["state"] == "pending", pending
        assert pending["error"]
        assert await run_summaries(runtime) == 0  # its pause has not passed
        clock.advance(runtime.services.settings.retry_cap)
    assert await run_summaries(runtime) == 1
    done = await _summary(client, job_id)
    assert done["state"] == "done"
    assert "error" not in done
    assert len(fake.requests) == 4


async def test_a_refusal_fails_the_summary_not_the_recording(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, fake: FakeChatServer
) -> None:
    """A 404 from the model's server fails the summary with its reason, once; the job stays done."""
    job_id = await _upload_and_transcribe(runtime, client, wav, summary="true")
    fake.answer_next(Reply(status=404))
    await run_summaries(runtime)
    failed = await _summary(client, job_id)
    assert failed["state"] == "failed"
    assert "404" in failed["error"]
    assert "model" in failed["error"]
    assert await run_summaries(runtime) == 0
    assert len(fake.requests) == 1
    assert (await runtime.services.jobs.get(job_id)).state is State.DONE


async def test_an_answer_that_is_never_json_fails_after_the_attempts(
    runtime: Runtime,
    client: httpx.AsyncClient,
    wav: bytes,
    fake: FakeChatServer,
    clock: ManualClock,
) -> None:
    """A model that never answers JSON: retried up to the attempt limit, then failed; no 500."""
    job_id = await _upload_and_transcribe(runtime, client, wav, summary="true")
    attempts = runtime.services.settings.max_attempts
    fake.answer_next(*["no json here"] * attempts)
    for _ in range(attempts + 1):
        await run_summaries(runtime)
        clock.advance(runtime.services.settings.retry_cap)
    failed = await _summary(client, job_id)
    assert failed["state"] == "failed"
    assert "attempts" in failed["error"]
    assert len(fake.requests) == attempts


async def test_a_long_transcript_goes_in_pieces_none_over_the_limit(
    tmp_path: Path, clock: ManualClock, fake: FakeChatServer, wav: bytes
) -> None:
    """Over ``max_input_tokens``: pieces, then their summaries combined; no request over it."""
    limit = 1000
    fake.limit_tokens = limit
    long_text = " ".join(f"Sentence number {n} says something worth keeping." for n in range(400))
    runtime = await build(_config(tmp_path, fake, long_text, max_input_tokens=limit), clock=clock)
    try:
        async with in_process_client(runtime) as client:
            job_id = await _upload_and_transcribe(runtime, client, wav, summary="true")
            await run_summaries(runtime)
            summary = await _summary(client, job_id)
    finally:
        await runtime.close()
    assert summary["state"] == "done", summary
    assert len(fake.requests) > 3
    assert max(r.tokens for r in fake.requests) <= limit
    heard = "\n".join(r.text for r in fake.requests)
    assert "Sentence number 0 " in heard
    assert "Sentence number 399 " in heard
    assert "combine" in fake.requests[-1].messages[0]["content"]


async def test_a_deleted_recording_takes_its_summary(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes
) -> None:
    """Deleting the job deletes its summary; nothing of it is left to build."""
    job_id = await _upload_and_transcribe(runtime, client, wav, summary="true")
    deleted = await client.delete(f"/api/jobs/{job_id}", headers=HEADERS)
    assert deleted.status_code == 204
    assert runtime.services.summaries is not None
    assert await runtime.services.summaries.get_summary(job_id) is None
    assert await run_summaries(runtime) == 0


async def test_a_summary_field_that_is_neither_yes_nor_no_is_refused(
    client: httpx.AsyncClient, wav: bytes
) -> None:
    """``summary=maybe`` at upload: 400 ``bad_summary``."""
    answer = await client.post(
        "/api/audio",
        files={"file": ("a.wav", wav, "audio/wav")},
        data={"summary": "maybe"},
        headers=HEADERS,
    )
    assert (answer.status_code, answer.json()["error"]) == (400, "bad_summary")


async def test_auto_summary_asks_for_every_recording(
    tmp_path: Path, clock: ManualClock, fake: FakeChatServer, wav: bytes
) -> None:
    """``[llm] auto_summary``: a recording sent without ``summary`` is summarised; ``false`` not."""
    runtime = await build(_config(tmp_path, fake, auto_summary=True), clock=clock)
    try:
        async with in_process_client(runtime) as client:
            auto = await _upload_and_transcribe(runtime, client, wav)
            off = await _upload_and_transcribe(runtime, client, wav, summary="false")
            assert await run_summaries(runtime) == 1
            assert (await _summary(client, auto))["state"] == "done"
            none = await client.get(f"/api/jobs/{off}/summary", headers=HEADERS)
            assert none.status_code == 404
    finally:
        await runtime.close()


async def _upload_and_transcribe(
    runtime: Runtime, client: httpx.AsyncClient, wav: bytes, summary: str | None = None
) -> str:
    """Send ``wav`` (with ``summary`` when given) asking for speakers; run it to done."""
    fields = {} if summary is None else {"summary": summary}
    return await transcribed(runtime, client, wav, STATIC, **fields)


async def _status(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    answer = await client.get(f"/api/status/{job_id}", headers=HEADERS)
    found: dict[str, Any] = answer.json()
    return found
