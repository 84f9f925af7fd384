"""Issue 4 end to end: the service on yandex + s3 against a local S3 server and a fake SpeechKit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from tests.support.fake_speechkit import API_KEY, FakeSpeechKit
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoS3
from tests.support.service import TERMINAL_STATES, Service, running_service


def yandex_config(moto: MotoS3, bucket: str, fake: FakeSpeechKit) -> dict[str, dict[str, Any]]:
    """A config that points the service at the local peers only."""
    return {
        "recognizer": {"kind": "yandex"},
        "yandex": {
            "api_key": API_KEY,
            "stt_url": fake.stt_url,
            "operation_url": fake.operation_url,
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
    """An upload goes through Object Storage and SpeechKit to done; the bucket ends empty."""
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
