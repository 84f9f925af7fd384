"""``/v1`` refuses the fields only ``/api/audio`` takes instead of ignoring them (ADR 68).

The red team sent ``callback_url`` to ``/v1``: it was taken and never
called. Now each of ``/api/audio``'s own fields is 400 ``unknown_parameter``
naming it, before a job is made.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.admin import in_process_client
from tests.support.media import tone
from transcriber_adapters.memory import ManualClock
from transcriber_app.bootstrap import Runtime, build
from transcriber_app.config import Config, HttpConfig, OpenAIConfig, StorageConfig
from transcriber_app.web.openai_api import API_ONLY_FIELDS


@pytest.fixture
async def quick_runtime(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Runtime]:
    """A runtime whose ``/v1`` answers give up waiting after a second (no workers run here)."""
    config = Config(
        storage=StorageConfig(data_dir=tmp_path / "data"),
        http=HttpConfig(host="127.0.0.1", port=8123),
        openai=OpenAIConfig(wait_seconds=1.0),
    )
    built = await build(config, clock=clock)
    yield built
    await built.close()


@pytest.mark.parametrize(
    ("name", "value"), [("callback_url", "https://example.org/hook"), ("speakers", "2")]
)
async def test_v1_refuses_the_fields_only_api_audio_takes(
    quick_runtime: Runtime, tmp_path: Path, name: str, value: str
) -> None:
    """``callback_url`` or ``speakers`` on ``/v1``: 400 ``unknown_parameter`` naming it, no job."""
    recording = tone(tmp_path / "tone.mp3", 1.0).read_bytes()
    async with in_process_client(quick_runtime) as client:
        answer = await client.post(
            "/v1/audio/transcriptions",
            files={"file": ("a.mp3", recording, "audio/mpeg")},
            data={"model": "whisper-1", name: value},
        )
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("unknown_parameter", name)
    assert "Transcriber-Job-Id" not in answer.headers
    assert sum((await quick_runtime.services.repo.count_by_state()).values()) == 0


def test_the_refused_v1_fields_are_exactly_api_audios_own() -> None:
    """``API_ONLY_FIELDS`` is what ``POST /api/audio`` declares and ``/v1`` does not."""
    from transcriber_app.web.api.declarations import ENDPOINTS  # noqa: PLC0415
    from transcriber_app.web.openai_api import ENDPOINTS as V1  # noqa: PLC0415

    (upload,) = [e for e in ENDPOINTS if (e.method, e.path) == ("POST", "/api/audio")]
    v1 = {field.name for endpoint in V1 for field in endpoint.form}
    assert set(API_ONLY_FIELDS) == {field.name for field in upload.form} - v1
