"""The file store on any S3-compatible Object Storage (Yandex, MinIO, AWS), through aioboto3.

Object key = ``<prefix><id><extension>``. Uploads stream from disk one part
at a time, so memory holds at most one part whatever the file's size
(reference: Files); downloads stream to a staging file in the store's staging dir.
``s3_errors`` is the one place where botocore and aiohttp exceptions become
core errors; their texts carry keys, bucket URLs and endpoints, so they are
dropped (reference: Privacy).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import aioboto3
import aiohttp
from aiobotocore.config import AioConfig
from botocore.exceptions import BotoCoreError, ClientError

from transcriber_adapters._threads import close, in_thread
from transcriber_adapters.localdisk import (
    CHUNK_SIZE,
    staging_folder,
    staging_path,
    storage_errors,
    stored_name,
)
from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import (
    FileNotFound,
    StorageBucketMissing,
    StorageCredentialsRejected,
    StorageDown,
    StorageUnavailable,
    TranscriberError,
)
from transcriber_core.tasks import wait_out

#: S3's smallest part but the last one.
MIN_PART_SIZE = 5 * 1024 * 1024
#: S3's most parts in one multipart upload.
MAX_PARTS = 10_000
#: Bytes per part: 8 GiB (the recording ceiling) fits in 1,024 parts, and memory holds one.
DEFAULT_PART_SIZE = 8 * 1024 * 1024
#: Where stored objects live inside the bucket, unless told otherwise.
DEFAULT_PREFIX = "transcriber/"

#: Keys one DeleteObjects request takes at most.
_DELETE_BATCH = 1000
#: S3 error codes that mean "no such object" (HeadObject answers with the bare status).
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
#: Codes of a store that is down or shedding load, not of a bad request.
_DOWN_CODES = frozenset({"InternalError", "ServiceUnavailable", "SlowDown", "RequestTimeout"})
#: S3 error codes that mean our credentials or signature were refused.
_REFUSED_CODES = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "403", "Forbidden"}
)
#: A vendor error code is shown only when it is a bare word (it never is a URL or a key).
_SAFE_CODE = re.compile(r"[A-Za-z0-9]{1,64}")


@contextlib.contextmanager
def s3_errors(missing: TranscriberError | None = None) -> Iterator[None]:
    """Turn botocore and aiohttp exceptions into ``StorageUnavailable`` (or ``missing``).

    Refused credentials and a missing bucket are the service's conditions
    (``StorageCredentialsRejected``, ``StorageBucketMissing``): the
    deployment's configuration is wrong, not the recording. So is an
    outage (``StorageDown``): no connection, a timeout, a 5xx or SlowDown. Vendor texts
    name the bucket, the key and the endpoint, so only the error code
    survives, and the original is not chained (reference: Privacy).
    """
    try:
        yield
    except ClientError as exc:
        code = _error_code(exc)
        if code in _MISSING_CODES and missing is not None:
            raise missing from None
        if code == "NoSuchBucket":
            raise StorageBucketMissing("the object storage bucket does not exist") from None
        if code in _REFUSED_CODES:
            raise StorageCredentialsRejected(
                f"the object storage refused our credentials ({code})"
            ) from None
        shown = code if _SAFE_CODE.fullmatch(code) else "unknown"
        if code in _DOWN_CODES or _status(exc) >= 500:
            raise StorageDown(f"the object storage is unavailable ({shown})") from None
        raise StorageUnavailable(f"the object storage answered with an error ({shown})") from None
    except (BotoCoreError, aiohttp.ClientError, TimeoutError):
        raise StorageDown("the object storage could not be reached") from None


def _status(exc: Any) -> int:
    """The HTTP status of a ``ClientError``'s answer; 0 when it has none."""
    response = getattr(exc, "response", None) or {}
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else 0


def _error_code(exc: Any) -> str:
    """The S3 error code of a ``ClientError``, or its HTTP status when it has none."""
    response = getattr(exc, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    if code:
        return str(code)
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return str(status) if status is not None else ""


class S3FileStore:
    """Whole objects in one bucket of an S3-compatible store, under ``<prefix><id><extension>``.

    An object appears whole or not at all: a small file is one PutObject, a
    larger one a multipart upload that is aborted on any error or
    cancellation, so no half object and no pending upload remains. The
    working copy is a download into ``staging_dir``, removed on every
    exit. One client is opened on first use and reused; ``close`` releases it.
    Errors never name the key, the bucket or the endpoint (reference: Privacy).

    ``path_style`` puts the bucket in the URL path (moto, MinIO) instead of
    the host name. ``part_size`` is what one upload request carries and all
    an upload holds in memory. ``max_attempts`` counts botocore's own tries
    per request, first included, before the job's retry policy takes over.
    """

    def __init__(
        self,
        *,
        endpoint_url: str,
        region: str,
        bucket: str,
        access_key_id: str,
        secret_access_key: str,
        staging_dir: Path,
        prefix: str = DEFAULT_PREFIX,
        path_style: bool = False,
        part_size: int = DEFAULT_PART_SIZE,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
        max_attempts: int = 3,
    ) -> None:
        if part_size < MIN_PART_SIZE:
            raise ValueError(f"part_size must be at least {MIN_PART_SIZE} bytes (S3's minimum)")
        if prefix.startswith("/"):
            raise ValueError("the key prefix must not start with a slash")
        if not bucket:
            raise ValueError("the bucket name must not be empty")
        self._endpoint_url = endpoint_url
        self._staging_dir = staging_dir
        self._bucket = bucket
        self._prefix = prefix
        self.part_size = part_size
        # Explicit keys: botocore then never looks at the environment, the
        # shared files or the instance metadata service for credentials.
        self._session = aioboto3.Session(
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            region_name=region,
        )
        self._config = AioConfig(
            signature_version="s3v4",
            s3={"addressing_style": "path" if path_style else "virtual"},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retries={"total_max_attempts": max_attempts, "mode": "standard"},
            # botocore >= 1.36 adds CRC32 trailers by default, which several
            # S3-compatible stores refuse; send checksums only where S3 requires them.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        self._client_lock = asyncio.Lock()
        self._exit_stack: AsyncExitStack | None = None
        self._s3: Any = None

    @property
    def location(self) -> Location:
        """Bytes live in Object Storage."""
        return Location.S3

    def object_key(self, file_id: str, extension: str) -> str:
        """The key a file of this id and extension is stored under."""
        return self._prefix + stored_name(file_id, extension)

    def staging(self, extension: str) -> AbstractAsyncContextManager[Path]:
        """A fresh 0600 file in the staging dir, removed on exit if still there."""
        return staging_path(self._staging_dir, extension)

    def staging_folder(self) -> AbstractAsyncContextManager[Path]:
        """A fresh 0700 folder in the staging dir, removed on exit with all it holds."""
        return staging_folder(self._staging_dir)

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        """Upload ``source`` as ``<prefix><file_id><extension>``; with ``move`` remove it after.

        The source must not change while it is uploaded.
        """
        key = self.object_key(file_id, extension)
        with storage_errors(missing=StorageUnavailable("the file to store is missing")):
            reader = await in_thread(source.open, "rb", release=close)
        try:
            size = await self._upload(reader, key)
        finally:
            reader.close()
        if move:
            with storage_errors():
                await in_thread(functools.partial(source.unlink, missing_ok=True))
        return FileRecord(
            id=file_id,
            location=Location.S3,
            object_key=key,
            size=size,
            extension=extension,
            created=now,
        )

    async def _upload(self, reader: BinaryIO, key: str) -> int:
        """Send the reader's bytes to ``key``: one PutObject when they fit in one part."""
        first = await self._read(reader)
        s3 = await self._client()
        if len(first) < self.part_size:
            with s3_errors():
                await s3.put_object(Bucket=self._bucket, Key=key, Body=first)
            return len(first)
        upload_id = await self._create_upload(s3, key)
        try:
            return await self._upload_parts(s3, reader, key, upload_id, first)
        except BaseException:
            # Shielded and waited for even through a second cancellation: an
            # upload left open keeps its parts (and their cost) until a lifecycle rule.
            await wait_out(asyncio.ensure_future(self._abort(s3, key, upload_id)))
            raise

    async def _create_upload(self, s3: Any, key: str) -> str:
        """Start a multipart upload and return its id, aborting it if we are cancelled meanwhile.

        A cancellation while the request is out would lose the id of an
        upload S3 already made (an open upload, kept until a lifecycle rule):
        the request is shielded, waited for, and its upload aborted.
        """
        creating = asyncio.ensure_future(self._create(s3, key))
        try:
            return await asyncio.shield(creating)
        except asyncio.CancelledError:
            await wait_out(creating)
            if not creating.cancelled() and creating.exception() is None:
                await wait_out(asyncio.ensure_future(self._abort(s3, key, creating.result())))
            raise

    async def _create(self, s3: Any, key: str) -> str:
        with s3_errors():
            created = await s3.create_multipart_upload(Bucket=self._bucket, Key=key)
        return str(created["UploadId"])

    async def _upload_parts(
        self, s3: Any, reader: BinaryIO, key: str, upload_id: str, first: bytes
    ) -> int:
        """Upload ``first`` and then the rest of the reader part by part; complete the upload."""
        parts: list[dict[str, Any]] = []
        size = 0
        data = first
        while data:
            number = len(parts) + 1
            if number > MAX_PARTS:
                raise StorageUnavailable("the file is too large for one object upload")
            with s3_errors():
                answer = await s3.upload_part(
                    Bucket=self._bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=data
                )
            parts.append({"PartNumber": number, "ETag": answer["ETag"]})
            size += len(data)
            # Drop the sent part before reading the next: memory holds one part.
            del data
            data = await self._read(reader)
        with s3_errors():
            await s3.complete_multipart_upload(
                Bucket=self._bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
            )
        return size

    async def _abort(self, s3: Any, key: str, upload_id: str) -> None:
        """Abort a multipart upload; a failure only leaves it to the bucket's lifecycle rule."""
        with contextlib.suppress(StorageUnavailable), s3_errors():
            await s3.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=upload_id)

    async def _read(self, reader: BinaryIO) -> bytes:
        """The next part of the source, ``part_size`` bytes unless the end comes first."""
        with storage_errors():
            return await in_thread(read_part, reader, self.part_size)

    @contextlib.asynccontextmanager
    async def working_copy(self, record: FileRecord) -> AsyncIterator[Path]:
        """The object downloaded to a staging file, removed after the block."""
        async with staging_path(self._staging_dir, record.extension) as path:
            await self._download(self._key(record), path)
            yield path

    async def _download(self, key: str, path: Path) -> None:
        s3 = await self._client()
        with s3_errors(missing=FileNotFound()):
            answer = await s3.get_object(Bucket=self._bucket, Key=key)
        with storage_errors():
            writer = await in_thread(path.open, "wb", release=close)
        # The network hands over small pieces; write a mebibyte at a time so a
        # large download is not thousands of hops to a thread.
        pending = bytearray()
        try:
            async with answer["Body"] as body:
                while True:
                    with s3_errors():
                        chunk = await body.content.read(CHUNK_SIZE)
                    pending += chunk
                    if pending and (not chunk or len(pending) >= CHUNK_SIZE):
                        with storage_errors():
                            await in_thread(writer.write, pending)
                        pending.clear()
                    if not chunk:
                        break
        finally:
            writer.close()

    async def open(self, record: FileRecord) -> AsyncIterator[bytes]:
        """The object's bytes, up to a mebibyte at a time."""
        s3 = await self._client()
        with s3_errors(missing=FileNotFound()):
            answer = await s3.get_object(Bucket=self._bucket, Key=self._key(record))
        async with answer["Body"] as body:
            while True:
                with s3_errors():
                    chunk = await body.content.read(CHUNK_SIZE)
                if not chunk:
                    return
                yield chunk

    async def open_range(
        self, record: FileRecord, *, start: int, stop: int
    ) -> AsyncIterator[bytes]:
        """The object's bytes from ``start`` to ``stop``: GetObject with a ``Range``, streamed.

        Only the range crosses the network. A range past the object's end
        (S3's ``InvalidRange``) gives no bytes, as a short file does.
        """
        if not 0 <= start < stop:
            raise ValueError("a range runs from 0 <= start to a larger stop")
        s3 = await self._client()
        with s3_errors(missing=FileNotFound()):
            try:
                answer = await s3.get_object(
                    Bucket=self._bucket, Key=self._key(record), Range=f"bytes={start}-{stop - 1}"
                )
            except ClientError as exc:
                if _error_code(exc) == "InvalidRange":
                    return
                raise
        async with answer["Body"] as body:
            while True:
                with s3_errors():
                    chunk = await body.content.read(CHUNK_SIZE)
                if not chunk:
                    return
                yield chunk

    async def delete(self, record: FileRecord) -> None:
        """Remove the object; S3 answers the same whether it was there or not."""
        s3 = await self._client()
        with s3_errors():
            await s3.delete_object(Bucket=self._bucket, Key=self._key(record))

    async def delete_many(self, records: Sequence[FileRecord]) -> None:
        """Remove the objects with DeleteObjects, up to 1,000 keys a request (S3's limit)."""
        keys = [self._key(record) for record in records]
        if not keys:
            return
        s3 = await self._client()
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            with s3_errors():
                answer = await s3.delete_objects(
                    Bucket=self._bucket,
                    Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
                )
            if answer.get("Errors"):
                # The per-key errors name the keys: only their number is ours to say.
                raise StorageUnavailable(
                    f"the object storage did not delete {len(answer['Errors'])} objects"
                )

    async def exists(self, record: FileRecord) -> bool:
        """True when the object is in the bucket."""
        s3 = await self._client()
        try:
            with s3_errors(missing=FileNotFound()):
                await s3.head_object(Bucket=self._bucket, Key=self._key(record))
        except FileNotFound:
            return False
        return True

    async def close(self) -> None:
        """Close the client and its connections; a later call opens a new one."""
        async with self._client_lock:
            stack, self._exit_stack, self._s3 = self._exit_stack, None, None
            if stack is not None:
                with s3_errors():
                    await stack.aclose()

    async def _client(self) -> Any:
        """The store's one S3 client, opened on first use."""
        async with self._client_lock:
            if self._s3 is None:
                stack = AsyncExitStack()
                with s3_errors():
                    self._s3 = await stack.enter_async_context(
                        self._session.client(
                            "s3", endpoint_url=self._endpoint_url, config=self._config
                        )
                    )
                self._exit_stack = stack
            return self._s3

    def _key(self, record: FileRecord) -> str:
        """The record's own key when it has one (the prefix may have changed since)."""
        return record.object_key or self.object_key(record.id, record.extension)


def read_part(reader: BinaryIO, size: int) -> bytes:
    """Up to ``size`` bytes from ``reader``: fewer only at the end of the file."""
    data = reader.read(size)
    while 0 < len(data) < size:
        more = reader.read(size - len(data))
        if not more:
            break
        data += more
    return data
