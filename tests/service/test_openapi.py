"""``GET /api/openapi.json`` through the real server: a valid OpenAPI 3.1 document the answers obey.

The flows of the API's tests run here on a service whose clients check each
answer against the served document (``tests/support/openapi.py``); the
same check is on in ``test_api.py``, ``test_auth.py`` and
``test_disk_full.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jsonschema import ValidationError
from openapi_spec_validator import validate

from tests.support.multipart import CONTENT_TYPE, form
from tests.support.openapi import Conformance
from tests.support.service import Service, running_service
from transcriber_app.web.api import api_document

CAP = 1024 * 1024

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with a 1 MiB cap, its answers checked against its document."""
    config = {"storage": {"max_record_bytes": CAP}}
    with running_service(tmp_path_factory.mktemp("openapi"), config=config) as started:
        started.check_answers()
        yield started


def test_served_document_is_valid_openapi_31(service: Service) -> None:
    """The served document validates as OpenAPI 3.1 and is the one the code builds."""
    with service.client() as client:
        response = client.get("/api/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document["openapi"] == "3.1.0"
    validate(document)
    assert document == api_document(tokens=False)
    assert "securitySchemes" not in document["components"]


def test_flows_answer_as_documented(service: Service, recording: bytes) -> None:
    """Upload, status in every stage, refusals, health and metrics: each answer fits its schema."""
    conformance = service.conformance
    assert isinstance(conformance, Conformance)
    with service.client() as client:
        accepted = client.post("/api/audio", files={"file": ("a.mp3", recording, "audio/mpeg")})
        job_id = accepted.json()["job_id"]
        client.get(f"/api/status/{job_id}")
        garbage = client.post("/api/audio", files={"file": ("a.mp3", b"not audio " * 50)})
        replayed = client.post(
            "/api/audio",
            files={"file": ("a.mp3", recording)},
            headers={"Idempotency-Key": "openapi-flow-1"},
        )
        client.post(
            "/api/audio",
            files={"file": ("a.mp3", recording + b"\x00")},
            headers={"Idempotency-Key": "openapi-flow-1"},
        )
        client.get("/api/status/no-such-job")
        client.post("/api/audio", files={"file": ("a.mp3", b"")})
        client.post("/api/audio", content=b"RIFF")
        too_large = form(b"\x00" * (CAP + 1))
        client.post("/api/audio", content=too_large, headers={"Content-Type": CONTENT_TYPE})
        client.get("/health")
        client.get("/metrics")
    service.wait_for_job(job_id)
    service.wait_for_job(garbage.json()["job_id"])
    service.wait_for_job(replayed.json()["job_id"])
    expected = {
        "POST /api/audio 202",
        "POST /api/audio 400",
        "POST /api/audio 413",
        "POST /api/audio 415",
        "POST /api/audio 422",
        "GET /api/status/{job_id} 200",
        "GET /api/status/{job_id} 404",
        "GET /api/openapi.json 200",
        "GET /health 200",
        "GET /metrics 200",
    }
    assert expected <= set(conformance.checked)


def test_an_answer_off_the_document_is_caught(service: Service) -> None:
    """The check is live: a body the document does not allow fails it."""
    conformance = service.conformance
    assert isinstance(conformance, Conformance)
    schema = conformance.schema_of("/api/status/{job_id}", "GET", 404, "application/json")
    conformance.validate(schema, {"error": "job_not_found", "message": "no job has this id"})
    for wrong in (
        {"error": "job_not_found"},
        {"error": "made_up_code", "message": "x"},
        {"error": "job_not_found", "message": "x", "extra": 1},
    ):
        with pytest.raises(ValidationError):
            conformance.validate(schema, wrong)
    with pytest.raises(AssertionError, match="status not in the document"):
        conformance.schema_of("/api/status/{job_id}", "GET", 418, "application/json")
