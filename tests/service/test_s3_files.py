"""Issue 12, part 4 end to end: ``[storage] files = "s3"`` on moto with the fake SpeechKit.

The bucket is versioned, so every upload the service makes leaves a version
behind even when the same key is written again or deleted: counting versions
counts uploads.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.service.test_yandex_e2e import finished, upload, yandex_config
from tests.support.fake_speechkit import FakeSpeechKit
from tests.support.media import tone
from tests.support.s3 import MotoS3
from tests.support.service import running_service
from transcriber_adapters.datadir import LOCK_NAME, MEMBERS_NAME

#: What the data dir may hold with every file in the bucket: the database and the lock.
DATABASE_FILES = frozenset(
    {"transcriber.db", "transcriber.db-wal", "transcriber.db-shm", "transcriber.db-journal"}
)


def versioned_bucket(moto: MotoS3) -> str:
    """A fresh bucket that keeps every version of every object, deleted or replaced."""
    bucket = moto.new_bucket()
    moto.admin().put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    return bucket


def uploads_by_key(moto: MotoS3, bucket: str) -> tuple[Counter[str], list[str]]:
    """How many objects were written under each key, and the keys ever deleted."""
    listed = moto.admin().list_object_versions(Bucket=bucket)
    written = Counter(version["Key"] for version in listed.get("Versions", []))
    deleted = [marker["Key"] for marker in listed.get("DeleteMarkers", [])]
    return written, deleted


def files_config(moto: MotoS3, bucket: str, fake: FakeSpeechKit, **yandex: Any) -> dict[str, Any]:
    """Every file on ``bucket``, recognised by the fake SpeechKit reading that bucket."""
    config = yandex_config(moto, bucket, fake, **yandex)
    config["storage"] = {"files": "s3"}
    return config


def local_leftovers(data_dir: Path) -> list[str]:
    """Files under the data dir other than the database and the locks: recording bytes."""
    return sorted(
        str(path.relative_to(data_dir))
        for path in data_dir.rglob("*")
        if path.is_file() and path.name not in DATABASE_FILES | {LOCK_NAME, MEMBERS_NAME}
    )


async def test_upload_is_done_with_one_upload_and_no_copy(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes
) -> None:
    """files = "s3": done, one upload per file, SpeechKit reads the converted object, none local."""
    bucket = versioned_bucket(moto_s3)
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next("из корзины", pending_checks=1)
        config = files_config(moto_s3, bucket, fake)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, recording, "голосовое.mp3")
            body = await finished(service, job_id)
            [start] = fake.requests_to("/speech/stt/v2")
            leftovers = local_leftovers(service.data_dir)
            temp = sorted(path.name for path in service.temp_dir.iterdir())
            converted_key = service.query(
                "SELECT f.object_key FROM files f JOIN jobs j ON j.converted_file_id = f.id"
                " WHERE j.id = ?",
                (job_id,),
            )[0][0]
            logs = service.logs()
    assert body["state"] == "done", body
    assert body["text"] == "из корзины"
    written, deleted = uploads_by_key(moto_s3, bucket)
    # The recording and its converted audio, each uploaded once; no copy for SpeechKit.
    assert sorted(written.values()) == [1, 1], written
    assert converted_key in written
    assert start.body["audio"]["uri"].endswith(f"/{bucket}/{converted_key}")
    # Ending the job deleted no "copy": the converted object is the stored file.
    assert deleted == []
    assert moto_s3.pending_uploads(bucket) == []
    assert leftovers == []
    assert temp == []
    for key in written:
        assert key not in logs
    assert bucket not in logs


async def test_short_clip_on_s3_is_done_through_the_sync_api(
    tmp_path: Path, moto_s3: MotoS3
) -> None:
    """files = "s3": a 10 s clip is read back from the bucket for v1, with no operation."""
    clip = tone(tmp_path / "note.mp3", 10).read_bytes()
    bucket = versioned_bucket(moto_s3)
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        fake.finish_next("короткое из корзины")
        config = files_config(moto_s3, bucket, fake, sync_max_seconds=30)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            job_id = await upload(service, clip, "note.mp3")
            body = await finished(service, job_id)
            leftovers = local_leftovers(service.data_dir)
    assert body["state"] == "done", body
    assert body["text"] == "короткое из корзины"
    assert [r.path for r in fake.requests] == ["/speech/v1/stt:recognize"]
    written, _ = uploads_by_key(moto_s3, bucket)
    assert sorted(written.values()) == [1, 1], written
    assert leftovers == []


async def test_upload_to_a_missing_bucket_is_refused_and_leaves_nothing(
    tmp_path: Path, moto_s3: MotoS3, recording: bytes
) -> None:
    """files = "s3" on a bucket that does not exist: the upload is a 503 and no byte stays local."""
    async with FakeSpeechKit(storage_url=moto_s3.endpoint_url) as fake:
        config = files_config(moto_s3, "no-such-bucket", fake)
        with running_service(
            tmp_path, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}
        ) as service:
            async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
                response = await client.post(
                    "/api/audio", files={"file": ("voice.mp3", recording, "audio/mpeg")}
                )
            leftovers = local_leftovers(service.data_dir)
            temp = list(service.temp_dir.iterdir())
            jobs = service.query("SELECT count(*) FROM jobs")[0][0]
            logs = service.logs()
    assert response.status_code == 503
    assert response.json()["error"] == "unavailable"
    assert (leftovers, temp, jobs) == ([], [], 0)
    assert "no-such-bucket" not in logs
