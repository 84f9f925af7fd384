"""``POST /api/audio``, ``GET /api/status``, ``/health`` and ``/metrics`` through the real server.

One service for the module: a 1 MiB recording cap and a 1-second upload
inactivity timeout, so the limits are reached with small bodies.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.support.multipart import (
    BOUNDARY,
    CONTENT_TYPE,
    RawClient,
    chunked,
    closing,
    form,
    part,
)
from tests.support.service import Service, running_service

CAP = 1024 * 1024
INACTIVITY = 1.0

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with a small cap and a short inactivity timeout."""
    config: dict[str, dict[str, object]] = {
        "storage": {"max_record_bytes": CAP},
        "http": {"upload_inactivity_seconds": INACTIVITY},
    }
    with running_service(tmp_path_factory.mktemp("api"), config=config) as started:
        started.check_answers()
        yield started


@pytest.fixture
def client(service: Service) -> Iterator[httpx.Client]:
    """An httpx client on the service."""
    with service.client() as http:
        yield http


def upload(client: httpx.Client, data: bytes, filename: str = "voice.mp3") -> httpx.Response:
    """POST ``data`` as the ``file`` field."""
    return client.post("/api/audio", files={"file": (filename, data, "audio/mpeg")})


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    """The answer is the JSON error ``code`` with ``status``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] == code
    assert body["message"]


def test_upload_is_accepted_and_reaches_done(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """An upload answers 202 with a job id whose status ends done, naming the duration."""
    response = upload(client, recording)
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    assert set(response.json()) == {"job_id"}
    assert response.headers["location"] == f"/api/status/{job_id}"
    status = service.wait_for_job(job_id)
    assert status["state"] == "done"
    assert status["duration"] == pytest.approx(1.0, abs=0.1)
    assert "1.0 seconds" in status["text"]
    assert set(status) == {
        "job_id",
        "state",
        "title",
        "text",
        "duration",
        "created",
        "updated",
        "language_requested",
        "task",
    }
    assert (status["language_requested"], status["task"]) == ("auto", "transcribe")


def test_upload_with_chunked_body_is_accepted(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """A body without Content-Length (chunked) is parsed from the stream like any other."""
    body = form(recording)
    pieces = iter([body[:100], body[100:5000], body[5000:]])
    response = client.post("/api/audio", content=pieces, headers={"Content-Type": CONTENT_TYPE})
    assert response.status_code == 202, response.text
    assert service.wait_for_job(response.json()["job_id"])["state"] == "done"


def test_other_fields_are_ignored(client: httpx.Client, service: Service, recording: bytes) -> None:
    """Fields besides ``file``, before or after it, do not disturb the upload."""
    body = part("note", b"hello") + part("file", recording, filename="a.mp3") + part("x", b"y")
    response = client.post(
        "/api/audio", content=body + closing(), headers={"Content-Type": CONTENT_TYPE}
    )
    assert response.status_code == 202, response.text
    # Ended here: its conversion's staging files are not the next tests' to find.
    assert service.wait_for_job(response.json()["job_id"])["state"] == "done"


def test_garbage_is_accepted_then_failed_by_convert(client: httpx.Client, service: Service) -> None:
    """A body that is not a recording is accepted and later failed with a reason of our own."""
    response = upload(client, b"this is not audio at all " * 100, filename="notes.mp3")
    assert response.status_code == 202
    status = service.wait_for_job(response.json()["job_id"])
    assert status["state"] == "failed"
    assert "ffmpeg" in status["error"]
    assert "/" not in status["error"]


def test_unknown_job_is_404(client: httpx.Client) -> None:
    """Status of an id nobody was given is a JSON 404."""
    assert_error(client.get("/api/status/no-such-job"), 404, "job_not_found")


def test_unknown_route_and_wrong_method_are_json(client: httpx.Client) -> None:
    """Routing errors keep the JSON error shape."""
    assert_error(client.get("/api/nothing"), 404, "not_found")
    assert_error(client.get("/api/audio"), 405, "method_not_allowed")


def test_form_without_file_field_is_400(client: httpx.Client, service: Service) -> None:
    """A form with no ``file`` field is refused as missing_file, leaving nothing behind."""
    before = service.stored_names()
    response = client.post("/api/audio", files={"other": ("a.mp3", b"data")})
    assert_error(response, 400, "missing_file")
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_empty_file_is_400(client: httpx.Client, service: Service) -> None:
    """A ``file`` field with zero bytes is refused as empty_file."""
    assert_error(upload(client, b""), 400, "empty_file")
    assert service.staging_files() == []


@pytest.mark.parametrize("size", [10, 200 * 1024], ids=["small", "past-the-form-bound"])
def test_a_recording_in_another_field_is_missing_file_whatever_its_size(
    client: httpx.Client, service: Service, size: int
) -> None:
    """``-F audio=@...``: 400 ``missing_file`` naming the field, small or larger than the form."""
    before = service.stored_names()
    response = client.post("/api/audio", files={"audio": ("a.mp3", b"a" * size)})
    assert_error(response, 400, "missing_file")
    assert '"file"' in response.json()["message"]
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_a_large_field_after_the_file_is_still_form_too_large(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """The file came first, then more than the form's bound of other fields: 413, nothing kept."""
    before = service.stored_names()
    body = part("file", recording, filename="a.mp3") + part("note", b"n" * (128 * 1024))
    response = client.post(
        "/api/audio", content=body + closing(), headers={"Content-Type": CONTENT_TYPE}
    )
    assert_error(response, 413, "form_too_large")
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_not_multipart_is_415(client: httpx.Client) -> None:
    """A body that is not multipart/form-data is refused with a stable code."""
    assert_error(client.post("/api/audio", content=b"RIFF...."), 415, "not_multipart")
    response = client.post("/api/audio", json={"file": "x"})
    assert_error(response, 415, "not_multipart")


def test_multipart_without_boundary_is_400(client: httpx.Client) -> None:
    """A multipart content type without its boundary cannot be parsed."""
    response = client.post(
        "/api/audio", content=b"x", headers={"Content-Type": "multipart/form-data"}
    )
    assert_error(response, 400, "bad_multipart")


def test_truncated_form_is_400(client: httpx.Client, service: Service, recording: bytes) -> None:
    """A form whose closing boundary never comes is malformed, not a recording."""
    body = part("file", recording, filename="a.mp3")  # no closing boundary
    response = client.post("/api/audio", content=body, headers={"Content-Type": CONTENT_TYPE})
    assert_error(response, 400, "bad_multipart")
    assert service.staging_files() == []


def test_malformed_part_headers_are_400(client: httpx.Client, service: Service) -> None:
    """A part header line the parser cannot read is refused as bad_multipart."""
    body = f"--{BOUNDARY}\r\nthis header line has no colon\r\n\r\ndata\r\n".encode() + closing()
    response = client.post("/api/audio", content=body, headers={"Content-Type": CONTENT_TYPE})
    assert_error(response, 400, "bad_multipart")
    assert service.staging_files() == []


def test_oversized_other_field_is_413(client: httpx.Client, recording: bytes) -> None:
    """Fields besides ``file`` are dropped, but not read without bound: a 413 of their own."""
    body = part("note", b"n" * (128 * 1024)) + part("file", recording, filename="a.mp3")
    response = client.post(
        "/api/audio", content=body + closing(), headers={"Content-Type": CONTENT_TYPE}
    )
    assert_error(response, 413, "form_too_large")
    message = response.json()["message"]
    assert "65536 bytes" in message
    assert str(CAP) not in message


def test_many_small_fields_are_413_form_too_large(client: httpx.Client, recording: bytes) -> None:
    """Thousands of tiny fields add up to the form's bound; the answer names that bound."""
    body = b"".join(part(f"f{i}", b"x") for i in range(2000))
    body += part("file", recording, filename="a.mp3") + closing()
    response = client.post("/api/audio", content=body, headers={"Content-Type": CONTENT_TYPE})
    assert_error(response, 413, "form_too_large")


def test_bad_idempotency_key_is_400(client: httpx.Client, recording: bytes) -> None:
    """An Idempotency-Key with spaces or over 255 characters is refused before the body."""
    for key in ("has space", "x" * 256):
        response = client.post(
            "/api/audio",
            files={"file": ("a.mp3", recording)},
            headers={"Idempotency-Key": key},
        )
        assert_error(response, 400, "bad_idempotency_key")


def _upload_with_key(client: httpx.Client, data: bytes, key: str) -> httpx.Response:
    return client.post(
        "/api/audio",
        files={"file": ("voice.mp3", data, "audio/mpeg")},
        headers={"Idempotency-Key": key},
    )


def test_replay_with_the_same_file_gets_the_first_job(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """A retry with a known Idempotency-Key and the same bytes gets the first job; no new file."""
    job_id = _upload_with_key(client, recording, "same-file-3").json()["job_id"]
    service.wait_for_job(job_id)
    names = service.stored_names()
    again = _upload_with_key(client, recording, "same-file-3")
    assert again.status_code == 202, again.text
    assert again.json() == {"job_id": job_id}
    assert again.headers["idempotent-replayed"] == "true"
    assert service.stored_names() == names
    assert service.staging_files() == []


def test_idempotency_key_reused_with_another_file_is_422(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """The same Idempotency-Key with different bytes is 422, with no second job and no file."""
    job_id = _upload_with_key(client, recording, "reused-key-9").json()["job_id"]
    service.wait_for_job(job_id)
    names = service.stored_names()
    jobs = service.query("SELECT count(*) FROM jobs")
    other = _upload_with_key(client, recording + b"\x00", "reused-key-9")
    assert_error(other, 422, "idempotency_key_reused")
    assert job_id not in other.text
    assert service.stored_names() == names
    assert service.query("SELECT count(*) FROM jobs") == jobs
    assert service.staging_files() == []
    # The key still answers for its own file.
    assert _upload_with_key(client, recording, "reused-key-9").json() == {"job_id": job_id}


def test_replay_of_a_job_without_digest_is_answered_before_the_body(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """A key whose job predates digests (migration 0004) is answered at once, no body read."""
    job_id = _upload_with_key(client, recording, "early-answer-7").json()["job_id"]
    service.wait_for_job(job_id)
    with contextlib.closing(sqlite3.connect(service.data_dir / "transcriber.db")) as conn:
        conn.execute("UPDATE jobs SET upload_digest = NULL WHERE id = ?", (job_id,))
        conn.commit()
    names = service.stored_names()
    with RawClient(service.port, timeout=5.0) as raw:
        raw.send_head(
            "/api/audio",
            {
                "Content-Type": CONTENT_TYPE,
                "Content-Length": str(CAP - 1),
                "Idempotency-Key": "early-answer-7",
            },
        )
        response = raw.response()
        assert response.status == 202
        assert json.loads(response.body) == {"job_id": job_id}
        assert response.headers.get("idempotent-replayed") == "true"
    assert service.stored_names() == names
    assert service.staging_files() == []


def test_declared_length_over_cap_is_413_before_reading(service: Service) -> None:
    """A Content-Length over the cap is answered 413 at once, though no body byte was sent."""
    with RawClient(service.port, timeout=5.0) as raw:
        raw.send_head(
            "/api/audio",
            {"Content-Type": CONTENT_TYPE, "Content-Length": str(10 * 1024**3)},
        )
        # No body byte is sent: a 413, not the 408 of the inactivity timeout, was decided on
        # the head alone.
        response = raw.response()
        assert response.status == 413
        assert b'"too_large"' in response.body
        assert raw.is_closed_by_server()
    assert service.staging_files() == []


def test_body_growing_past_cap_is_413_while_streaming(service: Service) -> None:
    """A chunked body whose file passes the cap is answered 413 before the sender finishes."""
    before = service.stored_names()
    with RawClient(service.port, timeout=5.0) as raw:
        raw.send_head(
            "/api/audio",
            {"Content-Type": CONTENT_TYPE, "Transfer-Encoding": "chunked"},
        )
        head = part("file", b"", filename="big.mp3")[:-2]  # the part's headers, no data yet
        raw.send(chunked([head, b"\x00" * (CAP + 64 * 1024)])[: -len(b"0\r\n\r\n")])
        # The body is left unfinished: the answer cannot have waited for its end.
        response = raw.response()
        assert response.status == 413
        assert b'"too_large"' in response.body
        assert response.headers.get("connection") == "close"
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_endless_data_after_the_form_is_refused(service: Service, recording: bytes) -> None:
    """Bytes after the closing boundary cannot keep a request open: 400 and no job."""
    before = service.stored_names()
    with RawClient(service.port, timeout=5.0) as raw:
        raw.send_head(
            "/api/audio",
            {"Content-Type": CONTENT_TYPE, "Transfer-Encoding": "chunked"},
        )
        junk = [b"\x00" * (32 * 1024)] * 8
        raw.send(chunked([form(recording), *junk])[: -len(b"0\r\n\r\n")])
        response = raw.response()
        assert response.status == 400
        assert b'"bad_multipart"' in response.body
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_body_slightly_past_cap_gets_413_on_a_kept_connection(
    client: httpx.Client, service: Service
) -> None:
    """A whole body a little over the cap is read to its end and answered 413 cleanly."""
    response = upload(client, b"\x00" * (CAP + 1))
    assert_error(response, 413, "too_large")
    assert service.staging_files() == []


def test_stalled_upload_is_408_and_leaves_nothing(service: Service, recording: bytes) -> None:
    """An upload that stops sending is aborted after the inactivity timeout; no file, no job."""
    body = form(recording)
    before = service.stored_names()
    with RawClient(service.port, timeout=5.0) as raw:
        raw.send_head(
            "/api/audio", {"Content-Type": CONTENT_TYPE, "Content-Length": str(len(body))}
        )
        raw.send(body[:4000])
        started = time.monotonic()
        response = raw.response()
        waited = time.monotonic() - started
        assert response.status == 408
        assert b'"upload_timeout"' in response.body
        # Not before the timeout; the 408 upload_timeout itself says which timer ended it.
        assert waited > INACTIVITY * 0.8
        assert raw.is_closed_by_server()
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_slow_upload_within_inactivity_passes(service: Service, recording: bytes) -> None:
    """Pauses shorter than the inactivity timeout add up freely, within the whole deadline."""
    body = form(recording)
    # Pauses of a tenth of the timeout leave nine tenths for a loaded box to be late; 16 of
    # them add up to 1.6 timeouts.
    size = len(body) // 16 + 1
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    with RawClient(service.port, timeout=30.0) as raw:
        raw.send_head(
            "/api/audio", {"Content-Type": CONTENT_TYPE, "Content-Length": str(len(body))}
        )
        started = time.monotonic()
        for piece in pieces:
            raw.send(piece)
            time.sleep(INACTIVITY * 0.1)
        response = raw.response()
    assert time.monotonic() - started > INACTIVITY * 1.2
    assert response.status == 202, response.body
    # Ended here: its conversion's staging files are not the next tests' to find.
    service.wait_for_job(json.loads(response.body)["job_id"])


def test_client_disconnect_mid_upload_leaves_nothing(service: Service, recording: bytes) -> None:
    """A sender that goes away halfway leaves no staging file, no stored file and no job."""
    body = form(recording)
    # Earlier tests' jobs end first: a conversion in flight has staging files of its own.
    for (job_id,) in service.query("SELECT id FROM jobs"):
        service.wait_for_job(job_id)
    before = service.stored_names()
    jobs_before = service.query("SELECT count(*) FROM jobs")
    with RawClient(service.port) as raw:
        raw.send_head(
            "/api/audio", {"Content-Type": CONTENT_TYPE, "Content-Length": str(len(body))}
        )
        raw.send(body[: len(body) // 2])
        time.sleep(0.1)
    service.wait_for_log("upload.aborted")
    assert service.stored_names() == before
    assert service.staging_files() == []
    assert service.query("SELECT count(*) FROM jobs") == jobs_before


def test_health_is_200(client: httpx.Client) -> None:
    """/health answers 200 while the database answers."""
    response = client.get("/health")
    assert response.status_code == 200
    assert response.text == "ok\n"


def _sample(exposition: str, name: str, **labels: str) -> float:
    """The value of one sample in a Prometheus text exposition; 0 for a series not there yet."""
    selector = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    pattern = re.escape(name + (f"{{{selector}}}" if labels else "")) + r" (\S+)"
    found = re.search(rf"^{pattern}$", exposition, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_metrics_count_jobs_steps_and_uploads(
    client: httpx.Client, service: Service, recording: bytes
) -> None:
    """/metrics shows every metric, and a finished job moves the counts it should."""
    before = client.get("/metrics").text
    job_id = upload(client, recording).json()["job_id"]
    service.wait_for_job(job_id)
    # The queue gauges are read at most every 5 s per process (red team 3, finding 5).
    deadline = time.monotonic() + 15
    response = client.get("/metrics")
    while _sample(response.text, "transcriber_jobs", state="done") < 1:
        assert time.monotonic() < deadline, "the gauges never showed the done job"
        time.sleep(0.1)
        response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    after = response.text
    for name in (
        "transcriber_jobs",
        "transcriber_queue_depth",
        "transcriber_acquires_total",
        "transcriber_step_duration_seconds_bucket",
        "transcriber_step_failures_total",
        "transcriber_uploads_total",
        "transcriber_upload_bytes_total",
    ):
        assert f"\n{name}" in after, name

    def grew(name: str, **labels: str) -> float:
        return _sample(after, name, **labels) - _sample(before, name, **labels)

    assert _sample(after, "transcriber_jobs", state="done") >= 1
    assert _sample(after, "transcriber_queue_depth") == 0
    for state in ("convert", "recognize", "check"):
        assert grew("transcriber_acquires_total", state=state) == 1
        assert grew("transcriber_step_duration_seconds_count", state=state) == 1
    assert grew("transcriber_uploads_total", outcome="accepted") == 1
    assert grew("transcriber_upload_bytes_total") == len(recording)


def test_metrics_count_failures(client: httpx.Client, service: Service) -> None:
    """A recording failed by convert counts as a failure of kind "failed" in state convert."""
    before = _sample(
        client.get("/metrics").text,
        "transcriber_step_failures_total",
        state="convert",
        kind="failed",
    )
    job_id = upload(client, b"not audio " * 50).json()["job_id"]
    assert service.wait_for_job(job_id)["state"] == "failed"
    after = _sample(
        client.get("/metrics").text,
        "transcriber_step_failures_total",
        state="convert",
        kind="failed",
    )
    assert after == before + 1


def test_sender_file_name_is_not_echoed(client: httpx.Client) -> None:
    """No answer repeats the sender's file name, not even an error."""
    response = client.post(
        "/api/audio",
        files={"file": ("секретное-слово.mp3", b"")},
    )
    assert_error(response, 400, "empty_file")
    assert "секрет" not in response.text
