"""Bearer tokens on ``/api/*`` when ``[http] api_tokens`` is set, through the real server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.multipart import CONTENT_TYPE, RawClient
from tests.support.service import Service, running_service

TOKENS = ["first-token-Zm9v", "second-token-YmFy"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with two API tokens."""
    config = {"http": {"api_tokens": TOKENS}}
    with running_service(tmp_path_factory.mktemp("auth"), config=config) as started:
        started.check_answers()
        yield started


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


def assert_unauthorized(response: httpx.Response) -> None:
    """A JSON 401 that names the Bearer scheme."""
    assert response.status_code == 401, response.text
    assert response.json()["error"] == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("wrong-token"),
        bearer(TOKENS[0][:-1]),
        {"Authorization": f"Basic {TOKENS[0]}"},
        {"Authorization": TOKENS[0]},
    ],
    ids=["none", "wrong", "prefix", "basic-scheme", "no-scheme"],
)
def test_upload_and_status_refuse_missing_or_wrong_token(
    service: Service, recording: bytes, headers: dict[str, str]
) -> None:
    """Without one of the configured tokens, upload and status are 401 and nothing is stored."""
    with service.client(headers=headers) as client:
        assert_unauthorized(client.post("/api/audio", files={"file": ("a.mp3", recording)}))
        assert_unauthorized(client.get("/api/status/anything"))
    assert service.stored_names() == []


@pytest.mark.parametrize("token", TOKENS)
def test_right_token_uploads_and_reads_status(
    service: Service, recording: bytes, token: str
) -> None:
    """Each configured token is accepted on upload and status."""
    with service.client(headers=bearer(token)) as client:
        response = client.post("/api/audio", files={"file": ("a.mp3", recording)})
        assert response.status_code == 202, response.text
    status = service.wait_for_job(response.json()["job_id"], headers=bearer(token))
    assert status["state"] == "done"


def test_401_is_decided_before_the_body(service: Service) -> None:
    """A tokenless upload announcing 10 GiB is refused at once, without a body byte sent."""
    # No byte of the body ever comes, and the upload inactivity timeout is the default five
    # minutes: an answer at all was decided on the head alone (30 s only detects a hang).
    with RawClient(service.port, timeout=30.0) as raw:
        raw.send_head(
            "/api/audio", {"Content-Type": CONTENT_TYPE, "Content-Length": str(10 * 1024**3)}
        )
        response = raw.response()
        assert response.status == 401
        assert raw.is_closed_by_server()


def test_health_and_metrics_stay_open(service: Service) -> None:
    """Tokens guard /api/* only: probes and scrapers need none."""
    with service.client() as client:
        assert client.get("/health").status_code == 200
        assert client.get("/metrics").status_code == 200


def test_idempotency_keys_are_scoped_by_token(service: Service, recording: bytes) -> None:
    """Two clients with different tokens using the same key get two jobs, never each other's."""
    ids = []
    for token in TOKENS:
        with service.client(headers={**bearer(token), "Idempotency-Key": "shared-key-1"}) as c:
            response = c.post("/api/audio", files={"file": ("a.mp3", recording)})
        assert response.status_code == 202, response.text
        assert "idempotent-replayed" not in response.headers
        ids.append(response.json()["job_id"])
    assert ids[0] != ids[1]
    with service.client(headers={**bearer(TOKENS[0]), "Idempotency-Key": "shared-key-1"}) as c:
        again = c.post("/api/audio", files={"file": ("a.mp3", recording)})
    assert again.json()["job_id"] == ids[0]
