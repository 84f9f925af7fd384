"""The OpenAI-compatible ``/v1`` routes, driven by the official ``openai`` client (SPEC §19).

The client is a real one that nobody here wrote: pointed at the running
service's ``/v1``, it must get what it gets from OpenAI. The memory
recognizer gives a known text (and translates deterministically), so each
answer can be checked word for word.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openai.types.audio import TranscriptionDiarized

import openai
from tests.support.dialogue import conversation
from tests.support.service import Service, running_service

TOKEN = "openai-token-b3BlbmFp"
#: Longer than one cue's two lines of 42 characters: a stream sends it in pieces.
TEXT = (
    "Hello there. This is the memory recognizer speaking."
    " It says the same words for every recording it is sent."
)
MAX_BYTES = 2 * 1024 * 1024

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The service with one API token, a known text and a 2 MiB cap."""
    config = {
        "http": {"api_tokens": [TOKEN]},
        "memory": {"text": TEXT},
        "storage": {"max_record_bytes": MAX_BYTES},
    }
    with running_service(tmp_path_factory.mktemp("openai"), config=config) as started:
        started.check_answers()
        yield started


@pytest.fixture
def client(service: Service) -> Iterator[openai.OpenAI]:
    """The official client on the service's /v1, with the right token and no retries."""
    with openai.OpenAI(
        base_url=f"{service.base_url}/v1", api_key=TOKEN, max_retries=0, timeout=30
    ) as made:
        yield made


def test_json_answer_is_the_text_and_its_usage(client: openai.OpenAI, recording: bytes) -> None:
    """The default format is {text, usage: {type: duration, seconds}}, seconds rounded up."""
    raw = client.audio.transcriptions.with_raw_response.create(
        model="whisper-1", file=("a.mp3", recording)
    )
    answer = raw.parse()
    assert answer.text == TEXT
    assert answer.usage is not None
    assert answer.usage.type == "duration"
    assert answer.usage.seconds == 1  # the 1-second tone
    assert raw.headers["transcriber-job-id"]


def test_text_srt_and_vtt_are_plain_bodies(client: openai.OpenAI, recording: bytes) -> None:
    """text is the transcript alone; srt and vtt are subtitles of it with timings."""
    text = client.audio.transcriptions.create(
        model="whisper-1", file=("a.mp3", recording), response_format="text"
    )
    assert text == TEXT
    srt = client.audio.transcriptions.create(
        model="whisper-1", file=("a.mp3", recording), response_format="srt"
    )
    assert srt.startswith("1\n00:00:00,000 --> ")
    assert "Hello there." in srt
    vtt = client.audio.transcriptions.create(
        model="whisper-1", file=("a.mp3", recording), response_format="vtt"
    )
    assert vtt.startswith("WEBVTT")
    assert "Hello there." in vtt


def test_verbose_json_has_segments_by_default_and_words_only_when_asked(
    client: openai.OpenAI, recording: bytes
) -> None:
    """verbose_json: segments by default; words with the word granularity; times in seconds."""
    plain = client.audio.transcriptions.create(
        model="whisper-1", file=("a.mp3", recording), response_format="verbose_json"
    )
    assert plain.text == TEXT
    assert plain.language == ""  # auto, and the memory recognizer detects nothing
    assert 0.9 <= plain.duration < 1.5
    assert plain.words is None
    assert plain.segments
    assert " ".join(s.text for s in plain.segments) == TEXT
    assert plain.segments[0].start == 0.0
    starts = [s.start for s in plain.segments]
    assert starts == sorted(starts)
    assert starts[-1] < plain.duration
    words = client.audio.transcriptions.create(
        model="whisper-1",
        file=("a.mp3", recording),
        response_format="verbose_json",
        timestamp_granularities=["word"],
    )
    assert words.segments is None
    assert words.words is not None
    assert [w.word for w in words.words] == TEXT.split()
    assert all(0 <= w.start <= w.end <= words.duration + 0.01 for w in words.words)
    both = client.audio.transcriptions.create(
        model="whisper-1",
        file=("a.mp3", recording),
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
    )
    assert both.words is not None
    assert both.segments is not None


def test_granularities_without_verbose_json_are_refused(
    client: openai.OpenAI, recording: bytes
) -> None:
    """timestamp_granularities[] with json is a 400 naming the field, in OpenAI's shape."""
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.transcriptions.create(
            model="whisper-1",
            file=("a.mp3", recording),
            timestamp_granularities=["word"],
        )
    assert refused.value.code == "invalid_value"
    assert refused.value.param == "timestamp_granularities[]"


def test_language_and_prompt_reach_the_job(
    client: openai.OpenAI, service: Service, recording: bytes
) -> None:
    """language is kept as asked and shown by /api/status; the heard language is the asked one."""
    raw = client.audio.transcriptions.with_raw_response.create(
        model="whisper-1",
        file=("a.mp3", recording),
        language="ru",
        prompt="Names: Ярослав, Dmitri.",
        response_format="verbose_json",
    )
    assert raw.parse().language == "ru"
    job_id = raw.headers["transcriber-job-id"]
    with service.client(headers={"Authorization": f"Bearer {TOKEN}"}) as api:
        status = api.get(f"/api/status/{job_id}").json()
    assert (status["state"], status["language_requested"], status["language"]) == (
        "done",
        "ru",
        "ru",
    )
    (prompt,) = service.query("SELECT prompt FROM jobs WHERE id = ?", (job_id,))[0]
    assert prompt == "Names: Ярослав, Dmitri."


def test_a_bad_language_is_a_400_naming_the_accepted_values(
    client: openai.OpenAI, recording: bytes
) -> None:
    """language "xx" is refused with bad_language, param language, listing what is accepted."""
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.transcriptions.create(
            model="whisper-1", file=("a.mp3", recording), language="xx"
        )
    assert refused.value.code == "bad_language"
    assert refused.value.param == "language"
    assert "auto, de, en" in refused.value.message
    body = refused.value.body
    assert isinstance(body, dict)
    assert set(body) == {"message", "type", "param", "code"}
    assert body["type"] == "invalid_request_error"


def test_diarized_json_names_the_speaker_of_each_segment(
    client: openai.OpenAI, tmp_path: Path
) -> None:
    """diarized_json runs the job with speakers auto (the offline diarizer is installed here)."""
    made = conversation(tmp_path / "talk.ogg", voices=2, turns=2)
    answer = client.audio.transcriptions.create(
        model="whisper-1",
        file=("talk.ogg", made.audio.read_bytes()),
        response_format="diarized_json",
    )
    assert isinstance(answer, TranscriptionDiarized)
    assert answer.task == "transcribe"
    assert answer.text == TEXT
    assert answer.segments
    assert all(segment.type == "transcript.text.segment" for segment in answer.segments)
    assert {segment.speaker for segment in answer.segments} <= {
        f"Speaker {n}" for n in range(1, 11)
    }
    assert answer.segments[0].speaker == "Speaker 1"
    assert " ".join(segment.text for segment in answer.segments) == TEXT


def test_an_unknown_model_is_refused(client: openai.OpenAI, recording: bytes) -> None:
    """A model no /v1/models lists is a 400 on the model field."""
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.transcriptions.create(model="gpt-5-ears", file=("a.mp3", recording))
    assert (refused.value.code, refused.value.param) == ("model_not_found", "model")


def test_models_lists_whisper_1_and_the_recognizer(client: openai.OpenAI) -> None:
    """GET /v1/models has whisper-1 and the configured recognizer's model; each retrievable."""
    ids = [model.id for model in client.models.list()]
    assert ids == ["whisper-1", "memory"]
    assert client.models.retrieve("memory").id == "memory"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("whisper-2")


def test_translation_is_the_recognizers_english(client: openai.OpenAI, recording: bytes) -> None:
    """translations run the translate task: the memory recognizer's deterministic English."""
    # The client marks translations deprecated (OpenAI steers to its newer models); the
    # route it calls is the one every older client and tool still uses.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        answer = client.audio.translations.create(model="whisper-1", file=("a.mp3", recording))
        verbose = client.audio.translations.create(
            model="whisper-1", file=("a.mp3", recording), response_format="verbose_json"
        )
    assert answer.text == "In English: " + TEXT
    assert verbose.text == "In English: " + TEXT
    assert verbose.language == "en"


def test_stream_sends_deltas_then_done(client: openai.OpenAI, recording: bytes) -> None:
    """stream=true: transcript.text.delta events whose text adds up, then transcript.text.done."""
    events = list(
        client.audio.transcriptions.create(
            model="whisper-1", file=("a.mp3", recording), stream=True
        )
    )
    assert [e.type for e in events[:-1]] == ["transcript.text.delta"] * (len(events) - 1)
    deltas = [e.delta for e in events[:-1]]  # type: ignore[union-attr]
    segments = client.audio.transcriptions.create(
        model="whisper-1", file=("a.mp3", recording), response_format="verbose_json"
    ).segments
    assert segments is not None
    assert len(segments) >= 2
    # One delta per segment, spaced so that they add up to the text.
    assert [d.strip() for d in deltas] == [s.text for s in segments]
    assert "".join(deltas) == TEXT
    done = events[-1]
    assert done.type == "transcript.text.done"
    assert done.text == TEXT


def test_a_wrong_token_is_401_in_openais_shape(service: Service, recording: bytes) -> None:
    """Another token is refused with AuthenticationError, and no job is made."""
    before = service.query("SELECT count(*) FROM jobs")[0][0]
    with openai.OpenAI(
        base_url=f"{service.base_url}/v1", api_key="wrong", max_retries=0
    ) as stranger:
        with pytest.raises(openai.AuthenticationError) as refused:
            stranger.audio.transcriptions.create(model="whisper-1", file=("a.mp3", recording))
        with pytest.raises(openai.AuthenticationError):
            stranger.models.list()
    assert refused.value.code == "unauthorized"
    assert service.query("SELECT count(*) FROM jobs")[0][0] == before


def test_a_file_over_the_limit_is_413(client: openai.OpenAI, service: Service) -> None:
    """A recording larger than [storage] max_record_bytes is a 413, nothing stored or staged."""
    before = service.stored_names()
    with pytest.raises(openai.APIStatusError) as refused:
        client.audio.transcriptions.create(
            model="whisper-1", file=("big.mp3", b"\0" * (MAX_BYTES + 1))
        )
    assert refused.value.status_code == 413
    assert refused.value.code == "too_large"
    assert service.stored_names() == before
    assert service.staging_files() == []


def test_the_async_client_gets_the_same_answers(service: Service, recording: bytes) -> None:
    """AsyncOpenAI: three transcriptions at once and a stream, all with the known text."""

    async def run() -> None:
        async with openai.AsyncOpenAI(
            base_url=f"{service.base_url}/v1", api_key=TOKEN, max_retries=0
        ) as client:
            answers = await asyncio.gather(
                *(
                    client.audio.transcriptions.create(model="whisper-1", file=("a.mp3", recording))
                    for _ in range(3)
                )
            )
            assert [a.text for a in answers] == [TEXT] * 3
            stream = await client.audio.transcriptions.create(
                model="whisper-1", file=("a.mp3", recording), stream=True
            )
            deltas = [event async for event in stream]
            assert deltas[-1].type == "transcript.text.done"
            assert deltas[-1].text == TEXT

    asyncio.run(run())


def test_a_failed_recording_is_a_400_with_the_job_id(
    client: openai.OpenAI, recording: bytes
) -> None:
    """A file that is not a recording ends failed: a 400 with its reason and the job's id."""
    with pytest.raises(openai.BadRequestError) as refused:
        client.audio.transcriptions.create(model="whisper-1", file=("a.mp3", b"not audio at all"))
    assert refused.value.code == "recording_failed"
    assert refused.value.response.headers["transcriber-job-id"]


def test_a_retry_with_the_same_idempotency_key_waits_for_the_first_job(
    service: Service, recording: bytes
) -> None:
    """Two requests with one Idempotency-Key answer from one job (the client's own retries)."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "retry-1"}
    with service.client(headers=headers, timeout=30) as api:
        data = {"model": "whisper-1"}
        first = api.post(
            "/v1/audio/transcriptions", files={"file": ("a.mp3", recording)}, data=data
        )
        second = api.post(
            "/v1/audio/transcriptions", files={"file": ("a.mp3", recording)}, data=data
        )
    assert first.status_code == second.status_code == 200
    assert first.headers["transcriber-job-id"] == second.headers["transcriber-job-id"]


def test_unknown_v1_paths_answer_in_openais_shape(service: Service) -> None:
    """A /v1 path nobody serves is a 404 with OpenAI's error object."""
    with service.client(headers={"Authorization": f"Bearer {TOKEN}"}) as api:
        response = api.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "invalid_request_error"


def _multipart(recording: bytes, fields: dict[str, str]) -> tuple[bytes, str]:
    boundary = "b0undary9"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.mp3"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + recording
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return b"".join(parts), boundary


@pytest.fixture(scope="module")
def slow_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The memory recognizer pends 3 checks, each a second apart: a job takes seconds."""
    config = {
        "memory": {"text": TEXT, "checks_before_done": 3},
        "queue": {"idle_poll_seconds": 1.0},
    }
    with running_service(tmp_path_factory.mktemp("slow"), config=config) as started:
        yield started


def test_a_client_that_disconnects_leaves_the_job_to_end_once(
    slow_service: Service, recording: bytes
) -> None:
    """A client gone mid-wait: its job still ends done, recognised exactly once."""
    body, boundary = _multipart(recording, {"model": "whisper-1"})
    head = (
        "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", slow_service.port), timeout=10) as sock:
        sock.sendall(head + body)
        line = slow_service.wait_for_log("openai.received")
    # The socket is closed while the answer waits for the job.
    job_id = line.split("job_id=")[1].split()[0]
    slow_service.wait_for_log("openai.client_gone", job_id)
    status = slow_service.wait_for_job(job_id, timeout=30)
    assert (status["state"], status["text"]) == ("done", TEXT)
    starts = [line for line in slow_service.log_lines() if "step.start" in line and job_id in line]
    assert sum("state=recognize" in line for line in starts) == 1


def test_a_stream_keeps_the_text_of_a_waiting_job_coming(
    slow_service: Service, recording: bytes
) -> None:
    """A stream opened on a slow job ends with its done event once the job ends."""
    with (
        httpx.Client(base_url=slow_service.base_url, timeout=30) as api,
        api.stream(
            "POST",
            "/v1/audio/transcriptions",
            files={"file": ("a.mp3", recording)},
            data={"model": "whisper-1", "stream": "true"},
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    events = [json.loads(line.removeprefix("data: ")) for line in lines]
    assert events[-1] == {
        "type": "transcript.text.done",
        "text": TEXT,
        "logprobs": None,
        "usage": {"type": "duration", "seconds": 1},
    }


def test_a_hundred_requests_at_once_and_a_voice_note_meanwhile(
    service: Service, recording: bytes
) -> None:
    """100 concurrent /v1 requests are all answered; a voice note sent meanwhile is done too."""
    results: list[Any] = []

    async def many() -> None:
        async with openai.AsyncOpenAI(
            base_url=f"{service.base_url}/v1",
            api_key=TOKEN,
            max_retries=0,
            timeout=120,
            http_client=openai.DefaultAsyncHttpxClient(
                limits=httpx.Limits(max_connections=100), timeout=120
            ),
        ) as client:
            answers = await asyncio.gather(
                *(
                    client.audio.transcriptions.create(model="whisper-1", file=("a.mp3", recording))
                    for _ in range(100)
                ),
                return_exceptions=True,
            )
            results.extend(answers)

    runner = threading.Thread(target=lambda: asyncio.run(many()))
    runner.start()
    try:
        with service.client(headers={"Authorization": f"Bearer {TOKEN}"}) as api:
            started = time.monotonic()
            note = api.post("/api/audio", files={"file": ("note.ogg", recording)}).json()["job_id"]
            status = service.wait_for_job(
                note, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
            )
            note_seconds = time.monotonic() - started
    finally:
        runner.join(timeout=180)
    assert status["state"] == "done"
    assert not runner.is_alive()
    assert [getattr(r, "text", r) for r in results] == [TEXT] * 100
    # Not a speed claim (bench/ measures those): only that the note was not starved.
    assert note_seconds < 60
