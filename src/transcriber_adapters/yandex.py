"""The recognizer on SpeechKit async recognition, API v2, via aiohttp (reference: Recognizers).

``start`` posts the Object Storage URI of the audio and gets an operation;
``check`` polls it, at most ``checks_per_hour`` times an hour across the
process (SpeechKit allows 2,500 status checks per hour per account).
``api_errors`` and ``_refuse_bad_status`` are the one place where HTTP
failures become core errors. Texts from SpeechKit, aiohttp or the network
never reach an error, because they may name the audio's URI; the API key,
the URI and the object key are never logged (reference: Privacy).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import aiohttp

from transcriber_core.entities import FileRecord, Word
from transcriber_core.errors import (
    RecognitionFailed,
    RecognizerCredentialsRejected,
    RecognizerThrottled,
    RecognizerUnavailable,
)
from transcriber_core.ports import (
    CheckResult,
    Pending,
    Recognized,
    RecognizerLimits,
    Rejected,
    Started,
)

log = logging.getLogger("transcriber.yandex")

DEFAULT_STT_URL = "https://transcribe.api.cloud.yandex.net/speech/stt/v2/longRunningRecognize"
DEFAULT_OPERATION_URL = "https://operation.api.cloud.yandex.net/operations"
DEFAULT_STORAGE_URL = "https://storage.yandexcloud.net"
#: SpeechKit's limit on status checks per hour per account.
DEFAULT_CHECKS_PER_HOUR = 2_500
#: Checks that may go out back to back before pacing sets in.
DEFAULT_CHECK_BURST = 50
#: Longest audio one SpeechKit v2 async operation takes: 4 hours.
MAX_SECONDS = 4 * 3600.0
#: Largest audio file one operation takes: 1 GB.
MAX_BYTES = 1_000_000_000
#: SpeechKit needs about this long per minute of audio (reference: Settings table).
SECONDS_PER_AUDIO_MINUTE = 10.0
#: The first check is never advised sooner than this.
MIN_FIRST_CHECK = timedelta(seconds=5)
#: The one channel a mono recording is recognised on.
CHANNEL = "1"
#: The reason given when an operation finishes with nothing recognised.
NO_SPEECH = "no speech recognised"

#: What a transient failure says when the answer makes no sense to us.
UNREADABLE = "the speech recognizer answered something we could not read"

#: Statuses that say "try later": timed out, or the service is down (5xx too).
_TRANSIENT_STATUSES = frozenset({408})
#: Statuses that say our API key is wrong, revoked or lacks the role: the service's condition.
_REFUSED_STATUSES = frozenset({401, 403})
#: Longest ``Retry-After`` we take from SpeechKit; a larger one is read as this.
MAX_RETRY_AFTER = timedelta(hours=1)

#: Monotonic seconds; injectable so tests move time by hand.
Monotonic = Callable[[], float]


class CheckBudget:
    """A token bucket that keeps status checks under ``per_hour`` in every hour.

    ``burst`` checks may go at once; tokens come back at ``per_hour - burst``
    an hour, so no sliding hour ever holds more than ``per_hour`` checks.
    One budget per process: processes sharing an account share its limit,
    so give each a part of it.
    """

    def __init__(self, per_hour: int, *, burst: int, monotonic: Monotonic) -> None:
        if not 0 < burst < per_hour:
            raise ValueError("the check burst must be at least 1 and less than checks per hour")
        self._rate = (per_hour - burst) / 3600.0
        self._capacity = float(burst)
        self._tokens = float(burst)
        self._monotonic = monotonic
        self._last = monotonic()

    def take(self) -> timedelta | None:
        """Spend a token and return None, or return how long until one is there (spending none)."""
        now = self._monotonic()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        # Round up to the millisecond so the wait is never a hair too short.
        wait = math.ceil((1.0 - self._tokens) / self._rate * 1000) / 1000
        return timedelta(seconds=wait)


@contextlib.contextmanager
def api_errors() -> Iterator[None]:
    """Turn aiohttp and network failures into ``RecognizerUnavailable``, in our words.

    Their texts carry the host and the URL; they are dropped, not chained.
    """
    try:
        yield
    except TimeoutError:
        raise RecognizerUnavailable("the speech recognizer did not answer in time") from None
    except (aiohttp.ClientError, OSError):
        raise RecognizerUnavailable("the speech recognizer could not be reached") from None
    except ValueError:
        # The body was not JSON (a proxy's error page, a cut-off answer).
        raise RecognizerUnavailable(UNREADABLE) from None


def _refuse_bad_status(status: int, action: str, retry_after: str | None = None) -> None:
    """Raise the core error for a non-2xx status.

    408 and 5xx are transient; 401/403 (our key) and 429 (our quota) are the
    service's conditions, so the job waits without spending attempts
    (reference: Limits, Recognizers); any other 4xx judges this request for good.
    """
    if 200 <= status < 300:
        return
    if status in _TRANSIENT_STATUSES or status >= 500:
        raise RecognizerUnavailable(
            f"the speech recognizer is unavailable (HTTP {status} on {action})"
        )
    if status in _REFUSED_STATUSES:
        raise RecognizerCredentialsRejected(
            f"the speech recognizer refused our credentials (HTTP {status} on {action})"
        )
    if status == 429:
        raise RecognizerThrottled(
            f"the speech recognizer asked us to slow down (HTTP 429 on {action})",
            retry_after=_retry_after(retry_after),
        )
    raise RecognitionFailed(
        f"the speech recognizer refused the request (HTTP {status} on {action})"
    )


class YandexRecognizer:
    """SpeechKit v2 long-running recognition of Ogg/Opus audio kept in Yandex Object Storage.

    The audio is read by SpeechKit from ``<storage_url>/<bucket>/<object_key>``,
    so it must be a record of the S3 store on the same bucket. One aiohttp
    session is opened on first use and reused; ``close`` releases it. Every
    request has a total ``timeout`` in seconds.

    Checks are paced by a ``CheckBudget`` of ``checks_per_hour`` with
    ``check_burst`` (kept below the hourly figure) on the ``monotonic`` clock;
    a check over budget sends nothing and answers ``Pending`` with the wait.

    ``limits`` are SpeechKit's (4 h, 1 GB per operation); ``max_seconds``
    may lower them, never raise them. Audio past them is refused before
    anything is sent, naming the limit; the pipeline splits longer
    recordings so this does not happen (ADR 26).
    """

    def __init__(
        self,
        *,
        api_key: str,
        bucket: str,
        storage_url: str = DEFAULT_STORAGE_URL,
        stt_url: str = DEFAULT_STT_URL,
        operation_url: str = DEFAULT_OPERATION_URL,
        language: str = "ru-RU",
        model: str = "general",
        checks_per_hour: int = DEFAULT_CHECKS_PER_HOUR,
        check_burst: int = DEFAULT_CHECK_BURST,
        timeout: float = 30.0,
        monotonic: Monotonic = time.monotonic,
        max_seconds: float = MAX_SECONDS,
    ) -> None:
        if not api_key:
            raise ValueError("the SpeechKit API key must not be empty")
        if not 0 < max_seconds <= MAX_SECONDS:
            raise ValueError("max_seconds must be positive and at most SpeechKit's 4 hours")
        #: What one operation accepts.
        self.limits = RecognizerLimits(max_seconds=max_seconds, max_bytes=MAX_BYTES)
        if not bucket:
            raise ValueError("the Object Storage bucket must not be empty")
        self._api_key = api_key
        self._audio_base = f"{storage_url.rstrip('/')}/{quote(bucket, safe='')}/"
        self._stt_url = stt_url
        self._operation_url = operation_url.rstrip("/")
        self._language = language
        self._model = model
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._budget = CheckBudget(
            checks_per_hour, burst=min(check_burst, checks_per_hour - 1), monotonic=monotonic
        )
        self._session: aiohttp.ClientSession | None = None

    def audio_uri(self, audio: FileRecord) -> str:
        """Where SpeechKit reads the audio: the object's URL in Yandex Object Storage."""
        if not audio.object_key:
            raise RecognitionFailed("the audio was not copied to Object Storage for the recognizer")
        return self._audio_base + quote(audio.object_key, safe="/")

    def request_body(self, audio: FileRecord) -> dict[str, Any]:
        """The JSON of a start request; no channel count or sample rate, which OGG_OPUS forbids."""
        return {
            "config": {
                "specification": {
                    "languageCode": self._language,
                    "model": self._model,
                    "audioEncoding": "OGG_OPUS",
                }
            },
            "audio": {"uri": self.audio_uri(audio)},
        }

    async def start(self, audio: FileRecord, *, duration: float | None) -> Started:
        """Post the audio's URI; the operation id comes back at once, the text much later."""
        refusal = self.limits.refusal(seconds=duration, size=audio.size)
        if refusal is not None:
            raise RecognitionFailed(refusal)
        body = self.request_body(audio)
        answer = await self._request("start", "POST", self._stt_url, body)
        operation_id = answer.get("id")
        if not isinstance(operation_id, str) or not operation_id:
            raise RecognizerUnavailable("the speech recognizer started no operation")
        return Started(operation_id=operation_id, advised_delay=advised_delay(duration))

    async def check(self, operation_id: str) -> CheckResult:
        """Ask about the operation; when the hourly budget is spent, say when to ask instead."""
        wait = self._budget.take()
        if wait is not None:
            log.info("speechkit.check_paced", extra={"wait_seconds": wait.total_seconds()})
            return Pending(retry_after=wait)
        url = f"{self._operation_url}/{quote(operation_id, safe='')}"
        return read_operation(await self._request("check", "GET", url, None))

    async def close(self) -> None:
        """Close the HTTP session; a later call opens a new one."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _request(
        self, action: str, method: str, url: str, body: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """One API call; the parsed JSON object of a 2xx answer, else the core error."""
        session = self._open_session()
        status: int | None = None
        try:
            with api_errors():
                async with session.request(
                    method,
                    url,
                    json=body,
                    headers={"Authorization": f"Api-Key {self._api_key}"},
                ) as response:
                    status = response.status
                    _refuse_bad_status(status, action, response.headers.get("Retry-After"))
                    answer = await response.json(content_type=None)
        finally:
            log.debug("speechkit.call", extra={"action": action, "status": status})
        if not isinstance(answer, dict):
            raise RecognizerUnavailable(UNREADABLE)
        return answer

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # trust_env off: no proxy or netrc from the environment sees the API key.
            self._session = aiohttp.ClientSession(timeout=self._timeout, trust_env=False)
        return self._session


def _retry_after(value: str | None) -> timedelta | None:
    """The wait a ``Retry-After`` header asks for in seconds; None when absent or not a number."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        # An HTTP date is allowed too; the fixed condition pause will do instead.
        return None
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    return min(timedelta(seconds=seconds), MAX_RETRY_AFTER)


def advised_delay(duration: float | None) -> timedelta | None:
    """About ten seconds per minute of audio before the first check; None when unknown."""
    if duration is None or not math.isfinite(duration) or duration < 0:
        return None
    return max(timedelta(seconds=duration / 60 * SECONDS_PER_AUDIO_MINUTE), MIN_FIRST_CHECK)


def read_operation(answer: Mapping[str, Any]) -> CheckResult:
    """The outcome of an operation as SpeechKit v2 describes it.

    An answer of a shape we do not know is ``RecognizerUnavailable``: a
    proxy's page or a half-deployed API may pass, a lost transcript may not.
    """
    if not answer.get("done"):
        return Pending()
    error = answer.get("error")
    if error is not None:
        code = error.get("code") if isinstance(error, dict) else None
        # The error's message is SpeechKit's text and may name the audio's URI: only its code.
        shown = f" (code {code})" if isinstance(code, int) else ""
        return Rejected(reason=f"the speech recognizer could not recognise the recording{shown}")
    response = answer.get("response") or {}
    if not isinstance(response, dict):
        raise RecognizerUnavailable(UNREADABLE)
    chunks = response.get("chunks") or []
    if not isinstance(chunks, list):
        raise RecognizerUnavailable(UNREADABLE)
    texts: list[str] = []
    words: list[Word] = []
    for chunk in chunks:
        if not isinstance(chunk, dict) or str(chunk.get("channelTag")) != CHANNEL:
            continue
        alternatives = chunk.get("alternatives")
        if not isinstance(alternatives, list) or not alternatives:
            continue
        if not isinstance(alternatives[0], dict):
            continue
        best = alternatives[0]
        text = best.get("text")
        if isinstance(text, str) and text.strip():
            texts.append(text.strip())
        words.extend(_words(best.get("words")))
    if not texts:
        return Rejected(reason=NO_SPEECH)
    return Recognized(text=" ".join(texts), words=tuple(words))


def _words(items: object) -> Iterator[Word]:
    """The timed words of one alternative; a word whose timing cannot be read is left out."""
    if not isinstance(items, list):
        return
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("word"), str):
            continue
        start, end = _seconds(item.get("startTime")), _seconds(item.get("endTime"))
        if start is None or end is None or not 0 <= start <= end:
            continue
        yield Word(text=item["word"], start=start, end=end)


def _seconds(value: object) -> float | None:
    """Seconds from a protobuf Duration in JSON ("0.879999999s"); None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        seconds = float(value.removesuffix("s"))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) else None
