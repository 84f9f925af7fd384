"""Fixtures shared by unit and contract tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.s3 import MotoS3


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    """One moto S3 server on 127.0.0.1 for the session; each test makes its own bucket.

    botocore is told never to ask the instance metadata service, so no test
    leaves the loopback interface.
    """
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 - heavy; only for tests that use it

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        try:
            yield MotoS3(endpoint_url=f"http://{host}:{port}")
        finally:
            server.stop()
