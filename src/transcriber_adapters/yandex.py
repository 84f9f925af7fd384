"""The recognizer on SpeechKit async recognition, API v3 or v2 (reference: Recognizers).

Short local audio with no speakers wanted goes to the synchronous API v1
and is done within ``start`` (ADR 29); otherwise ``start`` posts the Object
Storage URI of the audio and gets an operation and ``check`` polls it. On
API v3 (ADR 54, the default) a done operation's results are then read from
``getRecognition``: a stream of JSON lines with speaker labels, the
detected language and normalised text (``read_recognition``); API v2 keeps
its ``chunks`` (``read_operation``). Every kind of request
is paced by a budget shared through a ``BudgetStore`` (SpeechKit allows 500
starts and 2,500 status checks an hour, 20 sync requests a second).
``api_errors`` and ``_refuse_bad_status`` are the one place where HTTP
failures become core errors. Texts from SpeechKit, aiohttp or the network
never reach an error, because they may name the audio's URI; the API key,
the URI and the object key are never logged (reference: Privacy).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import secrets
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import aiohttp
import attrs

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
#: API v3's base: ``/recognizeFileAsync`` starts, ``/getRecognition`` reads the results.
DEFAULT_V3_URL = "https://stt.api.cloud.yandex.net/stt/v3"
#: The async APIs ``[yandex] async_api`` may name; v3 is the default (ADR 54).
ASYNC_APIS = ("v3", "v2")
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
#: What SpeechKit can be asked for: no translation, no prompt (no API takes either); v3 labels
#: speakers besides (``YandexRecognizer.abilities``).
ABILITIES = Abilities(languages=frozenset(LANGUAGE_CODES), name="SpeechKit")


def speechkit_language(request: RecognitionRequest, default: str) -> str:
    """SpeechKit's code for the language asked for; ``default`` (``[yandex] language``) for auto.

    v2 and v1 detect no language, so ``auto`` is the configured one; v3
    detects it (``v3_request_body`` then restricts no language).
    """
    if request.language is None:
        return default
    return LANGUAGE_CODES.get(request.language, default)


def iso_language(code: object) -> str | None:
    """The ISO 639-1 code of a language SpeechKit names ("ru-RU" or "ru"); None if not one."""
    if not isinstance(code, str):
        return None
    short = code.split("-", 1)[0].strip().lower()
    return short if len(short) == 2 and short.isascii() and short.isalpha() else None


class YandexRecognizer:
    """SpeechKit recognition of Ogg/Opus audio: v1 synchronous for short clips, v3 or v2 async.

    **Async (v3 by default, or v2: ``async_api``).** The audio is read by
    SpeechKit from ``<storage_url>/<bucket>/<object_key>``, so it must be a
    record of the S3 store on the same bucket; ``check`` polls the
    operation. On v3 (``v3_url``, ADR 54) the start asks for normalised
    text, the job's language (none for ``auto``: SpeechKit detects it) and
    speaker labels when the job wants speakers; a done operation's results
    come from ``getRecognition``, whose speaker tags the words carry. An
    operation that finished with v2 ``chunks`` (started before a switch to
    v3) is still read as v2.

    **Sync (v1, ADR 29).** Audio that ``files`` (the service's file store)
    holds, of at most ``sync_max_seconds`` and 1 MB, is read from it and
    posted to ``sync_url``; the text comes back in the answer, so ``start``
    returns it as the outcome and there is nothing to check.
    ``limits.takes_directly`` tells the pipeline which audio that is, so it
    copies nothing to Object Storage for it. A refusal as too long or too
    large (HTTP 400 or 413), or local audio past those limits, raises
    ``DirectRefused``: the pipeline copies the audio and starts it async.
    So does a request that wants speakers: v1 labels none and gives no word
    timings to label. Audio with an object key (``files`` on the bucket, ADR 33) is started
    async at once instead. ``sync_max_seconds`` of 0, or no ``files``, turns
    the sync path off.

    **Budgets.** Async starts (``starts_per_hour``), checks
    (``checks_per_hour``) and sync requests (``sync_per_second``) each take a
    token from ``budgets`` (shared by every process when it is the SQLite
    store, on the store's own clock) before anything is sent. An empty start or sync
    budget raises ``BudgetSpent`` with the wait; an empty check budget
    answers ``Pending`` with the wait. Nothing is sent either way. A start
    told to wait keeps its turn (the audio's id is the holder, ADR 61): the
    token at the end of the wait is its own, and no other start takes it.

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
        v3_url: str = DEFAULT_V3_URL,
        async_api: str = "v3",
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
        if async_api not in ASYNC_APIS:
            raise ValueError('async_api must be "v3" or "v2"')
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
        self._v3_url = v3_url.rstrip("/")
        #: The async API starts go to: "v3" or "v2".
        self.async_api = async_api
        #: v3 labels speakers itself; v2 and v1 leave that to a diarizer.
        self.abilities = attrs.evolve(ABILITIES, speakers=async_api == "v3")
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

    def request_body(
        self, audio: FileRecord, request: RecognitionRequest = DEFAULT_REQUEST
    ) -> dict[str, Any]:
        """The JSON of a start request on the configured async API."""
        if self.async_api == "v3":
            return self.v3_request_body(audio, request)
        return self.v2_request_body(audio, request)

    def v3_request_body(
        self, audio: FileRecord, request: RecognitionRequest = DEFAULT_REQUEST
    ) -> dict[str, Any]:
        """The JSON of a v3 ``recognizeFileAsync``: normalised text, language, speaker labels.

        ``auto`` restricts no language, so SpeechKit detects it; speakers
        wanted (any value but off) turn speaker labelling on.
        """
        model: dict[str, Any] = {
            "model": self._model,
            "audioFormat": {"containerAudio": {"containerAudioType": "OGG_OPUS"}},
            "textNormalization": {
                "textNormalization": "TEXT_NORMALIZATION_ENABLED",
                "profanityFilter": False,
                "literatureText": False,
            },
            "audioProcessingType": "FULL_DATA",
        }
        if request.language is not None:
            model["languageRestriction"] = {
                "restrictionType": "WHITELIST",
                "languageCode": [speechkit_language(request, self._language)],
            }
        labeling = "SPEAKER_LABELING_DISABLED"
        if request.speakers is not None:
            labeling = "SPEAKER_LABELING_ENABLED"
        return {
            "uri": self.audio_uri(audio),
            "recognitionModel": model,
            "speakerLabeling": {"speakerLabeling": labeling},
        }

    def v2_request_body(
        self, audio: FileRecord, request: RecognitionRequest = DEFAULT_REQUEST
    ) -> dict[str, Any]:
        """The JSON of a v2 start; no channel count or sample rate, which OGG_OPUS forbids."""
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
        direct = request.speakers is None and self.limits.takes_directly(
            seconds=duration, size=audio.size
        )
        if self._reads(audio) and direct:
            try:
                return await self._recognize_now(audio, duration, request)
            except DirectRefused:
                if not audio.object_key:
                    raise
                # Already in the bucket SpeechKit reads (ADR 33): async at once, no copy.
        elif not audio.object_key:
            if request.speakers is not None:
                raise DirectRefused("synchronous recognition labels no speakers")
            raise DirectRefused("the audio is too long or too large for synchronous recognition")
        body = self.request_body(audio, request)
        # The audio's id names who waits: the same recording or part on every retry, so a
        # start told to wait keeps its turn and is admitted at it (ADR 61).
        await self._take(STARTS_BUDGET, holder=audio.id)
        url = f"{self._v3_url}/recognizeFileAsync" if self.async_api == "v3" else self._stt_url
        answer = await self._request("start", "POST", url, duration, json=body)
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
        operation = await self._request("check", "GET", url, None)
        if self.async_api == "v2" or not _v3_results_wanted(operation):
            return read_operation(operation)
        # Done on v3: the results are a second request, part of the same check (one token).
        lines = await self._request_lines(
            "check",
            f"{self._v3_url}/getRecognition",
            params={"operationId": operation_id},
        )
        return read_recognition(lines)

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

    async def _take(self, name: str, *, holder: str | None = None) -> None:
        """Take a token of the budget or raise ``BudgetSpent`` with the wait; nothing is sent."""
        wait = await self._budgets.take(name, **self._shape(name), holder=holder)
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

    async def _request_lines(
        self, action: str, url: str, *, params: Mapping[str, str]
    ) -> list[dict[str, Any]]:
        """A GET answered by a stream of JSON objects, one a line (v3 ``getRecognition``)."""
        session = self._open_session()
        outcome = "error"
        try:
            with api_errors():
                async with session.get(
                    url, params=params, headers={"Authorization": f"Api-Key {self._api_key}"}
                ) as response:
                    outcome = str(response.status)
                    _refuse_bad_status(response.status, action, response.headers.get("Retry-After"))
                    lines = [line async for line in _json_lines(response)]
                    outcome = "ok"
        finally:
            _log_request(action, outcome, None)
        return lines

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


async def _json_lines(response: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    """Each JSON object of a streamed answer: one a line, or one JSON array of them.

    A line that is no JSON raises ``ValueError`` (``api_errors`` makes it
    ``RecognizerUnavailable``); JSON that is no object is ``RecognizerUnavailable``.
    """
    body = (await response.read()).decode("utf-8")
    if body.lstrip().startswith("["):
        # A proxy or gateway may gather a stream into one array.
        items = json.loads(body)
    else:
        items = [json.loads(line) for line in body.splitlines() if line.strip()]
    if not isinstance(items, list):  # pragma: no cover - json of "[" is a list
        raise RecognizerUnavailable(UNREADABLE)
    for item in items:
        if not isinstance(item, dict):
            raise RecognizerUnavailable(UNREADABLE)
        yield item


def _v3_results_wanted(operation: Mapping[str, Any]) -> bool:
    """True when a v3 operation is done with no error and no v2 ``chunks``: read its results."""
    if not operation.get("done") or operation.get("error") is not None:
        return False
    response = operation.get("response")
    return not (isinstance(response, dict) and "chunks" in response)


@attrs.define
class _Utterance:
    """One final of a v3 stream, perhaps refined: its channel, text, words and languages."""

    channel: str
    start: float
    text: str
    words: list[Word]
    languages: dict[str, float]


def read_recognition(lines: Sequence[Mapping[str, Any]]) -> CheckResult:
    """The transcript of a v3 ``getRecognition`` stream (ADR 54).

    Each ``final`` is an utterance; a ``finalRefinement`` with the same
    channel and ``finalIndex`` replaces its text (and words, when it has
    them) with the normalised ones. Partials, keep-alives and analyses are
    skipped. Utterances go in order of their start; each word carries its
    utterance's ``channelTag`` as a speaker label (SpeechKit labels speakers
    as channels), which the core numbers ``S1``… or drops when unwanted.
    The language is the one most probable over the utterances, weighted by
    their words. An ``error`` line rejects the recording.
    """
    finals: dict[tuple[str, str], _Utterance] = {}
    refined: dict[tuple[str, str], Mapping[str, Any]] = {}
    for line in lines:
        error = line.get("error")
        if error is not None:
            return _rejected(error)
        _take_result(line.get("result", line), finals, refined)
    utterances = []
    for key, final in finals.items():
        utterance = final if key not in refined else _refine(final, refined[key])
        if utterance.text:
            utterances.append(utterance)
    utterances.sort(key=lambda u: u.start)
    if not utterances:
        return Rejected(reason=NO_SPEECH)
    heard: dict[str, float] = {}
    for utterance in utterances:
        for code, probability in utterance.languages.items():
            weight = probability * max(len(utterance.words), 1)
            heard[code] = heard.get(code, 0.0) + weight
    return Recognized(
        text=" ".join(u.text for u in utterances),
        words=tuple(word for u in utterances for word in u.words),
        language=max(heard, key=lambda code: heard[code]) if heard else None,
    )


def _take_result(
    result: object,
    finals: dict[tuple[str, str], _Utterance],
    refined: dict[tuple[str, str], Mapping[str, Any]],
) -> None:
    """File one result of the stream: a final under its (channel, index), or its refinement."""
    if not isinstance(result, dict):
        raise RecognizerUnavailable(UNREADABLE)
    if isinstance(result.get("final"), dict):
        update = result["final"]
        utterance = _utterance(_channel(result, update), update)
        if utterance is not None:
            finals[(utterance.channel, _cursor_index(result))] = utterance
    elif isinstance(result.get("finalRefinement"), dict):
        refinement = result["finalRefinement"]
        update = refinement.get("normalizedText")
        if isinstance(update, dict):
            index = str(refinement.get("finalIndex", ""))
            refined[(_channel(result, update), index)] = update


def _rejected(error: object) -> Rejected:
    """A v3 stream's ``error`` line as a refusal: only its code, its message may name the URI."""
    code = error.get("code") if isinstance(error, dict) else None
    shown = f" (code {code})" if isinstance(code, int) else ""
    return Rejected(reason=f"the speech recognizer could not recognise the recording{shown}")


def _cursor_index(result: Mapping[str, Any]) -> str:
    """The ``audioCursors.finalIndex`` of a final (int64 as a string), "" when absent."""
    cursors = result.get("audioCursors")
    if not isinstance(cursors, dict):
        return ""
    return str(cursors.get("finalIndex", ""))


def _channel(result: Mapping[str, Any], update: Mapping[str, Any]) -> str:
    """The channel (speaker) tag of a result: the update's own, else the result's, else "0"."""
    tag = update.get("channelTag", result.get("channelTag", "0"))
    return str(tag)


def _best_alternative(update: Mapping[str, Any]) -> Mapping[str, Any] | None:
    alternatives = update.get("alternatives")
    if not isinstance(alternatives, list) or not alternatives:
        return None
    best = alternatives[0]
    return best if isinstance(best, dict) else None


def _utterance(channel: str, update: Mapping[str, Any]) -> _Utterance | None:
    """The utterance of a final's best alternative; None when it has none."""
    best = _best_alternative(update)
    if best is None:
        return None
    text = best.get("text")
    words = list(_v3_words(best.get("words"), channel))
    start = _milliseconds(best.get("startTimeMs"))
    if start is None:
        start = words[0].start if words else 0.0
    return _Utterance(
        channel=channel,
        start=start,
        text=text.strip() if isinstance(text, str) else "",
        words=words,
        languages=dict(_languages(best.get("languages"))),
    )


def _refine(utterance: _Utterance, update: Mapping[str, Any]) -> _Utterance:
    """``utterance`` with the normalised text (and words, when given) of its refinement."""
    best = _best_alternative(update)
    if best is None:
        return utterance
    text = best.get("text")
    if isinstance(text, str) and text.strip():
        utterance.text = text.strip()
    words = list(_v3_words(best.get("words"), utterance.channel))
    if words:
        utterance.words = words
    languages = dict(_languages(best.get("languages")))
    if languages:
        utterance.languages = languages
    return utterance


def _v3_words(items: object, channel: str) -> Iterator[Word]:
    """The timed words of a v3 alternative (int64 milliseconds as strings), labelled ``channel``."""
    if not isinstance(items, list):
        return
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        start, end = _milliseconds(item.get("startTimeMs")), _milliseconds(item.get("endTimeMs"))
        if start is None or end is None or not 0 <= start <= end:
            continue
        yield Word(text=item["text"], start=start, end=end, speaker=channel)


def _languages(items: object) -> Iterator[tuple[str, float]]:
    """(ISO 639-1 code, probability) of a v3 ``languages`` list; unreadable entries left out."""
    if not isinstance(items, list):
        return
    for item in items:
        if not isinstance(item, dict):
            continue
        code = iso_language(item.get("languageCode"))
        try:
            probability = float(item.get("probability", 0))
        except (TypeError, ValueError):
            continue
        if code is not None and math.isfinite(probability) and probability > 0:
            yield code, probability


def _milliseconds(value: object) -> float | None:
    """Seconds from an int64 of milliseconds, which JSON carries as a string ("1380")."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    try:
        milliseconds = int(value)
    except ValueError:
        return None
    return milliseconds / 1000
