"""The SpeechKit recognizer beyond its contract: request shape, parsing, status classes, pacing."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.fake_speechkit import API_KEY, OTHER_CHANNEL_TEXT, FakeSpeechKit, chunk
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.memory import MemoryBudgetStore
from transcriber_adapters.yandex import (
    ABILITIES,
    LANGUAGE_CODES,
    YandexRecognizer,
    advised_delay,
    read_operation,
    read_recognition,
)
from transcriber_core.entities import FileRecord, Location, Word
from transcriber_core.errors import (
    BudgetSpent,
    DirectRefused,
    PermanentError,
    RecognitionFailed,
    RecognizerCredentialsRejected,
    RecognizerThrottled,
    RecognizerUnavailable,
    ServiceCondition,
    TranscriberError,
    TransientError,
)
from transcriber_core.languages import RecognitionRequest
from transcriber_core.ports import Pending, Recognized, Rejected

BUCKET = "private-audio-bucket"
OBJECT_KEY = "transcriber/c2VjcmV0LW9iamVjdC1rZXk.ogg"
AUDIO = FileRecord(
    id="c2VjcmV0LW9iamVjdC1rZXk",
    location=Location.S3,
    object_key=OBJECT_KEY,
    size=1000,
    extension=".ogg",
    created=datetime(2026, 1, 1, tzinfo=UTC),
)
AUDIO_URI = f"https://storage.yandexcloud.net/{BUCKET}/{OBJECT_KEY}"
#: What no error text may ever hold (reference: Privacy).
SECRETS = (API_KEY, BUCKET, OBJECT_KEY, AUDIO.id, "storage.yandexcloud.net", "127.0.0.1")


class FakeClock:
    """The budget store's clock, moved only when a test says so."""

    def __init__(self) -> None:
        self.current = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        """The time the test moved the clock to."""
        return self.current

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)


MakeRecognizer = Callable[..., YandexRecognizer]


@pytest.fixture
async def fake() -> AsyncIterator[FakeSpeechKit]:
    async with FakeSpeechKit() as server:
        yield server


@pytest.fixture
async def make(fake: FakeSpeechKit) -> AsyncIterator[MakeRecognizer]:
    """Build recognizers on the fake; every one is closed after the test."""
    made: list[YandexRecognizer] = []

    def build(**options: Any) -> YandexRecognizer:
        settings: dict[str, Any] = {
            "api_key": API_KEY,
            "bucket": BUCKET,
            "stt_url": fake.stt_url,
            "operation_url": fake.operation_url,
            "v3_url": fake.v3_url,
            # The tests of v2's shapes as they were; the v3 tests below ask for v3.
            "async_api": "v2",
        }
        clock = options.pop("clock", None)
        if clock is not None and "budgets" not in options:
            # Budgets are kept on their store's clock (ADR 30).
            options["budgets"] = MemoryBudgetStore(clock)
        settings.update(options)
        recognizer = YandexRecognizer(**settings)
        made.append(recognizer)
        return recognizer

    yield build
    for recognizer in made:
        await recognizer.close()


@pytest.fixture
def recognizer(make: MakeRecognizer) -> YandexRecognizer:
    return make()


def _assert_secret_free(error: TranscriberError) -> None:
    """The error is in our words: none of the secrets, and no vendor error in its chain."""
    text = str(error)
    assert text
    for secret in SECRETS:
        assert secret not in text
    assert error.__cause__ is None


async def test_start_sends_the_documented_body(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """The start body is exactly the documented one: OGG_OPUS and no LPCM-only fields."""
    await recognizer.start(AUDIO, duration=12.0)
    (request,) = fake.requests
    assert request.method == "POST"
    assert request.path == "/speech/stt/v2/longRunningRecognize"
    assert request.body == {
        "config": {
            "specification": {
                "languageCode": "ru-RU",
                "model": "general",
                "audioEncoding": "OGG_OPUS",
            }
        },
        "audio": {"uri": AUDIO_URI},
    }


async def test_language_and_model_are_configurable(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """Configured language and model reach the specification unchanged."""
    await make(language="en-US", model="deferred-general").start(AUDIO, duration=1.0)
    spec = fake.requests[0].body["config"]["specification"]
    assert (spec["languageCode"], spec["model"]) == ("en-US", "deferred-general")


@pytest.mark.parametrize(
    ("asked", "sent"), [(None, "en-US"), ("ru", "ru-RU"), ("kk", "kk-KZ"), ("pt", "pt-PT")]
)
async def test_the_language_asked_is_sent_as_speechkits_code(
    make: MakeRecognizer, fake: FakeSpeechKit, asked: str | None, sent: str
) -> None:
    """A recording's language goes as SpeechKit's code; auto is the configured one (SPEC 18)."""
    recognizer = make(language="en-US")
    await recognizer.start(AUDIO, duration=1.0, request=RecognitionRequest(language=asked))
    assert fake.requests[0].body["config"]["specification"]["languageCode"] == sent


def test_speechkit_states_no_translation_and_its_languages() -> None:
    """SpeechKit cannot translate; every ISO code it claims maps to one of its own codes."""
    assert not ABILITIES.translate
    assert set(ABILITIES.languages) == set(LANGUAGE_CODES)
    assert all(code[:2] == iso for iso, code in LANGUAGE_CODES.items())


async def test_api_key_header_on_every_call(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """Start and check both authenticate with ``Authorization: Api-Key <key>``."""
    started = await recognizer.start(AUDIO, duration=1.0)
    await recognizer.check(started.operation_id)
    assert [r.headers["Authorization"] for r in fake.requests] == [f"Api-Key {API_KEY}"] * 2
    assert fake.requests[1].path == f"/operations/{started.operation_id}"


async def test_audio_outside_object_storage_is_refused(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """A local record without the sync path is handed back for a copy (DirectRefused), unsent."""
    local = FileRecord(
        id=AUDIO.id, location=Location.LOCAL, size=1, extension=".ogg", created=AUDIO.created
    )
    assert recognizer.limits.direct_seconds is None
    with pytest.raises(DirectRefused):
        await recognizer.start(local, duration=1.0)
    assert fake.requests == []


async def test_advised_delay_follows_the_duration(recognizer: YandexRecognizer) -> None:
    """The first check is advised about ten seconds per minute of audio."""
    started = await recognizer.start(AUDIO, duration=600.0)
    assert started.advised_delay == timedelta(seconds=100)


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        (None, None),
        (1.0, timedelta(seconds=5)),
        (60.0, timedelta(seconds=10)),
        (4 * 3600.0, timedelta(minutes=40)),
    ],
)
def test_advised_delay(duration: float | None, expected: timedelta | None) -> None:
    """Ten seconds per audio minute, never under five seconds, none when the length is unknown."""
    assert advised_delay(duration) == expected


async def test_text_is_channel_one_in_order(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """Only channel "1" chunks make the text, joined in their order; other channels are dropped."""
    fake.finish_next_with_chunks(
        [chunk("первый кусок"), chunk("чужой канал", channel="2"), chunk("второй кусок")]
    )
    started = await recognizer.start(AUDIO, duration=1.0)
    result = await recognizer.check(started.operation_id)
    assert isinstance(result, Recognized)
    assert result.text == "первый кусок второй кусок"
    assert OTHER_CHANNEL_TEXT not in result.text


async def test_word_timings_are_parsed(recognizer: YandexRecognizer, fake: FakeSpeechKit) -> None:
    """Word timings like "0.879999999s" become seconds, channel-1 words only, in order."""
    fake.finish_next("привет мир")
    started = await recognizer.start(AUDIO, duration=1.0)
    result = await recognizer.check(started.operation_id)
    assert isinstance(result, Recognized)
    assert result.words == (
        Word(text="привет", start=0.879999999, end=1.159999992),
        Word(text="мир", start=1.379999999, end=1.659999992),
    )


async def test_pending_until_done(recognizer: YandexRecognizer, fake: FakeSpeechKit) -> None:
    """``done: false`` is Pending with no advice, as often as SpeechKit says so."""
    fake.finish_next("готово", pending_checks=2)
    started = await recognizer.start(AUDIO, duration=1.0)
    assert await recognizer.check(started.operation_id) == Pending(retry_after=None)
    assert await recognizer.check(started.operation_id) == Pending(retry_after=None)
    assert isinstance(await recognizer.check(started.operation_id), Recognized)


async def test_done_with_error_is_rejected_in_our_words(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """A finished operation with an error is Rejected with its code, never SpeechKit's message."""
    fake.reject_next(f"bad audio at {AUDIO_URI}", code=3)
    started = await recognizer.start(AUDIO, duration=1.0)
    result = await recognizer.check(started.operation_id)
    assert isinstance(result, Rejected)
    assert "code 3" in result.reason
    for secret in SECRETS:
        assert secret not in result.reason


@pytest.mark.parametrize("empty_list", [False, True])
async def test_done_without_chunks_is_no_speech(
    recognizer: YandexRecognizer, fake: FakeSpeechKit, empty_list: bool
) -> None:
    """A finished operation with no chunks (key absent or empty) is Rejected: no speech."""
    fake.no_chunks_next(empty_list=empty_list)
    started = await recognizer.start(AUDIO, duration=1.0)
    assert await recognizer.check(started.operation_id) == Rejected(reason="no speech recognised")


async def test_only_other_channels_is_no_speech(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """Chunks only on channel "2" give no text for a mono recording: no speech."""
    fake.finish_next_with_chunks([chunk("чужой", channel="2")])
    started = await recognizer.start(AUDIO, duration=1.0)
    assert await recognizer.check(started.operation_id) == Rejected(reason="no speech recognised")


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
async def test_down_start_is_transient(
    recognizer: YandexRecognizer, fake: FakeSpeechKit, status: int
) -> None:
    """408 and 5xx at start are RecognizerUnavailable, retried with backoff."""
    fake.status_next_start(status)
    with pytest.raises(RecognizerUnavailable, match=str(status)) as info:
        await recognizer.start(AUDIO, duration=1.0)
    _assert_secret_free(info.value)


async def test_bad_request_at_start_is_permanent(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """400 at start fails the job; the server's text (naming the URI) is dropped."""
    fake.status_next_start(400)
    with pytest.raises(RecognitionFailed, match="400") as info:
        await recognizer.start(AUDIO, duration=1.0)
    _assert_secret_free(info.value)


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_at_start_are_the_service_condition(
    recognizer: YandexRecognizer, fake: FakeSpeechKit, status: int
) -> None:
    """401/403 at start say our key is wrong: a service condition, never the job's failure."""
    fake.status_next_start(status)
    with pytest.raises(RecognizerCredentialsRejected, match=str(status)) as info:
        await recognizer.start(AUDIO, duration=1.0)
    assert not isinstance(info.value, PermanentError | TransientError)
    assert info.value.code == "recognizer_credentials_rejected"
    _assert_secret_free(info.value)


async def test_a_wrong_api_key_is_the_service_condition(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """A key SpeechKit does not know (its own 401) is credentials rejected, in our words."""
    recognizer = make(api_key="AQVN-revoked-key")
    with pytest.raises(RecognizerCredentialsRejected) as info:
        await recognizer.start(AUDIO, duration=1.0)
    assert "AQVN-revoked-key" not in str(info.value)
    _assert_secret_free(info.value)


async def test_throttled_start_is_the_service_condition_with_its_wait(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """429 at start is our quota, not the job's fault: throttled, with SpeechKit's Retry-After."""
    fake.status_next_start(429, retry_after="120")
    with pytest.raises(RecognizerThrottled) as info:
        await recognizer.start(AUDIO, duration=1.0)
    assert isinstance(info.value, ServiceCondition)
    assert info.value.retry_after == timedelta(seconds=120)
    assert info.value.fault is False
    _assert_secret_free(info.value)


@pytest.mark.parametrize("header", [None, "Wed, 21 Oct 2026 07:28:00 GMT", "-5", "nan"])
async def test_throttled_start_without_a_usable_retry_after_waits_the_default(
    recognizer: YandexRecognizer, fake: FakeSpeechKit, header: str | None
) -> None:
    """A missing, dated or nonsense Retry-After leaves the wait to the condition policy."""
    fake.status_next_start(429, retry_after=header)
    with pytest.raises(RecognizerThrottled) as info:
        await recognizer.start(AUDIO, duration=1.0)
    assert info.value.retry_after is None


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, RecognizerThrottled),
        (500, RecognizerUnavailable),
        (503, RecognizerUnavailable),
        (400, RecognitionFailed),
        (401, RecognizerCredentialsRejected),
        (403, RecognizerCredentialsRejected),
    ],
)
async def test_check_statuses(
    recognizer: YandexRecognizer, fake: FakeSpeechKit, status: int, error: type[Exception]
) -> None:
    """At check too: 5xx transient, 429 and 401/403 the service's condition, 400 permanent."""
    started = await recognizer.start(AUDIO, duration=1.0)
    fake.status_next_check(status)
    with pytest.raises(error) as info:
        await recognizer.check(started.operation_id)
    assert isinstance(info.value, TranscriberError)
    _assert_secret_free(info.value)


async def test_dropped_connection_is_transient(
    recognizer: YandexRecognizer, fake: FakeSpeechKit
) -> None:
    """A connection closed without an answer is RecognizerUnavailable, and the next check works."""
    fake.finish_next("после обрыва")
    started = await recognizer.start(AUDIO, duration=1.0)
    # aiohttp retries a GET once when a kept-alive connection was closed under it.
    fake.drop_next_check()
    fake.drop_next_check()
    with pytest.raises(RecognizerUnavailable) as info:
        await recognizer.check(started.operation_id)
    _assert_secret_free(info.value)
    result = await recognizer.check(started.operation_id)
    assert isinstance(result, Recognized)


async def test_no_answer_in_time_is_transient(make: MakeRecognizer, fake: FakeSpeechKit) -> None:
    """A check that gets no answer within the timeout is RecognizerUnavailable."""
    recognizer = make(timeout=0.2)
    started = await recognizer.start(AUDIO, duration=1.0)
    fake.stall_next_check()
    with pytest.raises(RecognizerUnavailable, match="in time") as info:
        await recognizer.check(started.operation_id)
    _assert_secret_free(info.value)


async def test_unreachable_service_is_transient(make: MakeRecognizer) -> None:
    """Nobody listening at the endpoint is RecognizerUnavailable, naming no host or port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    recognizer = make(stt_url=f"http://127.0.0.1:{port}/stt")
    with pytest.raises(RecognizerUnavailable, match="reached") as info:
        await recognizer.start(AUDIO, duration=1.0)
    _assert_secret_free(info.value)
    assert str(port) not in str(info.value)


async def test_unknown_operation_is_permanent(recognizer: YandexRecognizer) -> None:
    """An operation SpeechKit no longer knows (results expire after 3 days) fails for good."""
    with pytest.raises(RecognitionFailed, match="404"):
        await recognizer.check("e03unknownoperation")


@pytest.mark.parametrize(
    "answer",
    [
        {"done": True, "response": "not an object"},
        {"done": True, "response": {"chunks": {"not": "a list"}}},
    ],
)
def test_unreadable_answer_is_transient(answer: dict[str, Any]) -> None:
    """A done answer of an unknown shape is RecognizerUnavailable, not a crash or a lost text."""
    with pytest.raises(RecognizerUnavailable):
        read_operation(answer)


def test_unreadable_words_are_left_out() -> None:
    """A word whose timing cannot be read is dropped; the text is kept."""
    answer = {
        "done": True,
        "response": {
            "chunks": [
                {
                    "channelTag": "1",
                    "alternatives": [
                        {
                            "text": "раз два",
                            "words": [
                                {"word": "раз", "startTime": "0.5s", "endTime": "0.9s"},
                                {"word": "два", "startTime": "soon", "endTime": "1.2s"},
                            ],
                        }
                    ],
                }
            ]
        },
    }
    assert read_operation(answer) == Recognized(
        text="раз два", words=(Word(text="раз", start=0.5, end=0.9),)
    )


async def test_spent_budget_paces_without_calling(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """Once the hourly check budget is spent, check answers Pending with the wait, unsent."""
    clock = FakeClock()
    # 4 an hour: 1 at once, then one back every 1,200 s.
    recognizer = make(checks_per_hour=4, clock=clock)
    fake.finish_next("текст", pending_checks=10)
    started = await recognizer.start(AUDIO, duration=1.0)
    assert await recognizer.check(started.operation_id) == Pending()
    sent = len(fake.requests)
    assert await recognizer.check(started.operation_id) == Pending(
        retry_after=timedelta(seconds=1200)
    )
    clock.advance(1_199)
    assert await recognizer.check(started.operation_id) == Pending(retry_after=timedelta(seconds=1))
    assert len(fake.requests) == sent
    clock.advance(1)
    assert await recognizer.check(started.operation_id) == Pending()
    assert len(fake.requests) == sent + 1


async def test_spent_start_budget_waits_without_calling(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """An empty start budget raises BudgetSpent with the exact wait; no start is sent."""
    clock = FakeClock()
    recognizer = make(starts_per_hour=2, clock=clock)
    await recognizer.start(AUDIO, duration=1.0)
    with pytest.raises(BudgetSpent) as info:
        await recognizer.start(AUDIO, duration=1.0)
    assert info.value.retry_after == timedelta(hours=1)
    assert len(fake.requests_to("/speech")) == 1
    _assert_secret_free(info.value)


async def test_processes_sharing_a_store_share_the_budget(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """Two recognizers on one budget store (two processes on one database) share one budget."""
    clock = FakeClock()
    budgets = MemoryBudgetStore(clock)
    first = make(starts_per_hour=2, budgets=budgets)
    second = make(starts_per_hour=2, budgets=budgets)
    await first.start(AUDIO, duration=1.0)
    with pytest.raises(BudgetSpent):
        await second.start(AUDIO, duration=1.0)
    assert budgets.takes == [("speechkit.starts", True), ("speechkit.starts", False)]


# The sync API (v1): short local audio, recognised within start.

OGG = b"OggS" + bytes(2_000)


@pytest.fixture
async def local_audio(tmp_path: Any) -> tuple[FilesystemFileStore, FileRecord]:
    """A local store holding a small Ogg file, as the converter leaves it."""
    store = FilesystemFileStore(tmp_path / "files", staging_dir=tmp_path / "staging")
    source = tmp_path / "clip.ogg"
    source.write_bytes(OGG)
    record = await store.put("Y29udmVydGVkLWNsaXA", ".ogg", source, now=AUDIO.created)
    return store, record


async def test_short_local_audio_goes_sync(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """Local audio within the sync limits is posted raw to v1 with its parameters; done at start."""
    store, record = local_audio
    recognizer = make(sync_url=fake.sync_url, files=store, language="en-US", model="general:rc")
    fake.finish_next("short note")
    started = await recognizer.start(record, duration=10.0)
    assert started.outcome == Recognized(text="short note")
    (sent,) = fake.requests
    assert sent.path == "/speech/v1/stt:recognize"
    assert sent.query == {"lang": "en-US", "topic": "general:rc", "format": "oggopus"}
    assert sent.size == len(OGG)
    assert sent.headers["Authorization"] == f"Api-Key {API_KEY}"
    assert await recognizer.check(started.operation_id) == Rejected(
        reason="the synchronous recognition has nothing to check"
    )


async def test_sync_limits_say_what_needs_no_copy(
    make: MakeRecognizer, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """The limits tell the pipeline: ≤ sync_max_seconds and ≤ 1 MB go direct; 0 turns it off."""
    store, _ = local_audio
    limits = make(files=store, sync_max_seconds=20).limits
    assert limits.takes_directly(seconds=20.0, size=1024 * 1024)
    assert not limits.takes_directly(seconds=20.5, size=1000)
    assert not limits.takes_directly(seconds=5.0, size=1024 * 1024 + 1)
    assert not limits.takes_directly(seconds=None, size=1000)
    assert make(files=store, sync_max_seconds=0).limits.direct_seconds is None
    with pytest.raises(ValueError, match="sync_max_seconds"):
        make(files=store, sync_max_seconds=31)


async def test_long_local_audio_is_handed_back_unsent(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """Local audio past sync_max_seconds raises DirectRefused before anything is sent."""
    store, record = local_audio
    recognizer = make(sync_url=fake.sync_url, files=store)
    with pytest.raises(DirectRefused):
        await recognizer.start(record, duration=31.0)
    assert fake.requests == []


async def test_sync_refusal_for_size_is_handed_back(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """The sync API's 400 for a body too large is DirectRefused (go async), not a failure."""
    store, record = local_audio
    fake.sync_max_bytes = 1_000
    recognizer = make(sync_url=fake.sync_url, files=store)
    with pytest.raises(DirectRefused) as info:
        await recognizer.start(record, duration=5.0)
    _assert_secret_free(info.value)


async def test_other_sync_400_is_permanent(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """A sync 400 that is not about length or size judges the recording: RecognitionFailed."""
    store, record = local_audio
    fake.status_next_sync(400)
    recognizer = make(sync_url=fake.sync_url, files=store)
    with pytest.raises(RecognitionFailed):
        await recognizer.start(record, duration=5.0)


async def test_sync_throttled_and_budget(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """A sync 429 is the service condition with its wait; an empty sync budget sends nothing."""
    store, record = local_audio
    clock = FakeClock()
    recognizer = make(sync_url=fake.sync_url, files=store, sync_per_second=1, clock=clock)
    fake.status_next_start(429, retry_after="7")
    with pytest.raises(RecognizerThrottled) as throttled:
        await recognizer.start(record, duration=5.0)
    assert throttled.value.retry_after == timedelta(seconds=7)
    with pytest.raises(BudgetSpent) as spent:
        await recognizer.start(record, duration=5.0)
    assert spent.value.retry_after == timedelta(seconds=1)
    assert len(fake.requests) == 1
    clock.advance(1)
    started = await recognizer.start(record, duration=5.0)
    assert started.outcome == Recognized(text="fake transcript")


async def test_sync_silence_is_no_speech(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """An empty sync result ends the recording Rejected with the no-speech reason."""
    store, record = local_audio
    fake.no_chunks_next()
    recognizer = make(sync_url=fake.sync_url, files=store)
    started = await recognizer.start(record, duration=5.0)
    assert started.outcome == Rejected(reason="no speech recognised")


async def test_every_request_is_logged_for_metrics(
    make: MakeRecognizer,
    fake: FakeSpeechKit,
    local_audio: tuple[FilesystemFileStore, FileRecord],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each request logs speechkit.request with api, outcome and the audio seconds sent."""
    store, record = local_audio
    recognizer = make(sync_url=fake.sync_url, files=store)
    caplog.set_level("INFO", logger="transcriber.yandex")
    await recognizer.start(record, duration=4.5)
    started = await recognizer.start(AUDIO, duration=90.0)
    await recognizer.check(started.operation_id)
    events = [
        (r.api, r.outcome, getattr(r, "audio_seconds", None))  # type: ignore[attr-defined]
        for r in caplog.records
        if r.msg == "speechkit.request"
    ]
    assert events == [("sync", "ok", 4.5), ("start", "ok", 90.0), ("check", "ok", None)]


# API v3 (ADR 54): recognizeFileAsync, the operation, getRecognition's stream of JSON lines.

DIALOGUE = [("0", "Добрый день, Диана."), ("1", "Здравствуйте, встреча в 10 часов?"), ("0", "Да.")]


async def _v3_done(recognizer: YandexRecognizer, request: RecognitionRequest) -> Recognized:
    """Start ``AUDIO`` on v3 and check until done; the outcome must be a transcript."""
    started = await recognizer.start(AUDIO, duration=12.0, request=request)
    result = await recognizer.check(started.operation_id)
    assert isinstance(result, Recognized), result
    return result


async def test_v3_start_sends_the_documented_body(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """v3's start names the URI, OGG_OPUS in a container, normalisation, the language, labelling."""
    recognizer = make(async_api="v3", model="general")
    request = RecognitionRequest(language="kk", speakers=0)
    await recognizer.start(AUDIO, duration=12.0, request=request)
    (sent,) = fake.requests
    assert (sent.method, sent.path) == ("POST", "/stt/v3/recognizeFileAsync")
    assert sent.headers["Authorization"] == f"Api-Key {API_KEY}"
    assert sent.body == {
        "uri": AUDIO_URI,
        "recognitionModel": {
            "model": "general",
            "audioFormat": {"containerAudio": {"containerAudioType": "OGG_OPUS"}},
            "textNormalization": {
                "textNormalization": "TEXT_NORMALIZATION_ENABLED",
                "profanityFilter": False,
                "literatureText": False,
            },
            "audioProcessingType": "FULL_DATA",
            "languageRestriction": {"restrictionType": "WHITELIST", "languageCode": ["kk-KZ"]},
        },
        "speakerLabeling": {"speakerLabeling": "SPEAKER_LABELING_ENABLED"},
    }


async def test_v3_auto_restricts_no_language_and_off_labels_nobody(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """``auto`` sends no languageRestriction (SpeechKit detects it); speakers off: no labelling."""
    await make(async_api="v3").start(AUDIO, duration=3.0, request=RecognitionRequest())
    body = fake.requests[0].body
    assert "languageRestriction" not in body["recognitionModel"]
    assert body["speakerLabeling"] == {"speakerLabeling": "SPEAKER_LABELING_DISABLED"}


async def test_v3_results_carry_speakers_normalised_text_and_timings(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """Finals refined to normalised text, in order, words timed from int64 strings, by speaker."""
    fake.finish_next_dialogue(DIALOGUE, pending_checks=1)
    recognizer = make(async_api="v3")
    started = await recognizer.start(
        AUDIO, duration=12.0, request=RecognitionRequest(language="ru", speakers=0)
    )
    assert await recognizer.check(started.operation_id) == Pending()
    result = await recognizer.check(started.operation_id)
    assert isinstance(result, Recognized)
    assert result.text == "Добрый день, Диана. Здравствуйте, встреча в 10 часов? Да."
    assert [w.text for w in result.words][:3] == ["Добрый", "день,", "Диана."]
    assert [w.speaker for w in result.words] == ["0"] * 3 + ["1"] * 5 + ["0"]
    assert (result.words[0].start, result.words[0].end) == (0.0, 0.4)
    assert result.words[3].start == 2.0
    assert result.language == "ru"
    (results,) = fake.requests_to("/stt/v3/getRecognition")
    assert results.query == {"operationId": started.operation_id}


async def test_v3_auto_yields_the_detected_language(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """With no language asked, the job is told the language SpeechKit heard (ISO 639-1)."""
    fake.finish_next_dialogue([("0", "Good morning, Diane.")], language="en-US")
    result = await _v3_done(make(async_api="v3"), RecognitionRequest())
    assert result.language == "en"
    assert result.text == "Good morning, Diane."


async def test_v3_without_labelling_is_one_voice(make: MakeRecognizer, fake: FakeSpeechKit) -> None:
    """Speakers off: SpeechKit tags every result channel 0, one label the core then drops."""
    fake.finish_next_dialogue(DIALOGUE)
    result = await _v3_done(make(async_api="v3"), RecognitionRequest(language="ru"))
    assert {w.speaker for w in result.words} == {"0"}


def test_v3_no_speech_and_error_lines_are_rejected() -> None:
    """A stream with no final is no speech; an ``error`` line rejects, naming only its code."""
    assert read_recognition([{"result": {"statusCode": {"codeType": "WORKING"}}}]) == Rejected(
        reason="no speech recognised"
    )
    rejected = read_recognition(
        [{"error": {"code": 3, "message": f"cannot read {AUDIO_URI}", "details": []}}]
    )
    assert isinstance(rejected, Rejected)
    assert rejected.reason == "the speech recognizer could not recognise the recording (code 3)"


def test_v3_unrefined_finals_keep_their_text_and_unreadable_words_are_left_out() -> None:
    """A final without refinement keeps its own text; words with no readable times are dropped."""
    words = [
        {"text": "раз", "startTimeMs": "100", "endTimeMs": "400"},
        {"text": "два", "startTimeMs": "x", "endTimeMs": "900"},
        {"text": "три", "startTimeMs": "900", "endTimeMs": "800"},
        {"startTimeMs": "1000", "endTimeMs": "1200"},
    ]
    final = {"alternatives": [{"text": "раз два три", "words": words}], "channelTag": "0"}
    result = read_recognition([{"result": {"final": final, "audioCursors": {"finalIndex": "0"}}}])
    assert result == Recognized(
        text="раз два три", words=(Word(text="раз", start=0.1, end=0.4, speaker="0"),)
    )


@pytest.mark.parametrize("answer", [b"not json\n", b"[1, 2]", b'{"result": 1}\n'])
async def test_v3_unreadable_results_are_transient(
    make: MakeRecognizer, fake: FakeSpeechKit, answer: bytes
) -> None:
    """A results answer that is no stream of JSON objects is RecognizerUnavailable, in our words."""
    recognizer = make(async_api="v3")
    started = await recognizer.start(AUDIO, duration=3.0)
    fake.raw_results_next(answer)
    with pytest.raises(RecognizerUnavailable) as caught:
        await recognizer.check(started.operation_id)
    _assert_secret_free(caught.value)


@pytest.mark.parametrize(
    ("status", "error"),
    [(503, TransientError), (429, RecognizerThrottled), (401, RecognizerCredentialsRejected)],
)
async def test_v3_results_statuses_are_classified(
    make: MakeRecognizer, fake: FakeSpeechKit, status: int, error: type[Exception]
) -> None:
    """getRecognition's failures are classed as every other SpeechKit answer is."""
    recognizer = make(async_api="v3")
    started = await recognizer.start(AUDIO, duration=3.0)
    fake.status_next_results(status)
    with pytest.raises(error):
        await recognizer.check(started.operation_id)


async def test_v3_reads_an_operation_v2_finished_with_chunks(
    make: MakeRecognizer, fake: FakeSpeechKit
) -> None:
    """A v2 operation still running when the service moved to v3 is read from its chunks."""
    fake.finish_next("старая операция")
    started = await make(async_api="v2").start(AUDIO, duration=3.0)
    result = await make(async_api="v3").check(started.operation_id)
    assert isinstance(result, Recognized)
    assert result.text == "старая операция"
    assert fake.requests_to("/stt/v3") == []


async def test_speakers_wanted_skip_the_sync_api(
    make: MakeRecognizer, fake: FakeSpeechKit, local_audio: tuple[FilesystemFileStore, FileRecord]
) -> None:
    """A short local clip that wants speakers is handed back for async: v1 labels nobody."""
    store, record = local_audio
    recognizer = make(async_api="v3", sync_url=fake.sync_url, files=store)
    with pytest.raises(DirectRefused):
        await recognizer.start(record, duration=5.0, request=RecognitionRequest(speakers=2))
    assert fake.requests == []


def test_a_bad_async_api_is_refused() -> None:
    """Only "v3" and "v2" are async APIs."""
    with pytest.raises(ValueError, match="async_api"):
        YandexRecognizer(api_key=API_KEY, bucket=BUCKET, async_api="v1")


async def test_v3_results_are_logged_as_a_check(
    make: MakeRecognizer, fake: FakeSpeechKit, caplog: pytest.LogCaptureFixture
) -> None:
    """A done v3 check logs the operation poll and the results read: two check requests."""
    recognizer = make(async_api="v3")
    caplog.set_level("INFO", logger="transcriber.yandex")
    started = await recognizer.start(AUDIO, duration=30.0)
    assert isinstance(await recognizer.check(started.operation_id), Recognized)
    events = [
        (r.api, r.outcome)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.msg == "speechkit.request"
    ]
    assert events == [("start", "ok"), ("check", "ok"), ("check", "ok")]
