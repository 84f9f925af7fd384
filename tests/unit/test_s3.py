"""The S3 file store beyond its contract: multipart, bounded reads, aborts, keys, error texts."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from botocore.exceptions import ClientError

from tests.support.delegate import Delegate
from tests.support.s3 import MotoS3
from transcriber_adapters import s3 as s3_module
from transcriber_adapters.s3 import MIN_PART_SIZE, S3FileStore, s3_errors
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import (
    FileNotFound,
    ServiceCondition,
    StorageBucketMissing,
    StorageCredentialsRejected,
    StorageDown,
    StorageUnavailable,
    TransientError,
)

NOW = datetime(2026, 1, 2, tzinfo=UTC)
FILE_ID = "czMtZmlsZS1pZC0wMDAwMDE"
#: Three parts at the smallest part size S3 allows: two full, one short.
MULTIPART_SIZE = 2 * MIN_PART_SIZE + 123_457


@pytest.fixture
def bucket(moto_s3: MotoS3) -> str:
    return moto_s3.new_bucket()


@pytest.fixture
async def store(moto_s3: MotoS3, bucket: str) -> AsyncIterator[S3FileStore]:
    """A store with the smallest part size, so a few MiB already make a multipart upload."""
    store = moto_s3.store(bucket, part_size=MIN_PART_SIZE)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def big_source(tmp_path: Path) -> Path:
    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(MULTIPART_SIZE))
    return path


def _record_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Record (asked, returned) sizes of every read of a source part."""
    reads: list[tuple[int, int]] = []
    real = s3_module.read_part

    def read_part(reader: BinaryIO, size: int) -> bytes:
        data = real(reader, size)
        reads.append((size, len(data)))
        return data

    monkeypatch.setattr(s3_module, "read_part", read_part)
    return reads


def _fail_read(monkeypatch: pytest.MonkeyPatch, on_call: int, action: Callable[[], None]) -> None:
    """Run ``action`` in place of the ``on_call``-th read of a source part."""
    real = s3_module.read_part
    calls = 0

    def read_part(reader: BinaryIO, size: int) -> bytes:
        nonlocal calls
        calls += 1
        if calls == on_call:
            action()
        return real(reader, size)

    monkeypatch.setattr(s3_module, "read_part", read_part)


def _closed_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_large_file_goes_up_in_parts(
    store: S3FileStore, moto_s3: MotoS3, bucket: str, big_source: Path
) -> None:
    """A file larger than a part is a multipart upload whose parts join to the same bytes."""
    record = await store.put(FILE_ID, ".ogg", big_source, now=NOW)
    head = moto_s3.admin().head_object(Bucket=bucket, Key=record.object_key)
    # S3 marks a multipart object's ETag with its part count.
    assert head["ETag"].strip('"').endswith("-3")
    assert record.size == MULTIPART_SIZE
    assert b"".join([c async for c in store.open(record)]) == big_source.read_bytes()


async def test_reads_never_exceed_a_part(
    store: S3FileStore, big_source: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory stays bounded: the source is read one part at a time, never more."""
    reads = _record_reads(monkeypatch)
    await store.put(FILE_ID, ".ogg", big_source, now=NOW)
    assert reads == [
        (MIN_PART_SIZE, MIN_PART_SIZE),
        (MIN_PART_SIZE, MIN_PART_SIZE),
        (MIN_PART_SIZE, 123_457),
        (MIN_PART_SIZE, 0),
    ]


async def test_exactly_one_part(store: S3FileStore, tmp_path: Path) -> None:
    """A file of exactly one part size is stored whole (a one-part upload)."""
    data = os.urandom(MIN_PART_SIZE)
    source = tmp_path / "one-part.bin"
    source.write_bytes(data)
    record = await store.put(FILE_ID, ".ogg", source, now=NOW)
    assert record.size == MIN_PART_SIZE
    assert b"".join([c async for c in store.open(record)]) == data


async def test_failed_upload_is_aborted(
    store: S3FileStore,
    moto_s3: MotoS3,
    bucket: str,
    big_source: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read error after the first part leaves no object and no multipart upload in progress."""

    def disk_error() -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(big_source))

    _fail_read(monkeypatch, 2, disk_error)
    with pytest.raises(StorageUnavailable) as info:
        await store.put(FILE_ID, ".ogg", big_source, now=NOW, move=True)
    assert str(big_source) not in str(info.value)
    assert moto_s3.keys(bucket) == []
    assert moto_s3.pending_uploads(bucket) == []
    assert big_source.exists(), "a failed move keeps its source"


async def test_cancelled_upload_is_aborted(
    store: S3FileStore,
    moto_s3: MotoS3,
    bucket: str,
    big_source: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A put cancelled after the first part leaves no object and no upload in progress."""
    loop = asyncio.get_running_loop()
    reading = asyncio.Event()
    release = threading.Event()

    def block() -> None:
        loop.call_soon_threadsafe(reading.set)
        release.wait(timeout=10)

    _fail_read(monkeypatch, 2, block)
    task = asyncio.create_task(store.put(FILE_ID, ".ogg", big_source, now=NOW))
    await reading.wait()
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert moto_s3.keys(bucket) == []
    assert moto_s3.pending_uploads(bucket) == []


class SlowCreateAnswer(Delegate):
    """The real S3 client; the answer to CreateMultipartUpload comes 0.3 s after S3 made it."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.created = asyncio.Event()

    async def create_multipart_upload(self, **kwargs: Any) -> Any:
        answer = await self.inner.create_multipart_upload(**kwargs)
        self.created.set()
        await asyncio.sleep(0.3)
        return answer


async def test_a_put_cancelled_while_the_upload_is_created_leaves_no_upload(
    store: S3FileStore, moto_s3: MotoS3, bucket: str, big_source: Path
) -> None:
    """Cancelled between S3 making the upload and us reading its id: it is still aborted."""
    slow = SlowCreateAnswer(await store._client())
    store._client = lambda: _ready(slow)  # type: ignore[method-assign]
    task = asyncio.create_task(store.put(FILE_ID, ".ogg", big_source, now=NOW))
    await slow.created.wait()
    assert len(moto_s3.pending_uploads(bucket)) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert moto_s3.keys(bucket) == []
    assert moto_s3.pending_uploads(bucket) == []


async def _ready(value: Any) -> Any:
    return value


async def test_move_of_a_multipart_file_removes_the_source(
    store: S3FileStore, big_source: Path
) -> None:
    """put with move takes a large source too, once all its parts are up."""
    record = await store.put(FILE_ID, ".ogg", big_source, now=NOW, move=True)
    assert not big_source.exists()
    assert await store.exists(record)


async def test_object_key_is_prefix_and_stored_name(
    moto_s3: MotoS3, bucket: str, tmp_path: Path
) -> None:
    """The object key is the configured prefix and ``<id><extension>``, nothing else."""
    source = tmp_path / "Secret Name.mp3"
    source.write_bytes(b"abc")
    store = moto_s3.store(bucket, prefix="audio/v1/")
    try:
        record = await store.put(FILE_ID, ".mp3", source, now=NOW)
    finally:
        await store.close()
    assert record.object_key == f"audio/v1/{FILE_ID}.mp3"
    assert record.location is Location.S3
    assert moto_s3.keys(bucket) == [f"audio/v1/{FILE_ID}.mp3"]


async def test_record_key_wins_over_the_prefix(
    moto_s3: MotoS3, bucket: str, tmp_path: Path
) -> None:
    """A record stored under an older prefix stays readable after the prefix changes."""
    source = tmp_path / "a.bin"
    source.write_bytes(b"kept")
    old, new = moto_s3.store(bucket, prefix="old/"), moto_s3.store(bucket, prefix="new/")
    try:
        record = await old.put(FILE_ID, ".ogg", source, now=NOW)
        assert b"".join([c async for c in new.open(record)]) == b"kept"
        await new.delete(record)
        assert moto_s3.keys(bucket) == []
    finally:
        await old.close()
        await new.close()


async def test_missing_object_names_no_key(store: S3FileStore, bucket: str) -> None:
    """A missing object is FileNotFound whose text names neither key nor bucket."""
    record = FileRecord(
        id=FILE_ID,
        location=Location.S3,
        object_key=f"transcriber/{FILE_ID}.ogg",
        size=3,
        extension=".ogg",
        created=NOW,
    )
    with pytest.raises(FileNotFound) as info:
        async with store.working_copy(record):
            pass
    _assert_secret_free(info.value, FILE_ID, bucket)
    assert not await store.exists(record)


async def test_missing_bucket_is_the_service_condition(moto_s3: MotoS3, tmp_path: Path) -> None:
    """A bucket that does not exist is the deployment's fault: a condition, without its name."""
    source = tmp_path / "a.bin"
    source.write_bytes(b"abc")
    store = moto_s3.store("no-such-bucket-4711")
    try:
        with pytest.raises(StorageBucketMissing) as info:
            await store.put(FILE_ID, ".ogg", source, now=NOW)
    finally:
        await store.close()
    assert not isinstance(info.value, TransientError)
    assert info.value.code == "storage_bucket_missing"
    assert "bucket does not exist" in str(info.value)
    _assert_secret_free(info.value, "no-such-bucket-4711", FILE_ID)


@pytest.fixture
def checked_bucket(bucket: str) -> Iterator[str]:
    """A bucket made as usual, then moto checks keys and signatures like S3 for the test."""
    from moto.core.authorization import enable_iam_authentication  # noqa: PLC0415 - test-only

    with enable_iam_authentication():
        yield bucket


async def test_refused_keys_are_the_service_condition(
    moto_s3: MotoS3, checked_bucket: str, tmp_path: Path
) -> None:
    """A key S3 does not know is the deployment's fault: credentials rejected, naming no key."""
    source = tmp_path / "a.bin"
    source.write_bytes(b"abc")
    store = moto_s3.store(
        checked_bucket, access_key_id="AKIDUNKNOWNUNKNOWN00", secret_access_key="some-secret-value"
    )
    try:
        with pytest.raises(StorageCredentialsRejected) as info:
            await store.put(FILE_ID, ".ogg", source, now=NOW)
    finally:
        await store.close()
    assert isinstance(info.value, ServiceCondition)
    assert info.value.code == "storage_credentials_rejected"
    _assert_secret_free(info.value, checked_bucket, FILE_ID, "AKID", "some-secret-value")


async def test_unreachable_endpoint_is_unavailable(moto_s3: MotoS3, tmp_path: Path) -> None:
    """A dead endpoint is StorageUnavailable, naming neither host, port, bucket nor key."""
    port = _closed_port()
    source = tmp_path / "a.bin"
    source.write_bytes(b"abc")
    store = S3FileStore(
        endpoint_url=f"http://127.0.0.1:{port}",
        region="ru-central1",
        bucket="secret-bucket",
        access_key_id="AKIDSECRET",
        secret_access_key="secret-key",
        path_style=True,
        max_attempts=1,
        staging_dir=tmp_path / "tmp",
    )
    try:
        with pytest.raises(StorageUnavailable) as info:
            await store.put(FILE_ID, ".ogg", source, now=NOW)
    finally:
        await store.close()
    _assert_secret_free(info.value, str(port), "127.0.0.1", "secret-bucket", FILE_ID, "AKID")


def test_part_size_below_s3_minimum_is_refused() -> None:
    """S3 refuses parts under 5 MiB, so the store refuses to be built with them."""
    with pytest.raises(ValueError, match="part_size"):
        S3FileStore(
            endpoint_url="http://127.0.0.1:9",
            region="ru-central1",
            bucket="b",
            access_key_id="a",
            secret_access_key="s",
            staging_dir=Path("unused"),
            part_size=MIN_PART_SIZE - 1,
        )


def _client_error(code: str, message: str, status: int = 400) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": message, "BucketName": "secret-bucket"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "GetObject",
    )


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("SlowDown", "is unavailable (SlowDown)"),
        ("InvalidArgument", "answered with an error (InvalidArgument)"),
        ("https://secret.example/key", "answered with an error (unknown)"),
    ],
)
def test_vendor_errors_become_our_words(code: str, expected: str) -> None:
    """Every S3 error becomes StorageUnavailable in our words; no vendor text or URL survives."""
    with pytest.raises(StorageUnavailable) as info, s3_errors(missing=FileNotFound()):
        raise _client_error(code, "https://secret-bucket.storage/transcriber/key.ogg?X-Amz=1")
    assert expected in str(info.value)
    _assert_secret_free(info.value, "secret", "X-Amz")


@pytest.mark.parametrize(
    ("code", "status"), [("SlowDown", 503), ("InternalError", 500), ("Whatever", 502)]
)
def test_a_store_that_is_down_is_the_services_condition(code: str, status: int) -> None:
    """5xx, SlowDown and InternalError are an outage (StorageDown): the job waits, no attempt."""
    with pytest.raises(StorageDown) as info, s3_errors(missing=FileNotFound()):
        raise _client_error(code, "https://secret-bucket.storage/key", status)
    assert info.value.code == "storage_unavailable"
    _assert_secret_free(info.value, "secret")


@pytest.mark.parametrize(
    ("code", "condition"),
    [
        ("AccessDenied", StorageCredentialsRejected),
        ("InvalidAccessKeyId", StorageCredentialsRejected),
        ("SignatureDoesNotMatch", StorageCredentialsRejected),
        ("NoSuchBucket", StorageBucketMissing),
    ],
)
def test_configuration_errors_become_conditions(code: str, condition: type[Exception]) -> None:
    """Refused keys and a missing bucket are the service's conditions, in our words."""
    with pytest.raises(condition) as info, s3_errors(missing=FileNotFound()):
        raise _client_error(code, "https://secret-bucket.storage/transcriber/key.ogg?X-Amz=1", 403)
    assert isinstance(info.value, ServiceCondition)
    _assert_secret_free(info.value, "secret", "X-Amz")


def test_missing_code_without_a_missing_error_is_unavailable() -> None:
    """NoSuchKey where absence is unexpected (after a put) is StorageUnavailable, not a crash."""
    with pytest.raises(StorageUnavailable), s3_errors():
        raise _client_error("NoSuchKey", "The key transcriber/x.ogg does not exist", 404)


def _assert_secret_free(error: BaseException, *secrets: str) -> None:
    """The error's text holds none of ``secrets``, and no vendor error hides in its chain."""
    text = str(error)
    assert text
    for secret in secrets:
        assert secret not in text
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_the_bucket_check_sees_past_one_listing_page(moto_s3: MotoS3, bucket: str) -> None:
    """The orphan checks (chaos run) list every key, not the first 1,000 of a page."""
    admin = moto_s3.admin()
    for number in range(1003):
        admin.put_object(Bucket=bucket, Key=f"audio/v1/{number:04d}.ogg", Body=b"")
    assert len(set(moto_s3.keys(bucket))) == 1003
