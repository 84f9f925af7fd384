"""Recordings longer than the recognizer takes, through the real service (ADR 26).

The memory recognizer limited to 1 h gets a 2.5 h recording; SpeechKit (a
local fake, with Object Storage on moto) gets one over a limit lowered by
config; a SIGKILL while one part is still recognised costs no second
operation for the parts already done.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.test_yandex_e2e import upload, yandex_config
from tests.support.fake_speechkit import FakeSpeechKit
from tests.support.media import FFMPEG, generate
from tests.support.s3 import MotoS3
from tests.support.service import Service, running_service

#: The memory recognizer's limit in the long test: one hour.
HOUR = 3600
#: 2.5 h of 8 kHz 8-bit mono: 8,000 bytes a second, far above ``min_bytes_per_second``.
LONG_SECONDS = 9000
#: SpeechKit's limit lowered by config for the Yandex tests.
YANDEX_LIMIT = 20
#: The S3 client must never ask for instance metadata.
AWS_ENV = {"AWS_EC2_METADATA_DISABLED": "true"}


def measured_seconds(path: Path) -> float:
    """The length of Ogg audio as ffmpeg reads it to the end (stream copy, no decoding)."""
    result = subprocess.run(
        [
            *(FFMPEG, "-nostdin", "-hide_banner", "-nostats", "-i", str(path)),
            *("-map", "0:a:0", "-c", "copy", "-progress", "pipe:1", "-f", "null", "-"),
        ],
        capture_output=True,
        check=True,
        timeout=60,
        text=True,
    )
    times = [
        int(line.split("=", 1)[1])
        for line in result.stdout.splitlines()
        if line.startswith("out_time_us=") and line.split("=", 1)[1].isdigit()
    ]
    return times[-1] / 1_000_000


async def until(
    service: Service, job_id: str, done: Callable[[dict[str, Any]], bool], seconds: float
) -> dict[str, Any]:
    """Poll the status route (a separate process) until ``done`` holds, never blocking the loop."""
    async with (
        httpx.AsyncClient(base_url=service.base_url, timeout=10) as client,
        asyncio.timeout(seconds),
    ):
        while True:
            body: dict[str, Any] = (await client.get(f"/api/status/{job_id}")).json()
            if done(body) or body["state"] in ("failed", "dead"):
                return body
            await asyncio.sleep(0.1)


def is_done(body: dict[str, Any]) -> bool:
    """The job ended with a transcript."""
    return body["state"] == "done"


def parts_of(service: Service, job_id: str) -> list[tuple[Any, ...]]:
    """Rows of the job's parts: index, start, end, file id, operation id, text."""
    return service.query(
        "SELECT part_index, start_seconds, end_seconds, file_id, operation_id, text"
        " FROM job_parts WHERE job_id = ? ORDER BY part_index",
        (job_id,),
    )


@pytest.fixture(scope="module")
def two_and_a_half_hours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2.5 h tone with a 2 s pause every 500 s, 8 kHz 8-bit mono WAV (72 MB)."""
    return generate(
        tmp_path_factory.mktemp("long") / "long.wav",
        *(
            "-f",
            "lavfi",
            "-i",
            f"aevalsrc=sin(2*PI*440*t)*gte(mod(t\\,500)\\,2):s=8000:d={LONG_SECONDS}",
        ),
        *("-c:a", "pcm_u8"),
    )


@pytest.fixture(scope="module")
def fifty_seconds(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """50 s of tone with pauses at 17-18 s and 35-36 s, 16 kHz mono WAV."""
    return generate(
        tmp_path_factory.mktemp("parts") / "fifty.wav",
        *("-f", "lavfi", "-i"),
        "aevalsrc=sin(2*PI*440*t)*not(between(t\\,17\\,18)+between(t\\,35\\,36)):s=16000:d=50",
    ).read_bytes()


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_two_and_a_half_hours_become_three_parts_within_the_limit(
    tmp_path: Path, two_and_a_half_hours: Path
) -> None:
    """Memory recognizer limited to 1 h: three parts cut in pauses, each ≤ 1 h by ffmpeg, joined."""
    config = {"memory": {"max_seconds": HOUR}}
    with running_service(tmp_path, config=config) as service:
        async with httpx.AsyncClient(base_url=service.base_url, timeout=120) as client:
            with two_and_a_half_hours.open("rb") as data:
                response = await client.post("/api/audio", files={"file": ("long.wav", data)})
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]
        body = await until(service, job_id, is_done, seconds=540)
        assert body["state"] == "done", body
        parts = parts_of(service, job_id)
        [(words_json,)] = service.query("SELECT words FROM jobs WHERE id = ?", (job_id,))
        lengths = [
            measured_seconds(service.data_dir / "files" / f"{file_id}.ogg")
            for _, _, _, file_id, _, _ in parts
        ]
    assert body["parts_done"] == body["parts_total"] == 3
    texts = [text for *_, text in parts]
    assert len(set(texts)) == 3
    assert body["text"] == " ".join(texts)
    # The cuts fall in the pauses at 3500-3502 s and 7000-7002 s, not hard at the limit.
    assert parts[0][2] == pytest.approx(3501, abs=1)
    assert parts[1][2] == pytest.approx(7001, abs=1)
    assert parts[2][2] == pytest.approx(LONG_SECONDS, abs=1)
    assert all(0 < seconds <= HOUR for seconds in lengths)
    assert sum(lengths) == pytest.approx(LONG_SECONDS, abs=2)
    starts = [word["start"] for word in json.loads(words_json)]
    assert starts
    assert starts == sorted(starts)
    assert starts[-1] > 7001


@pytest.mark.timeout(120)
async def test_speechkit_gets_one_operation_per_part_and_the_bucket_ends_empty(
    tmp_path: Path, moto_s3: MotoS3, fifty_seconds: bytes
) -> None:
    """Over a 20 s limit: three starts, each with its own Object Storage copy, all deleted."""
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        for word in ("раз", "два", "три"):
            fake.finish_next(word)
        config: dict[str, dict[str, Any]] = yandex_config(moto_s3, bucket, fake)
        config["yandex"]["max_seconds"] = YANDEX_LIMIT
        with running_service(tmp_path, config=config, env=AWS_ENV) as service:
            job_id = await upload(service, fifty_seconds, "fifty.wav")
            body = await until(service, job_id, is_done, seconds=90)
            parts = parts_of(service, job_id)
    assert body["state"] == "done", body
    # Parts start on several loops at once (ADR 52): the fake's scripted texts go by arrival.
    assert sorted(body["text"].split()) == sorted(["раз", "два", "три"])
    assert body["text"] == " ".join(text for *_, text in parts)
    assert body["parts_total"] == 3
    starts = fake.requests_to("/speech")
    uris = {request.body["audio"]["uri"] for request in starts}
    assert len(starts) == len(uris) == 3
    assert sorted(operation for *_, operation, _ in parts) == sorted(fake.operations)
    assert all(end - start <= YANDEX_LIMIT for _, start, end, *_ in parts)
    assert moto_s3.keys(bucket) == []


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_sigkill_while_a_part_runs_recognises_no_finished_part_again(
    tmp_path: Path, moto_s3: MotoS3, fifty_seconds: bytes
) -> None:
    """Killed with parts 1 and 3 done and 2 running: after restart no new start, 2 is checked."""
    bucket = moto_s3.new_bucket()
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next("раз")
        fake.finish_next("два", pending_checks=1_000_000)
        fake.finish_next("три")
        config: dict[str, dict[str, Any]] = yandex_config(moto_s3, bucket, fake)
        config["yandex"]["max_seconds"] = YANDEX_LIMIT
        config["queue"] = {"lease_seconds": 3, "lease_renewal_seconds": 1}
        with running_service(tmp_path / "first", config=config, env=AWS_ENV) as service:
            job_id = await upload(service, fifty_seconds, "fifty.wav")
            body = await until(service, job_id, lambda b: b.get("parts_done") == 2, seconds=90)
            assert body["state"] == "check", body
            service.kill()
            data_dir = service.data_dir
        first, second, third = fake.operations
        checks_before = {op: fake.operations[op].checks for op in (first, third)}
        fake.operations[second].pending_checks = 0  # part 2 finishes while nobody looks
        with running_service(
            tmp_path / "second", config=config, env=AWS_ENV, data_dir=data_dir
        ) as service:
            body = await until(service, job_id, is_done, seconds=90)
            parts = parts_of(service, job_id)
    assert body["state"] == "done", body
    # Parts start on several loops at once (ADR 52): the fake's scripted texts go by arrival.
    assert sorted(body["text"].split()) == sorted(["раз", "два", "три"])
    assert body["text"] == " ".join(text for *_, text in parts)
    assert len(fake.requests_to("/speech")) == 3
    assert {op: fake.operations[op].checks for op in (first, third)} == checks_before
    assert moto_s3.keys(bucket) == []
