"""The recognizer on SpeechKit async recognition, API v2, via aiohttp (reference: Recognizers).

Short local audio goes to the synchronous API v1 and is done within
``start`` (ADR 29); otherwise ``start`` posts the Object Storage URI of the
audio and gets an operation and ``check`` polls it. Every kind of request
is paced by a budget shared through a ``BudgetStore`` (SpeechKit allows 500
starts and 2,500 status checks an hour, 20 sync requests a second).
``api_errors`` and ``_refuse_bad_status`` are the one place where HTTP
failures become core errors. Texts from SpeechKit, aiohttp or the network
never reach an error, because they may name the audio's URI; the API key,
the URI and the object key are never logged (reference: Privacy).
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import aiohttp

from transcriber_core.entities import FileRecord, Word
from transcriber_core.errors import (
    BudgetSpent,
    DirectRefused,
    FileNotFound,
    MissingFile,
    RecognitionFailed,
    RecognizerCredentialsRejected,
    RecognizerDown,
    RecognizerThrottled,
    RecognizerUnavailable,
)
from transcriber_core.languages import DEFAULT_REQUEST, Abilities, RecognitionRequest
from transcriber_core.ports import (
    BudgetStore,
    CheckResult,
    FileStore,
    Pending,
    ProgressCallback,
    Recognized,
    RecognizerLimits,
    Rejected,
    Started,
)

log = logging.getLogger("transcriber.yandex")

DEFAULT_STT_URL = "https://transcribe.api.cloud.yandex.net/speech/stt/v2/longRunningRecognize"
DEFAULT_OPERATION_URL = "https://operation.api.cloud.yandex.net/operations"
DEFAULT_SYNC_URL = "https://stt.api.cloud.yandex.net/speech/v1/stt:recognize"
DEFAULT_STORAGE_URL = "https://storage.yandexcloud.net"
#: SpeechKit's limit on status checks per hour per account.
DEFAULT_CHECKS_PER_HOUR = 2_500
#: SpeechKit's limit on async recognition requests (starts) per hour per account.
DEFAULT_STARTS_PER_HOUR = 500
#: SpeechKit's limit on synchronous recognition requests per second.
DEFAULT_SYNC_PER_SECOND = 20
#: Longest audio sent to the synchronous API by default, in seconds (its own limit: 30).
DEFAULT_SYNC_MAX_SECONDS = 30.0
#: Longest and largest audio the synchronous API (v1) takes.
SYNC_MAX_SECONDS = 30.0
SYNC_MAX_BYTES = 1024 * 1024
#: The budgets' names in the budget store, shared by every process (ADR 29).
STARTS_BUDGET = "speechkit.starts"
CHECKS_BUDGET = "speechkit.checks"
SYNC_BUDGET = "speechkit.sync"
#: How the operation id of a synchronous recognition starts; no async id does (they are "e03...").
SYNC_PREFIX = "sync-"
HOUR = timedelta(hours=1)
SECOND = timedelta(seconds=1)
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


@contextlib.contextmanager
def api_errors() -> Iterator[None]:
    """Turn aiohttp and network failures into ``RecognizerUnavailable``, in our words.

    Their texts carry the host and the URL; they are dropped, not chained.
    """
    try:
        yield
    except TimeoutError:
        raise RecognizerDown("the speech recognizer did not answer in time") from None
    except (aiohttp.ClientError, OSError):
        raise RecognizerDown("the speech recognizer could not be reached") from None
    except ValueError:
        # The body was not JSON (a proxy's error page, a cut-off answer).
        raise RecognizerUnavailable(UNREADABLE) from None


def _refuse_bad_status(status: int, action: str, retry_after: str | None = None) -> None:
    """Raise the core error for a non-2xx status.

    408 and 5xx (SpeechKit down), 401/403 (our key) and 429 (our quota) are
    the service's conditions, so the job waits without spending attempts
    (reference: Limits, Recognizers); any other 4xx judges this request for good.
    """
    if 200 <= status < 300:
        return
    if status in _TRANSIENT_STATUSES or status >= 500:
        raise RecognizerDown(f"the speech recognizer is unavailable (HTTP {status} on {action})")
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


#: SpeechKit's language code of each ISO 639-1 code it recognises (SPEC §18).
LANGUAGE_CODES: dict[str, str] = {
    "de": "de-DE",
    "en": "en-US",
    "es": "es-ES",
    "fi": "fi-FI",
    "fr": "fr-FR",
    "he": "he-IL",
    "it": "it-IT",
    "kk": "kk-KZ",
    "nl": "nl-NL",
    "pl": "pl-PL",
    "pt": "pt-PT",
    "ru": "ru-RU",
    "sv": "sv-SE",
    "tr": "tr-TR",
    "uz": "uz-UZ",
}
#: What SpeechKit can be asked for: no translation, no prompt (API v2 and v1 take neither).
ABILITIES = Abilities(languages=frozenset(LANGUAGE_CODES), name="SpeechKit")


def speechkit_language(request: RecognitionRequest, default: str) -> str:
    """SpeechKit's code for the language asked for; ``default`` (``[yandex] language``) for auto.

    v2 and v1 detect no language, so ``auto`` is the configured one.
    """
    if request.language is None:
        return default
    return LANGUAGE_CODES.get(request.language, default)


class YandexRecognizer:
    """SpeechKit recognition of Ogg/Opus audio: v1 synchronous for short clips, v2 async otherwise.

    **Async (v2).** The audio is read by SpeechKit from
    ``<storage_url>/<bucket>/<object_key>``, so it must be a record of the S3
    store on the same bucket; ``check`` polls the operation.

    **Sync (v1, ADR 29).** Audio that ``files`` (the service's file store)
    holds, of at most ``sync_max_seconds`` and 1 MB, is read from it and
    posted to ``sync_url``; the text comes back in the answer, so ``start``
    returns it as the outcome and there is nothing to check.
    ``limits.takes_directly`` tells the pipeline which audio that is, so it
    copies nothing to Object Storage for it. A refusal as too long or too
    large (HTTP 400 or 413), or local audio past those limits, raises
    ``DirectRefused``: the pipeline copies the audio and starts it async.
    Audio with an object key (``files`` on the bucket, ADR 33) is started
    async at once instead. ``sync_max_seconds`` of 0, or no ``files``, turns
    the sync path off.

    **Budgets.** Async starts (``starts_per_hour``), checks
    (``checks_per_hour``) and sync requests (``sync_per_second``) each take a
    token from ``budgets`` (shared by every process when it is the SQLite
    store, on the store's own clock) before anything is sent. An empty start or sync
    budget raises ``BudgetSpent`` with the wait; an empty check budget
    answers ``Pending`` with the wait. Nothing is sent either way.

    One aiohttp session is opened on first use and reused; ``close``
    releases it. Every request has a total ``timeout`` in seconds.

    ``limits`` are SpeechKit's (4 h, 1 GB per operation); ``max_seconds``
    may lower them, never raise them. Audio past them is refused before
    anything is sent, naming the limit; the pipeline splits longer
    recordings so this does not happen (ADR 26).

    Every request is logged as ``speechkit.request`` with its ``api``
    (``sync``, ``start``, ``check``), ``outcome`` (``ok``, ``paced``, or the
    HTTP status / ``error``) and, for sync and start, the ``audio_seconds``
    sent: ``/metrics`` counts these (ADR 14).
    """

    def __init__(
        self,
        *,
        api_key: str,
        bucket: str,
        storage_url: str = DEFAULT_STORAGE_URL,
        stt_url: str = DEFAULT_STT_URL,
        operation_url: str = DEFAULT_OPERATION_URL,
        sync_url: str = DEFAULT_SYNC_URL,
        sync_max_seconds: float = DEFAULT_SYNC_MAX_SECONDS,
        files: FileStore | None = None,
        language: str = "ru-RU",
        model: str = "general",
        checks_per_hour: int = DEFAULT_CHECKS_PER_HOUR,
        starts_per_hour: int = DEFAULT_STARTS_PER_HOUR,
        sync_per_second: int = DEFAULT_SYNC_PER_SECOND,
        budgets: BudgetStore | None = None,
        timeout: float = 30.0,
        max_seconds: float = MAX_SECONDS,
    ) -> None:
        if not api_key:
            raise ValueError("the SpeechKit API key must not be empty")
        if not 0 < max_seconds <= MAX_SECONDS:
            raise ValueError("max_seconds must be positive and at most SpeechKit's 4 hours")
        if not 0 <= sync_max_seconds <= SYNC_MAX_SECONDS:
            raise ValueError("sync_max_seconds must be between 0 and the sync API's 30 seconds")
        if min(checks_per_hour, starts_per_hour, sync_per_second) < 1:
            raise ValueError("every SpeechKit budget must allow at least one request")
        if not bucket:
            raise ValueError("the Object Storage bucket must not be empty")
        self._sync = files is not None and sync_max_seconds > 0
        #: What one operation accepts, and what goes to the sync API with no copy.
        self.limits = RecognizerLimits(
            max_seconds=max_seconds,
            max_bytes=MAX_BYTES,
            direct_seconds=sync_max_seconds if self._sync else None,
            direct_bytes=SYNC_MAX_BYTES if self._sync else None,
        )
        self._api_key = api_key
        self._audio_base = f"{storage_url.rstrip('/')}/{quote(bucket, safe='')}/"
        self._stt_url = stt_url
        self._operation_url = operation_url.rstrip("/")
        self._sync_url = sync_url
        self._files = files
        self._language = language
        self._model = model
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        if budgets is None:
            from transcriber_adapters.memory.budgets import MemoryBudgetStore  # noqa: PLC0415

            budgets = MemoryBudgetStore()
        self._budgets = budgets
        self._shapes = {
            STARTS_BUDGET: (starts_per_hour, HOUR),
            CHECKS_BUDGET: (checks_per_hour, HOUR),
            SYNC_BUDGET: (sync_per_second, SECOND),
        }
        self._session: aiohttp.ClientSession | None = None

    def audio_uri(self, audio: FileRecord) -> str:
        """Where SpeechKit reads the audio: the object's URL in Yandex Object Storage."""
        if not audio.object_key:
            raise RecognitionFailed("the audio was not copied to Object Storage for the recognizer")
        return self._audio_base + quote(audio.object_key, safe="/")

    #: What it can be asked for: the languages of ``LANGUAGE_CODES``, no translation, no prompt.
    abilities = ABILITIES

    def request_body(
        self, audio: FileRecord, request: RecognitionRequest = DEFAULT_REQUEST
    ) -> dict[str, Any]:
        """The JSON of a start request; no channel count or sample rate, which OGG_OPUS forbids."""
        return {
            "config": {
                "specification": {
                    "languageCode": speechkit_language(request, self._language),
                    "model": self._model,
                    "audioEncoding": "OGG_OPUS",
                }
            },
            "audio": {"uri": self.audio_uri(audio)},
        }

    async def start(
        self,
        audio: FileRecord,
        *,
        duration: float | None,
        request: RecognitionRequest = DEFAULT_REQUEST,
        on_progress: ProgressCallback | None = None,
    ) -> Started:
        """Recognise local short audio at once (sync), or start an async operation on its copy.

        The prompt is ignored: SpeechKit takes none. It reports no progress:
        neither API says how far it got; a split recording's progress is its
        parts done (ADR 51).
        """
        refusal = self.limits.refusal(seconds=duration, size=audio.size)
        if refusal is not None:
            raise RecognitionFailed(refusal)
        if self._reads(audio) and self.limits.takes_directly(seconds=duration, size=audio.size):
            try:
                return await self._recognize_now(audio, duration, request)
            except DirectRefused:
                if not audio.object_key:
                    raise
                # Already in the bucket SpeechKit reads (ADR 33): async at once, no copy.
        elif not audio.object_key:
            raise DirectRefused("the audio is too long or too large for synchronous recognition")
        body = self.request_body(audio, request)
        await self._take(STARTS_BUDGET)
        answer = await self._request("start", "POST", self._stt_url, duration, json=body)
        operation_id = answer.get("id")
        if not isinstance(operation_id, str) or not operation_id:
            raise RecognizerUnavailable("the speech recognizer started no operation")
        return Started(operation_id=operation_id, advised_delay=advised_delay(duration))

    async def check(self, operation_id: str) -> CheckResult:
        """Ask about the operation; when the hourly budget is spent, say when to ask instead."""
        if operation_id.startswith(SYNC_PREFIX):
            # Done within start: a job found in check with it has nothing left to ask about.
            return Rejected(reason="the synchronous recognition has nothing to check")
        wait = await self._budgets.take(CHECKS_BUDGET, **self._shape(CHECKS_BUDGET))
        if wait is not None:
            _log_request("check", "paced", None)
            return Pending(retry_after=wait)
        url = f"{self._operation_url}/{quote(operation_id, safe='')}"
        return read_operation(await self._request("check", "GET", url, None))

    async def close(self) -> None:
        """Close the HTTP session; a later call opens a new one."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def _recognize_now(
        self, audio: FileRecord, duration: float | None, request: RecognitionRequest
    ) -> Started:
        """One v1 request with the audio's bytes; the outcome comes with ``Started``."""
        if self._files is None:  # pragma: no cover - limits.takes_directly is False then
            raise DirectRefused("synchronous recognition is off")
        try:
            data = b"".join([chunk async for chunk in self._files.open(audio)])
        except FileNotFound:
            raise MissingFile("the converted audio is missing from storage") from None
        if len(data) > SYNC_MAX_BYTES:
            raise DirectRefused("the audio is too large for synchronous recognition")
        await self._take(SYNC_BUDGET)
        lang = speechkit_language(request, self._language)
        params = {"lang": lang, "topic": self._model, "format": "oggopus"}
        answer = await self._request(
            "sync", "POST", self._sync_url, duration, data=data, params=params
        )
        text = answer.get("result")
        if not isinstance(text, str):
            raise RecognizerUnavailable(UNREADABLE)
        operation_id = SYNC_PREFIX + secrets.token_hex(8)
        if not text.strip():
            return Started(operation_id=operation_id, outcome=Rejected(reason=NO_SPEECH))
        return Started(operation_id=operation_id, outcome=Recognized(text=text.strip()))

    def _reads(self, audio: FileRecord) -> bool:
        """True when ``files`` holds ``audio``: the sync path can read its bytes."""
        return self._files is not None and self._files.location == audio.location

    def _shape(self, name: str) -> dict[str, Any]:
        capacity, per = self._shapes[name]
        return {"capacity": capacity, "per": per}

    async def _take(self, name: str) -> None:
        """Take a token of the budget or raise ``BudgetSpent`` with the wait; nothing is sent."""
        wait = await self._budgets.take(name, **self._shape(name))
        if wait is not None:
            _log_request("sync" if name == SYNC_BUDGET else "start", "paced", None)
            raise BudgetSpent(
                "the SpeechKit request budget is spent for now; the job waits for it",
                retry_after=wait,
            )

    async def _request(
        self,
        action: str,
        method: str,
        url: str,
        duration: float | None,
        *,
        json: Mapping[str, Any] | None = None,
        data: bytes | None = None,
        params: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """One API call; the parsed JSON object of a 2xx answer, else the core error."""
        session = self._open_session()
        outcome = "error"
        try:
            with api_errors():
                async with session.request(
                    method,
                    url,
                    json=json,
                    data=data,
                    params=params,
                    headers={"Authorization": f"Api-Key {self._api_key}"},
                ) as response:
                    outcome = str(response.status)
                    if action == "sync" and await _too_big(response):
                        raise DirectRefused(
                            "the synchronous API refused the audio as too long or too large"
                        )
                    _refuse_bad_status(response.status, action, response.headers.get("Retry-After"))
                    answer = await response.json(content_type=None)
                    outcome = "ok"
        finally:
            _log_request(action, outcome, duration)
        if not isinstance(answer, dict):
            raise RecognizerUnavailable(UNREADABLE)
        return answer

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # trust_env off: no proxy or netrc from the environment sees the API key.
            self._session = aiohttp.ClientSession(timeout=self._timeout, trust_env=False)
        return self._session


#: Words of a sync API 400 that say the audio is too long or too large for it.
_TOO_BIG_WORDS = ("too long", "too large", "too big", "duration", "size", "length")


async def _too_big(response: aiohttp.ClientResponse) -> bool:
    """True for a 413, or a 400 whose message speaks of length or size: try async instead.

    The message is read only to classify the refusal; it is never logged or shown.
    """
    if response.status == 413:
        return True
    if response.status != 400:
        return False
    text = (await response.text()).lower()
    return any(word in text for word in _TOO_BIG_WORDS)


def _log_request(api: str, outcome: str, duration: float | None) -> None:
    """The event ``/metrics`` counts: one per request (or paced non-request)."""
    extra: dict[str, Any] = {"api": api, "outcome": outcome}
    if duration is not None and api != "check" and outcome != "paced":
        extra["audio_seconds"] = duration
    log.info("speechkit.request", extra=extra)


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
