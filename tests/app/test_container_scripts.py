"""The image's own scripts (ADR 41): its HEALTHCHECK and compose's bucket maker, as run there."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY, MotoS3

CONTAINER = Path(__file__).resolve().parents[2] / "container"


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/health" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        """Quiet."""


def _serve(status: int) -> Iterator[int]:
    handler = type("Handler", (_Health,), {"status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def healthy_port() -> Iterator[int]:
    """A port whose /health answers 200."""
    yield from _serve(200)


@pytest.fixture
def sick_port() -> Iterator[int]:
    """A port whose /health answers 503."""
    yield from _serve(503)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CONTAINER / script), *args],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _health(http_port: int, worker_port: int) -> subprocess.CompletedProcess[str]:
    return _run(
        "healthcheck.py",
        {"TRANSCRIBER_HTTP_PORT": str(http_port), "TRANSCRIBER_WORKER_PORT": str(worker_port)},
    )


def test_healthcheck_passes_when_serve_answers_200(healthy_port: int) -> None:
    """serve's port answering 200 and nothing on the worker port is healthy."""
    assert _health(healthy_port, _closed_port()).returncode == 0


def test_healthcheck_passes_when_a_worker_answers_200(healthy_port: int) -> None:
    """A worker's port answering 200 and nothing on serve's port is healthy."""
    assert _health(_closed_port(), healthy_port).returncode == 0


def test_healthcheck_fails_when_nothing_serves() -> None:
    """No process on either port is unhealthy, and says where it looked."""
    http_port, worker_port = _closed_port(), _closed_port()
    result = _health(http_port, worker_port)
    assert result.returncode == 1
    assert str(http_port) in result.stdout


def test_healthcheck_fails_on_a_503(sick_port: int) -> None:
    """A /health answering 503 (a service condition) is unhealthy, and the status is said."""
    result = _health(sick_port, _closed_port())
    assert result.returncode == 1
    assert "503" in result.stdout


def _bucket_env(moto_s3: MotoS3, bucket: str) -> dict[str, str]:
    return {
        "TRANSCRIBER_S3_ENDPOINT_URL": moto_s3.endpoint_url,
        "TRANSCRIBER_S3_REGION": "us-east-1",
        "TRANSCRIBER_S3_BUCKET": bucket,
        "TRANSCRIBER_S3_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "TRANSCRIBER_S3_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        "TRANSCRIBER_S3_PATH_STYLE": "true",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def test_make_bucket_creates_the_bucket_once(moto_s3: MotoS3) -> None:
    """The bucket is made on the first run; a second run finds it there and exits 0 too."""
    env = _bucket_env(moto_s3, "compose-bucket")
    first = _run("make_bucket.py", env, "--wait", "10")
    assert first.returncode == 0, first.stderr
    second = _run("make_bucket.py", env, "--wait", "10")
    assert second.returncode == 0, second.stderr
    names = [b["Name"] for b in moto_s3.admin().list_buckets()["Buckets"]]
    assert names.count("compose-bucket") == 1


def test_make_bucket_gives_up_without_naming_the_endpoint() -> None:
    """No server within --wait: exit 1, the reason in our words, no URL or key in it."""
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    env = {
        "TRANSCRIBER_S3_ENDPOINT_URL": endpoint,
        "TRANSCRIBER_S3_BUCKET": "nowhere",
        "TRANSCRIBER_S3_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "TRANSCRIBER_S3_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    result = _run("make_bucket.py", env, "--wait", "0")
    assert result.returncode == 1
    assert "does not answer" in result.stderr
    for secret in (endpoint, ACCESS_KEY_ID, SECRET_ACCESS_KEY, "nowhere"):
        assert secret not in result.stderr
