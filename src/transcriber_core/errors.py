"""The one error tree of transcriber.

Every adapter translates its vendor's exceptions into these classes at its
edge, so that the worker can classify a failure by type alone::

    TranscriberError
    ├── NotFound
    │   ├── JobNotFound
    │   ├── FileNotFound
    │   └── VoiceNotFound
    ├── LeaseLost
    ├── Conflict
    │   └── DedupKeyReused
    ├── JobChanged                an owner's edit met a job changed since it was read
    ├── InvalidTransition
    ├── CallbackRefused           a callback URL or its address is refused for good (ADR 35)
    ├── OptionRefused             a sender's language, prompt, task or title cannot be honoured
    ├── QuotaExceeded             the sender's seconds for today are spent (SPEC §20, ADR 59)
    ├── VoiceRefused              a recording's speaker cannot become a voice (SPEC §25)
    └── StepError                 a step could not finish this attempt
        ├── ServiceCondition      the service cannot work now, not the job: it waits, no attempt
        │   ├── DiskFull                        (disk_full, this host)
        │   ├── RecognizerCredentialsRejected   (recognizer_credentials_rejected)
        │   ├── RecognizerThrottled             (recognizer_throttled, not a health fault)
        │   ├── BudgetSpent                     (budget_spent, pacing: waits exactly, ADR 29)
        │   ├── StorageCredentialsRejected      (storage_credentials_rejected)
        │   ├── StorageBucketMissing            (storage_bucket_missing)
        │   ├── RecognizerDown      (recognizer_unavailable; also a RecognizerUnavailable)
        │   ├── StorageDown         (storage_unavailable; also a StorageUnavailable)
        │   └── DatabaseDown        (database_unavailable; also a RepositoryUnavailable)
        ├── TransientError        try again after the retry pause
        │   ├── StorageUnavailable
        │   ├── RepositoryUnavailable
        │   ├── ConverterUnavailable
        │   ├── RecognizerUnavailable
        │   ├── NotifierUnavailable   (may carry the wait the notifier asked for)
        │   ├── ReceiverUnavailable   (a webhook receiver answered no 2xx, or not at all)
        │   ├── DirectRefused         (the recognize step copies the audio and starts again)
        │   ├── StepTimedOut
        │   └── ModelUnavailable      the language model's server: 429, 5xx, timeout (SPEC §27)
        │       └── ModelAnswerMalformed  its answer was not the JSON asked for
        └── PermanentError        this recording is judged for good: `failed`
            ├── UnreadableMedia
            ├── RecordingTooLong
            ├── MissingFile
            ├── RecognitionFailed
            └── ModelRefused          the language model's server: 400, 401, 403, 404

A ``ServiceCondition`` carries a stable ``code`` (what ``/health`` names)
and says whether it belongs to one host (``local``: a disk) or to the whole
deployment (credentials, a bucket). The three ``...Down`` classes are outages
of a dependency (a 5xx, a refused connection, a timeout): they are also the
``TransientError`` of their kind, so code that only retries a call (the
outbox, a cleanup) treats them as before, while the worker makes the job
wait with its attempt given back (``outage``: the wait backs off).

Messages are our own words. They never carry a path, an object key, a URL or
a library's message, because a job's error is shown to its sender (reference: Privacy).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import ClassVar


class TranscriberError(Exception):
    """Something in transcriber went wrong."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        """The human text, safe to show to a sender or write to a log."""
        return str(self.args[0])


class NotFound(TranscriberError):  # noqa: N818 - reads better at call sites than NotFoundError
    """The record does not exist."""


class JobNotFound(NotFound):
    """No job has this id."""


class FileNotFound(NotFound):
    """No file has this id, or its bytes are gone from the store."""


class VoiceNotFound(NotFound):
    """No voice of the caller's has this id."""


class LeaseLost(TranscriberError):  # noqa: N818
    """The job's lease passed to another worker; this worker's result is discarded."""


class Conflict(TranscriberError):  # noqa: N818
    """The record conflicts with one already stored."""


class DedupKeyReused(Conflict):
    """This key was first used with a different file; a new file needs a new key."""


class JobChanged(TranscriberError):  # noqa: N818
    """The job changed since it was read; nothing was written."""


class InvalidTransition(TranscriberError):  # noqa: N818
    """This state change is not allowed."""


class CallbackRefused(TranscriberError):  # noqa: N818
    """The callback URL is refused."""

    def __init__(self, message: str | None = None, *, code: str = "callback_refused") -> None:
        super().__init__(message)
        #: Stable code for the HTTP answer: ``bad_callback_url`` or ``callback_address_refused``.
        self.code = code


class OptionRefused(TranscriberError):  # noqa: N818
    """This recognition option cannot be honoured."""

    def __init__(self, message: str | None = None, *, code: str, field: str) -> None:
        super().__init__(message)
        #: Stable code for the HTTP answer: ``bad_language``, ``bad_prompt``, ``bad_task``...
        self.code = code
        #: The form field at fault.
        self.field = field


class VoiceRefused(TranscriberError):  # noqa: N818
    """This speaker of this recording cannot be remembered as a voice."""

    def __init__(self, message: str | None = None, *, code: str) -> None:
        super().__init__(message)
        #: Stable code for the HTTP answer: ``not_done``, ``no_speakers``, ``bad_speaker``,
        #: ``bad_name``.
        self.code = code


class QuotaExceeded(TranscriberError):  # noqa: N818
    """Today's seconds are spent; more can be sent after the next UTC midnight."""

    def __init__(
        self,
        message: str | None = None,
        *,
        resets: datetime,
        left: float,
        incoming: float,
        exact: bool = True,
    ) -> None:
        super().__init__(message)
        #: When the day's count starts again (the next UTC midnight).
        self.resets = resets
        #: Seconds still free today.
        self.left = left
        #: Seconds the refused recording was charged (0 when unknown).
        self.incoming = incoming
        #: False when ``incoming`` is a bound, not the length: counting stopped past the
        #: day's quota, or at its ceiling (ADR 67); the sender is not told a number then.
        self.exact = exact


class StepError(TranscriberError):
    """A pipeline step could not finish this attempt."""


class ServiceCondition(StepError):  # noqa: N818 - a condition of the service, not an error of it
    """The service cannot do this work now; the job waits without spending an attempt."""

    #: Stable name of the cause, shown by ``/health`` and kept by the condition store.
    code: ClassVar[str] = "service_condition"
    #: True when the cause belongs to this host (its disk), False when to the whole deployment.
    local: ClassVar[bool] = False
    #: True when ``/health`` answers 503 while it holds; pacing (throttling) is not a fault.
    fault: ClassVar[bool] = True
    #: True when ``retry_after`` is exact (a budget knows when its token is back): the job
    #: waits just that, not the fixed condition pause (ADR 29).
    exact: ClassVar[bool] = False
    #: True for an outage of a dependency (down, unreachable): the step backs off its probes.
    outage: ClassVar[bool] = False

    def __init__(self, message: str | None = None, *, retry_after: timedelta | None = None) -> None:
        super().__init__(message)
        #: How long the service behind the condition asked us to wait, when it said.
        self.retry_after = retry_after


class DiskFull(ServiceCondition):
    """The disk is full: no space left to write the service's files."""

    code = "disk_full"
    local = True


class RecognizerCredentialsRejected(ServiceCondition):
    """The speech recognizer refused the service's credentials."""

    code = "recognizer_credentials_rejected"


class RecognizerThrottled(ServiceCondition):
    """The speech recognizer asked the service to slow down."""

    code = "recognizer_throttled"
    fault = False


class BudgetSpent(ServiceCondition):
    """A request budget shared by the deployment is empty until ``retry_after`` (ADR 29)."""

    code = "budget_spent"
    fault = False
    exact = True


class StorageCredentialsRejected(ServiceCondition):
    """The object storage refused the service's credentials."""

    code = "storage_credentials_rejected"


class StorageBucketMissing(ServiceCondition):
    """The object storage bucket the service is configured with does not exist."""

    code = "storage_bucket_missing"


class TransientError(StepError):
    """A temporary failure; the step is tried again after the retry pause."""


class StorageUnavailable(TransientError):  # noqa: N818
    """The file store did not answer as expected."""


class RepositoryUnavailable(TransientError):  # noqa: N818
    """The job database did not answer; it will be asked again."""


class ConverterUnavailable(TransientError):  # noqa: N818
    """The converter could not run; it will be tried again."""


class RecognizerUnavailable(TransientError):  # noqa: N818
    """The speech recognizer did not answer; it will be asked again."""


class NotifierUnavailable(TransientError):  # noqa: N818
    """The notifier could not deliver now; the notice is tried again after a pause."""

    def __init__(self, message: str | None = None, *, retry_after: timedelta | None = None) -> None:
        super().__init__(message)
        #: How long the notifier's service asked us to wait, when it said.
        self.retry_after = retry_after


class ReceiverUnavailable(TransientError):  # noqa: N818
    """The webhook receiver did not answer with a 2xx; the delivery is tried again later."""

    def __init__(self, message: str | None = None, *, retry_after: timedelta | None = None) -> None:
        super().__init__(message)
        #: When the sender knows the receiver cannot be called before then (ADR 44).
        self.retry_after = retry_after


class DirectRefused(TransientError):  # noqa: N818
    """The recognizer would not take this audio directly: copy it for the recognizer and retry.

    A synchronous API refusing audio as too long or too large (ADR 29); the
    recognize step catches it at once, so it never costs an attempt.
    """


class StepTimedOut(TransientError):  # noqa: N818
    """The step ran past its time ceiling."""


class PermanentError(StepError):
    """This recording cannot be processed; the job fails for good."""


class UnreadableMedia(PermanentError):  # noqa: N818
    """The recording could not be decoded as audio or video."""


class RecordingTooLong(PermanentError):  # noqa: N818
    """The recording decodes to more audio than the service accepts."""


class MissingFile(PermanentError):  # noqa: N818
    """The job refers to a file that does not exist."""


class RecognitionFailed(PermanentError):  # noqa: N818
    """The speech recognizer rejected this recording."""


class RecognizerDown(ServiceCondition, RecognizerUnavailable):
    """The speech recognizer is down: it answered 5xx, timed out or could not be reached."""

    code = "recognizer_unavailable"
    outage = True


class StorageDown(ServiceCondition, StorageUnavailable):
    """The object storage is down: it answered 5xx, timed out or could not be reached."""

    code = "storage_unavailable"
    outage = True


class DatabaseDown(ServiceCondition, RepositoryUnavailable):
    """The job database did not answer: it is down, restarting or unreachable."""

    code = "database_unavailable"
    outage = True


class FetchRefused(PermanentError):  # noqa: N818
    """A link that will not be fetched, for good (SPEC §28); ``code`` is the stable reason.

    Codes: ``url_not_allowed`` (an address that is not public, for any
    connection the fetch makes), ``too_large``, ``too_long``,
    ``playlist_not_supported``, ``unsupported_url`` (no media behind it).
    """

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class FetchUnavailable(TransientError):  # noqa: N818
    """The link's server could not be reached or answered with a passing error; retry later."""


class ModelUnavailable(TransientError):  # noqa: N818
    """The language model's server did not answer now; it will be asked again."""


class ModelAnswerMalformed(ModelUnavailable):
    """The language model answered something other than the JSON it was asked for."""


class ModelRefused(PermanentError):  # noqa: N818
    """The language model's server refused the request; asking again will not help."""
