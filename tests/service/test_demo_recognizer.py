"""The demo recognizer set from the config file (``[memory]``), through the real service."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.service import running_service

pytestmark = pytest.mark.slow


def test_configured_text_comes_after_the_pending_checks(tmp_path: Path, recording: bytes) -> None:
    """[memory] text and checks_before_done: the job waits in check, then is done with that text."""
    config = {"memory": {"text": "Демо: настроенный текст.", "checks_before_done": 1}}
    with running_service(tmp_path, config=config) as service, service.client() as client:
        response = client.post("/api/audio", files={"file": ("a.mp3", recording, "audio/mpeg")})
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]
        status = service.wait_for_job(job_id, timeout=30.0)
        assert status["state"] == "done"
        assert status["text"] == "Демо: настроенный текст."
        # One "not ready yet" answer: the check step ran twice, the first time staying in check.
        checks = [
            line
            for line in service.log_lines()
            if "event=step.end" in line and f"job_id={job_id}" in line and "state=check" in line
        ]
        assert [line.split(" to=")[1].split()[0] for line in checks] == ["check", "done"]


def test_fail_with_makes_every_job_fail_with_that_reason(tmp_path: Path, recording: bytes) -> None:
    """[memory] fail_with: each recording ends failed, its status carrying the configured reason."""
    config = {"memory": {"fail_with": "demo: recognition switched off"}}
    with running_service(tmp_path, config=config) as service, service.client() as client:
        for _ in range(2):
            response = client.post("/api/audio", files={"file": ("a.mp3", recording, "audio/mpeg")})
            assert response.status_code == 202, response.text
            status = service.wait_for_job(response.json()["job_id"])
            assert status["state"] == "failed"
            assert status["error"] == "demo: recognition switched off"
