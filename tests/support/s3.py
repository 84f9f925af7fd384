"""A moto S3 server on 127.0.0.1 for the S3 file store's tests, and helpers to look inside it."""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
from pathlib import Path
from typing import Any

import attrs
import boto3
from botocore.config import Config

from transcriber_adapters.s3 import S3FileStore

#: Credentials moto accepts; nothing real is ever signed with them.
ACCESS_KEY_ID = "AKIDTESTTESTTESTTEST"
SECRET_ACCESS_KEY = "test-secret-key-that-signs-nothing-real"
#: The region the store signs for, as in production.
REGION = "ru-central1"


@attrs.frozen
class MotoS3:
    """A running moto server: its endpoint, and fresh buckets and stores on it."""

    endpoint_url: str

    def admin(self) -> Any:
        """A plain boto3 client for setting up and inspecting buckets behind the store's back."""
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def new_bucket(self) -> str:
        """An empty bucket with a fresh name, so tests never see each other's objects."""
        name = f"test-{secrets.token_hex(8)}"
        self.admin().create_bucket(Bucket=name)
        return name

    def store(self, bucket: str, **options: Any) -> S3FileStore:
        """An S3 store on ``bucket`` with the test credentials and path-style addressing."""
        settings: dict[str, Any] = {
            "endpoint_url": self.endpoint_url,
            "region": REGION,
            "bucket": bucket,
            "access_key_id": ACCESS_KEY_ID,
            "secret_access_key": SECRET_ACCESS_KEY,
            "path_style": True,
            "max_attempts": 1,
            # Tests that look at staging pass their own folder.
            "staging_dir": Path(tempfile.gettempdir()),
        }
        settings.update(options)
        return S3FileStore(**settings)

    def keys(self, bucket: str) -> list[str]:
        """Every object key in ``bucket``, all pages (a listing stops at 1,000)."""
        pages = self.admin().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def pending_uploads(self, bucket: str) -> list[str]:
        """Keys of multipart uploads started and neither completed nor aborted, all pages."""
        pages = self.admin().get_paginator("list_multipart_uploads").paginate(Bucket=bucket)
        return [item["Key"] for page in pages for item in page.get("Uploads", [])]


class StoppableS3:
    """A moto server on a fixed port of 127.0.0.1 that can go down and come back.

    Its buckets and objects live in this process's moto backends, so they
    survive a stop: the server comes back as the same store, as a real one
    would after an outage. ``with StoppableS3() as s3`` starts it and stops it
    at the end, whatever happened.
    """

    def __init__(self, port: int | None = None) -> None:
        if port is None:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = int(probe.getsockname()[1])
        self.port = port
        self.moto = MotoS3(endpoint_url=f"http://127.0.0.1:{port}")
        self._server: Any = None

    @property
    def up(self) -> bool:
        """True while the server answers."""
        return self._server is not None

    def start(self) -> None:
        """Serve again on the same port (a no-op while up)."""
        from moto.server import ThreadedMotoServer  # noqa: PLC0415 - heavy; only for tests

        if self._server is None:
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
            server.start()
            self._server = server

    def stop(self) -> None:
        """Stop answering: connections to the port are refused until ``start``."""
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> StoppableS3:
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
