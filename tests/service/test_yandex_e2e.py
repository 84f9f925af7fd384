"""Issue 4 end to end: the service on yandex + s3 against a local S3 server and a fake SpeechKit."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx

from tests.support.fake_speechkit import API_KEY, FakeSpeechKit
from tests.support.media import tone
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoS3
from tests.support.service import TERMINAL_STATES, Service, running_service


def yandex_config(
    moto: MotoS3,
    bucket: str,
    fake: FakeSpeechKit,
    *,
    sync_max_seconds: float = 0,
    async_api: str | None = "v2",
) -> dict[str, dict[str, Any]]:
    """A config that points the service at the local peers only; async only unless told.

    The tests written on v2 keep ``async_api = "v2"``; None leaves the default (v3).
    """
    chosen = {} if async_api is None else {"async_api": async_api}
    return {
        "recognizer": {"kind": "yandex"},
        "yandex": {
            **chosen,
            "api_key": API_KEY,
            "stt_url": fake.stt_url,
            "operation_url": fake.operation_url,
            "v3_url": fake.v3_url,
            "sync_url": fake.sync_url,
            "sync_max_seconds": sync_max_seconds,
        },
        "s3": {
            "endpoint_url": moto.endpoint_url,
            "region": REGION,
            "bucket": bucket,
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
            "path_style": True,
        },
    }


async def finished(service: Service, job_id: str) -> dict[str, Any]:
    """Poll the status route (a separate process) until the job ends, without blocking the fake."""
    async with (
        httpx.AsyncClient(base_url=service.base_url, timeout=5) as client,
        asyncio.timeout(40),
    ):
        while True:
            body: dict[str, Any] = (await client.get(f"/api/status/{job_id}")).json()
            if body["state"] in TERMINAL_STATES:
                return body
            await asyncio.sleep(0.1)


async def upload(service: Service, data: bytes, name: str) -> str:
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        response = await client.post("/api/audio", files={"file": (name, data, "audio/mpeg")})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["job_id"]
    return job_id


async def test_upload_reaches_done_with_speechkit_text(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes
) -> None:
    """An upload goes through Object Storage and SpeechKit to done, words timed; bucket emptied."""
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next("привет из спичкита", pending_checks=1)
        config = yandex_config(moto_s3, bucket, fake)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, recording, "голосовое.mp3")
            body = await finished(service, job_id)
            assert body["state"] == "done", body
            assert body["text"] == "привет из спичкита"
            async with httpx.AsyncClient(base_url=service.base_url, timeout=5) as client:
                answer = await client.get(f"/api/jobs/{job_id}/transcript?format=json")
            # SpeechKit's word timings reach the transcript (ADR 34).
            timed = [(w["word"], w["start"]) for w in answer.json()["words"]]
            assert timed == [
                ("привет", 0.879999999),
                ("из", 1.379999999),
                ("спичкита", 1.879999999),
            ]
            starts = fake.requests_to("/speech")
            assert len(starts) == 1
            uri = starts[0].body["audio"]["uri"]
            assert moto_s3.keys(bucket) == []
            assert moto_s3.pending_uploads(bucket) == []
            logs = service.logs()
    object_key = uri.split(f"/{bucket}/", 1)[1]
    assert object_key not in logs
    assert uri not in logs
    assert bucket not in logs
    assert API_KEY not in logs


async def test_rejected_recognition_fails_and_empties_the_bucket(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes
) -> None:
    """SpeechKit's done-without-chunks fails the job with a clear reason and removes the copy."""
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.no_chunks_next()
        config = yandex_config(moto_s3, bucket, fake)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, recording, "voice.mp3")
            body = await finished(service, job_id)
    assert body["state"] == "failed"
    assert body["error"] == "no speech recognised"
    assert moto_s3.keys(bucket) == []


async def test_short_clip_is_done_through_the_sync_api(tmp_path: Path, moto_s3: MotoS3) -> None:
    """A 10 s clip ends done through v1: no async operation, and Object Storage is never used.

    The configured bucket does not even exist: any copy to it would fail the
    step, so a job that ends done never touched Object Storage.
    """
    clip = tone(tmp_path / "note.mp3", 10).read_bytes()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next("короткое голосовое")
        config = yandex_config(moto_s3, "no-such-bucket", fake, sync_max_seconds=30)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, clip, "note.mp3")
            body = await finished(service, job_id)
            metrics = await scrape(service)
    assert body["state"] == "done", body
    assert body["text"] == "короткое голосовое"
    assert [r.path for r in fake.requests] == ["/speech/v1/stt:recognize"]
    assert fake.requests[0].query["format"] == "oggopus"
    assert fake.requests_to("/operations") == []
    assert 'transcriber_speechkit_requests_total{api="sync",outcome="ok"} 1.0' in metrics
    assert 'transcriber_speechkit_audio_seconds_total{api="sync"} 10.' in metrics
    level = re.search(
        r'transcriber_speechkit_budget_tokens\{budget="speechkit.sync"\} (\S+)', metrics
    )
    assert level is not None
    # The burst of 20/s is 2; one was taken moments ago and comes back at 18 a second.
    assert 1.0 <= float(level.group(1)) <= 2.0


async def test_two_minute_clip_takes_the_async_path(tmp_path: Path, moto_s3: MotoS3) -> None:
    """A 2 min clip is copied to Object Storage, started and checked; the bucket ends empty."""
    clip = tone(tmp_path / "long.mp3", 120).read_bytes()
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next("длинное голосовое")
        config = yandex_config(moto_s3, bucket, fake, sync_max_seconds=30)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, clip, "long.mp3")
            body = await finished(service, job_id)
    assert body["state"] == "done", body
    assert body["text"] == "длинное голосовое"
    assert fake.requests_to("/speech/v1") == []
    assert len(fake.requests_to("/speech/stt/v2")) == 1
    assert moto_s3.keys(bucket) == []


async def test_sync_refusal_for_size_falls_back_to_async(tmp_path: Path, moto_s3: MotoS3) -> None:
    """The sync API's 400 for a body past its limit sends the job async: done, not failed."""
    clip = tone(tmp_path / "note.mp3", 10).read_bytes()
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url, sync_max_bytes=1_000) as fake:
        fake.finish_next("через асинхронный путь")
        config = yandex_config(moto_s3, bucket, fake, sync_max_seconds=30)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, clip, "note.mp3")
            body = await finished(service, job_id)
    assert body["state"] == "done", body
    assert body["text"] == "через асинхронный путь"
    assert [r.path for r in fake.requests][:2] == [
        "/speech/v1/stt:recognize",
        "/speech/stt/v2/longRunningRecognize",
    ]
    assert moto_s3.keys(bucket) == []


async def scrape(service: Service) -> str:
    """The service's /metrics text."""
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        response = await client.get("/metrics")
    assert response.status_code == 200
    return response.text


def metric(text: str, series: str) -> float:
    """The value of one series in a Prometheus exposition."""
    found = re.search(re.escape(series) + r" (\S+)", text)
    assert found is not None, series
    return float(found.group(1))


async def test_delete_of_a_job_waiting_on_a_throttled_start_empties_the_bucket(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes
) -> None:
    """A job copied to the bucket and waiting on a 429 is deleted: its copy goes too."""
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.status_next_start(429, retry_after="120")
        config = yandex_config(moto_s3, bucket, fake)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, recording, "voice.mp3")
            # In a thread: the fake answering the start runs on this loop.
            await asyncio.to_thread(service.wait_for_log, "step.service_condition", job_id)
            assert len(fake.requests_to("/speech")) == 1
            assert len(moto_s3.keys(bucket)) == 1, "the copy waits in the bucket with its job"
            async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
                assert (await client.delete(f"/api/jobs/{job_id}")).status_code == 204
            assert moto_s3.keys(bucket) == []
            assert service.query("SELECT count(*) FROM files") == [(0,)]


async def upload_with(service: Service, data: bytes, name: str, **fields: str) -> str:
    """Upload with form fields (``speakers``, ``language``); the job's id."""
    async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
        response = await client.post(
            "/api/audio", files={"file": (name, data, "audio/mpeg")}, data=fields
        )
    assert response.status_code == 202, response.text
    job_id: str = response.json()["job_id"]
    return job_id


async def test_v3_labels_speakers_detects_the_language_and_normalises(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes
) -> None:
    """On the default (v3), speakers=auto and language=auto come back from SpeechKit itself."""
    bucket = moto_s3.new_bucket()
    turns = [("0", "Добрый день, Диана."), ("1", "Встреча в 10 часов?"), ("0", "Да.")]
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next_dialogue(turns, pending_checks=1)
        config = yandex_config(moto_s3, bucket, fake, async_api=None)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload_with(service, recording, "call.mp3", speakers="auto")
            body = await finished(service, job_id)
            async with httpx.AsyncClient(base_url=service.base_url, timeout=5) as client:
                document = (await client.get(f"/api/jobs/{job_id}/transcript?format=json")).json()
                srt = (await client.get(f"/api/jobs/{job_id}/transcript?format=srt")).text
    assert body["state"] == "done", body
    # The normalised text (digits, punctuation), not the raw lowercase final.
    assert body["text"] == "Добрый день, Диана. Встреча в 10 часов? Да."
    assert body["language"] == "ru"
    assert body["language_requested"] == "auto"
    assert [s["id"] for s in body["speakers"]] == ["S1", "S2"]
    assert [w["speaker"] for w in document["words"]] == ["S1"] * 3 + ["S2"] * 4 + ["S1"]
    assert {s["speaker"] for s in document["segments"]} == {"S1", "S2"}
    assert "Speaker 2:" in srt
    (start,) = fake.requests_to("/stt/v3/recognizeFileAsync")
    model = start.body["recognitionModel"]
    assert "languageRestriction" not in model
    assert start.body["speakerLabeling"] == {"speakerLabeling": "SPEAKER_LABELING_ENABLED"}
    assert fake.requests_to("/speech") == []
    assert moto_s3.keys(bucket) == []


async def test_v3_short_clip_with_speakers_skips_the_sync_api(
    tmp_path: Path, moto_s3: MotoS3
) -> None:
    """A 10 s clip asking for 2 speakers goes v3 async (v1 has none), in the language asked."""
    clip = tone(tmp_path / "note.mp3", 10).read_bytes()
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next_dialogue([("0", "Hello."), ("1", "Hi there.")], language="en-US")
        config = yandex_config(moto_s3, bucket, fake, sync_max_seconds=30, async_api=None)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload_with(service, clip, "note.mp3", speakers="2", language="en")
            body = await finished(service, job_id)
    assert body["state"] == "done", body
    assert body["text"] == "Hello. Hi there."
    assert [s["name"] for s in body["speakers"]] == ["Speaker 1", "Speaker 2"]
    assert fake.requests_to("/speech/v1") == []
    (start,) = fake.requests_to("/stt/v3/recognizeFileAsync")
    assert start.body["recognitionModel"]["languageRestriction"] == {
        "restrictionType": "WHITELIST",
        "languageCode": ["en-US"],
    }
    assert moto_s3.keys(bucket) == []
