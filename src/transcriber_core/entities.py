"""Records of the domain: files, jobs, where a job came from, and its states."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime

import attrs

from transcriber_core.languages import RecognitionRequest, Task


class State(enum.StrEnum):
    """Where a job is in the pipeline; a closed set."""

    #: A link's recording is being downloaded (SPEC §28); the job then goes on as an upload.
    FETCH = "fetch"
    CONVERT = "convert"
    RECOGNIZE = "recognize"
    CHECK = "check"
    DONE = "done"
    FAILED = "failed"
    DEAD = "dead"

    @property
    def is_terminal(self) -> bool:
        """True for states no worker ever acquires."""
        return self in TERMINAL_STATES


#: States that a step works on, in pipeline order.
STEP_STATES: tuple[State, ...] = (State.FETCH, State.CONVERT, State.RECOGNIZE, State.CHECK)
#: States a job never leaves by itself.
TERMINAL_STATES: frozenset[State] = frozenset({State.DONE, State.FAILED, State.DEAD})


class Location(enum.StrEnum):
    """Where the bytes of a file record live."""

    LOCAL = "local"
    S3 = "s3"


class OriginKind(enum.StrEnum):
    """The intake a job came through, and so where its outcome is told."""

    HTTP = "http"
    TELEGRAM = "telegram"


@attrs.frozen(kw_only=True)
class Origin:
    """Who sent the recording and where to reply."""

    kind: OriginKind
    #: Telegram chat to reply in; None for HTTP.
    chat_id: int | None = None
    #: Telegram message to reply to; None for HTTP.
    message_id: int | None = None

    @classmethod
    def http(cls) -> Origin:
        """An upload over HTTP: nobody is messaged, the caller polls."""
        return cls(kind=OriginKind.HTTP)

    @classmethod
    def telegram(cls, chat_id: int, message_id: int) -> Origin:
        """A Telegram message, replied to in its chat."""
        return cls(kind=OriginKind.TELEGRAM, chat_id=chat_id, message_id=message_id)


@attrs.frozen(kw_only=True)
class FileRecord:
    """One physical copy of a file in one store."""

    #: Unguessable id; the stored name is ``<id><extension>``.
    id: str
    location: Location
    #: Object key inside the bucket; only for ``Location.S3``.
    object_key: str | None = None
    #: Size in bytes.
    size: int
    #: Lower-case extension with its dot (".mp3"), or "" when unknown.
    extension: str
    created: datetime

    @property
    def name(self) -> str:
        """The stored name: the id and the extension, nothing of the sender's."""
        return f"{self.id}{self.extension}"


@attrs.frozen(kw_only=True)
class Word:
    """One recognised word with its timing in seconds from the start."""

    text: str
    start: float
    end: float
    #: Who said it (a ``Speaker.id``, "S1"); None when speakers were not labelled (SPEC §18).
    speaker: str | None = None


#: ``Job.speakers_wanted`` for "find out how many speakers there are".
AUTO_SPEAKERS = 0


@attrs.frozen(kw_only=True)
class Speaker:
    """One voice of a recording: its id on the words ("S1") and the name shown for it."""

    id: str
    name: str
    #: The owner's remembered voice it was matched with, and named after (SPEC §25); None: none.
    voice_id: str | None = None


#: A voice print: a unit-length speaker embedding (SPEC §25). Biometric data: never logged,
#: never answered, kept only in its owner's rows (ADR 73).
Print = tuple[float, ...]


@attrs.frozen(kw_only=True)
class SpeakerPrint:
    """The voice print of one speaker of a recording (``Speaker.id``), kept with the job."""

    speaker: str
    vector: Print = attrs.field(repr=False)


@attrs.frozen(kw_only=True)
class Turn:
    """A stretch of a recording where one voice speaks, in seconds; ``speaker`` is any label."""

    speaker: str
    start: float
    end: float


@attrs.frozen(kw_only=True)
class Diarization:
    """Who speaks when in a recording, and what each voice sounds like (SPEC §18, §25)."""

    #: The turns of each voice, in any order; labels are the diarizer's own.
    turns: tuple[Turn, ...] = ()
    #: Each label's voice print: the unit-length mean of its embeddings. Empty for a
    #: diarizer without a speaker encoder; a label may be missing. Never logged.
    prints: Mapping[str, Print] = attrs.field(factory=dict, repr=False)


@attrs.frozen(kw_only=True)
class Voice:
    """A named voice its owner remembers (SPEC §25); its print stays in the store's rows."""

    #: Unguessable id, what the API names it by.
    id: str
    #: Whose it is: a job owner key (a person's ``person:…`` or a token's hash).
    owner: str
    name: str
    created: datetime
    #: Recordings' speakers averaged into its print.
    samples: int = 1


#: The states in which a job keeps its ``progress``; any other move clears it (ADR 51, 85).
PROGRESS_STATES = frozenset({State.FETCH, State.RECOGNIZE, State.CHECK})


@attrs.frozen(kw_only=True)
class Progress:
    """How far the step of a job has come, as its lease holder last noted it (ADR 51, 85).

    Written only by ``JobQueue.save_progress_if_held``; both times are the
    store's clock, so hosts whose clocks disagree still agree on the pace.
    In ``recognize`` and ``check`` it counts seconds of audio towards the
    job's duration; in ``fetch`` it counts bytes towards ``total`` (ADR 85).
    """

    #: Seconds of the audio recognised so far (the end of the last segment heard); in
    #: ``fetch``, the bytes downloaded so far.
    seconds_done: float
    #: The whole the step counts towards when the job's duration is not it: a fetch's
    #: declared bytes; None when unknown or for a recognition.
    total: float | None = None
    #: When this recognition began: the estimate of the time left counts from here.
    started: datetime
    #: When ``seconds_done`` was last noted.
    updated: datetime


@attrs.frozen(kw_only=True)
class Job:
    """A recording's way through the pipeline; the job and its queue item at once."""

    #: Unguessable id; knowing it is what lets a caller read the job's status.
    id: str
    state: State
    origin: Origin
    #: The recording as received (a link's: once fetched).
    source_file_id: str | None = None
    #: The link the recording is fetched from (SPEC §28); None for a recording sent as bytes.
    #: May carry a secret (a signed share): never logged, never in an error text.
    source_url: str | None = attrs.field(default=None, repr=False)
    #: The Ogg/Opus mono audio made by the convert step.
    converted_file_id: str | None = None
    #: The copy in Object Storage that the recognizer reads.
    storage_file_id: str | None = None
    #: The recognizer's long-running operation.
    operation_id: str | None = None
    #: Length of the recording in seconds, measured by the convert step.
    duration: float | None = None
    #: The transcript, once done.
    text: str | None = None
    #: Word timings when the recognizer gives them.
    words: tuple[Word, ...] = ()
    #: The language the recognizer heard (ISO 639-1, "en"), when it says.
    language: str | None = None
    #: Speakers to label: None off, ``AUTO_SPEAKERS`` to find the count, else exactly that many.
    speakers_wanted: int | None = None
    #: The voices the words are labelled with, in order of first word; names the owner may edit.
    speakers: tuple[Speaker, ...] = ()
    #: Each speaker's voice print, when the diarizer gives them: what "Remember this voice"
    #: keeps and what the owner's voices are matched with (SPEC §25). Never shown nor logged.
    prints: tuple[SpeakerPrint, ...] = attrs.field(default=(), repr=False)
    #: A split recording's speakers, heard beside its parts' recognition and kept until the
    #: join labels the words with them (ADR 89); None: not heard yet. Cleared at the end.
    heard: Diarization | None = attrs.field(default=None, repr=False)
    #: The language the sender asked for (ISO 639-1); None: ``auto`` (SPEC §18).
    language_requested: str | None = None
    #: Text that primes the recognizer (Whisper's initial prompt); None: none. May name people.
    prompt: str | None = attrs.field(default=None, repr=False)
    #: Transcribe in the language spoken, or translate to English.
    task: Task = Task.TRANSCRIBE
    #: Why the job failed, died or last retried, in our own words.
    error: str | None = None
    #: Acquires since the last step that finished without failure.
    attempts: int = 0
    #: The lease holder; None when no worker holds the job.
    acquisition_id: str | None = None
    #: When the lease was taken or last renewed.
    acquire_time: datetime | None = None
    #: The job is not handed out before this time.
    delay_time: datetime | None = None
    #: Makes a retried intake return the first job (Idempotency-Key, Telegram file).
    dedup_key: str | None = None
    #: SHA-256 (hex) of the bytes first received with ``dedup_key``; a retry must match it.
    upload_digest: str | None = None
    #: Rides the express lane: small at intake and, once measured, no longer than its limit.
    short: bool = False
    #: SHA-256 (hex) of the API token that sent the job, never the token; None: no tokens (ADR 36).
    owner: str | None = None
    #: When the job last reached a terminal state; retention counts from here (ADR 36).
    ended: datetime | None = None
    #: Where the job's end is POSTed (a webhook, ADR 35); None: nobody is called.
    callback_url: str | None = attrs.field(default=None, repr=False)
    #: How far its recognition has come; the store's alone to write (``save_progress_if_held``),
    #: kept while the job stays in ``recognize`` or ``check`` and cleared by any other move.
    progress: Progress | None = None
    #: The chat message that shows the job's status, edited as it moves (SPEC §21); the
    #: store's alone to write (``Outbox.save_status_message``). None: none sent yet.
    status_message_id: int | None = None
    #: Grows by one at every correction of the transcript and every restore (ADR 57); the
    #: page sends the one it read and the store saves only if it is still that. The store's
    #: alone to write (``Corrections.save_correction``).
    edit_version: int = 0
    #: The recognizer's transcript, kept at the first correction (``text`` is then the
    #: corrected one) and cleared by a restore; None: never corrected (ADR 57).
    original_text: str | None = None
    #: The recognizer's words, kept with ``original_text``; None: never corrected.
    original_words: tuple[Word, ...] | None = None
    #: The person's name for the recording (``titles.clean_title``); None: shown as a dated
    #: default. Their own words: never logged (SPEC §26, ADR 79). Written at intake and by
    #: ``Jobs.save_title`` alone; no save of the pipeline touches it.
    title: str | None = attrs.field(default=None, repr=False)
    created: datetime
    updated: datetime

    @property
    def corrected(self) -> bool:
        """True when the transcript is a person's correction of the recognizer's (ADR 57)."""
        return self.original_text is not None

    @property
    def request(self) -> RecognitionRequest:
        """What the sender asked of the recognition, as the recognizer is handed it."""
        return RecognitionRequest(
            language=self.language_requested,
            prompt=self.prompt,
            task=self.task,
            speakers=self.speakers_wanted,
        )

    def as_created(self, now: datetime) -> Job:
        """The job as a store records it when made: stamped ``now``, nothing a later step sets."""
        return attrs.evolve(
            self,
            created=now,
            updated=now,
            progress=None,
            status_message_id=None,
            edit_version=0,
            original_text=None,
            original_words=None,
        )

    def file_ids(self) -> tuple[str, ...]:
        """Ids of every file the job refers to, in pipeline order."""
        return tuple(
            file_id
            for file_id in (self.source_file_id, self.converted_file_id, self.storage_file_id)
            if file_id is not None
        )


@attrs.frozen(kw_only=True)
class JobSummary:
    """One row of a person's live list (SPEC §20): what changes while a job runs, and no words.

    Read in one statement for a whole page of jobs (``Listings.list_owned_summaries``):
    the transcript's words are never read, its text only as a short preview.
    """

    id: str
    state: State
    created: datetime
    updated: datetime
    #: Seconds of audio, once measured.
    duration: float | None = None
    #: The first ``SUMMARY_PREVIEW_CHARS`` characters of the transcript, once there is one.
    preview: str | None = None
    #: Why the job ended without a transcript; None until it is terminal.
    error: str | None = None
    #: How far the recognition has come, while it runs and its recognizer says (ADR 51).
    progress: Progress | None = None
    #: Jobs waiting ahead of it in its step and lane (as ``queue_position``); None unless waiting.
    queue_position: int | None = None
    #: Parts recognised and parts in all, for a recording split into parts; 0 and 0 otherwise.
    parts_done: int = 0
    parts_total: int = 0
    #: The person's title for it; None: shown as a dated default (ADR 79).
    title: str | None = attrs.field(default=None, repr=False)


#: Characters of the transcript a ``JobSummary`` carries: a line of the list, not the text.
SUMMARY_PREVIEW_CHARS = 200


@attrs.frozen(kw_only=True)
class Correction:
    """A done job's transcript as a correction or a restore leaves it: what the store writes.

    ``text`` and ``words`` replace the job's; ``original_text`` and
    ``original_words`` are the recognizer's, kept from the first correction
    on, or both None after a restore (ADR 57).
    """

    text: str
    words: tuple[Word, ...]
    original_text: str | None = None
    original_words: tuple[Word, ...] | None = None


class Event(enum.StrEnum):
    """What the sender of a recording is told."""

    ACCEPTED = "accepted"
    #: The job moved on, or its recognition progressed: a chat's status message is edited
    #: (SPEC §21); never a webhook's.
    PROGRESS = "progress"
    DONE = "done"
    FAILED = "failed"
    DEAD = "dead"
    #: The recording's summary was saved done or failed: its chat is sent it (ADR 92);
    #: never a webhook's.
    SUMMARY = "summary"


#: What each terminal state tells the sender.
TERMINAL_EVENTS: dict[State, Event] = {
    State.DONE: Event.DONE,
    State.FAILED: Event.FAILED,
    State.DEAD: Event.DEAD,
}


class DeliveryKind(enum.StrEnum):
    """Where a delivery of the outbox goes (ADR 35)."""

    #: A signed POST to the job's ``callback_url``.
    WEBHOOK = "webhook"
    #: A message to the job's origin through the notifier (Telegram).
    NOTICE = "notice"


@attrs.frozen
class NewDelivery:
    """A delivery to write with a job's move: where it goes and what it tells (ADR 35).

    The core decides these (``outbox.deliveries_for``); the store writes each
    as a ``Delivery`` row in the move's transaction, judging nothing.
    """

    kind: DeliveryKind
    event: Event


@attrs.frozen(kw_only=True)
class Delivery:
    """One message owed to the outside world about a job: a row of the outbox (ADR 35).

    Written in the same transaction as the job's move that calls for it, taken
    by delivery loops under a lease like a job, and deleted once sent or given up.
    Times are the repository's own clock.
    """

    #: Order of writing in the repository; a job's deliveries of one kind go in this order.
    id: int
    job_id: str
    kind: DeliveryKind
    #: What happened to the job: the webhook's ``state``, the notice's kind.
    event: Event
    #: Tries so far; grows at every acquire.
    attempts: int = 0
    #: The lease holder; None when no loop holds the delivery.
    acquisition_id: str | None = None
    #: When the lease was taken.
    acquire_time: datetime | None = None
    #: Not tried before this time.
    due: datetime
    #: When the delivery was written: the retry window counts from here.
    created: datetime
    #: Why the last try failed, in our own words.
    last_error: str | None = None


@attrs.frozen(kw_only=True)
class JobPart:
    """One part of a recording too long for one recognition (ADR 26).

    A split job is recognised part by part; its transcript is the parts'
    texts joined in order, word timings shifted by each part's ``start``.
    Two parts cut inside speech overlap, and the join keeps each word once
    (ADR 62).
    """

    job_id: str
    #: Position from 0, in the recording's order.
    index: int
    #: Where the part begins in the converted recording, in seconds.
    start: float
    #: Where it ends, in seconds; ``end - start`` fits the recognizer's limits.
    end: float
    #: The part's own audio, cut from the converted recording.
    file_id: str | None = None
    #: Its copy in Object Storage that the recognizer reads; deleted once the part is done.
    storage_file_id: str | None = None
    #: The recognizer's operation on this part; a part that has one is checked, never restarted.
    operation_id: str | None = None
    #: The part's transcript, once recognised; set means done.
    text: str | None = None
    #: Word timings from the part's own start, as the recognizer gave them.
    words: tuple[Word, ...] = ()
    #: Acquires since the part last moved on without failure (its own, ADR 52).
    attempts: int = 0
    #: The part's own lease holder; None when no worker holds the part.
    acquisition_id: str | None = None
    #: When the part's lease was taken or last renewed.
    acquire_time: datetime | None = None
    #: The part is not handed out before this time (a retry's pause, a check's wait).
    delay_time: datetime | None = None
    #: Why the part last failed, in our own words.
    error: str | None = None
    #: The part failed for good (``error`` says why): its job fails with it.
    failed: bool = False

    @property
    def finished(self) -> bool:
        """True once nothing more happens to the part: done, or failed for good."""
        return self.text is not None or self.failed

    @property
    def done(self) -> bool:
        """True once the part's transcript is in."""
        return self.text is not None

    @property
    def seconds(self) -> float:
        """The part's length."""
        return self.end - self.start


@attrs.frozen(kw_only=True)
class SessionLogin:
    """One sign-in's record, as the store keeps it (ADR 17): a ``PersonSession``'s login part.

    The browser holds a random id; the store holds only its hash, so a copy
    of the database opens no session, and deleting the record ends the
    session for every copy of the cookie.
    """

    #: SHA-256 of the cookie's random id, in hex; the store's key.
    id_hash: str
    #: The token every form of this session carries.
    csrf: str = attrs.field(repr=False)
    #: When the owner logged in; the absolute lifetime counts from here.
    created: datetime
    #: The last request seen, to the policy's touch interval; idle expiry counts from here.
    last_seen: datetime
    #: The session is refused from this moment on (idle or absolute, whichever comes first).
    expires: datetime
    #: A one-shot message for the next page this session sees.
    flash: str | None = None


@attrs.frozen(kw_only=True)
class LoginFailures:
    """Wrong passwords from one client, for the login back-off (ADR 17)."""

    #: The client's address (an IPv6 client's /64 network).
    client: str
    #: Failures since the client last got in or was forgotten.
    count: int
    #: When the latest failure was counted.
    last: datetime


#: The scope of a condition that holds for every host of the deployment.
EVERYWHERE = ""


@attrs.frozen(kw_only=True)
class Condition:
    """A fault of the service itself (disk full, credentials refused) seen by some worker."""

    #: The cause's stable code, as ``ServiceCondition.code``.
    code: str
    #: The host it holds on, or ``EVERYWHERE`` for the whole deployment.
    scope: str
    #: Our own words for the log and the admin page; never a vendor's text.
    message: str
    #: When it was first seen since it last cleared.
    since: datetime
    #: When a worker last ran into it; it no longer holds once this is too old.
    seen: datetime


class ChatMode(enum.StrEnum):
    """What a Telegram chat has transcribed (SPEC §21)."""

    #: Every recording a member sends.
    AUTO = "auto"
    #: Only a recording someone answers with ``/transcribe``, or one that mentions the bot.
    COMMAND = "command"


@attrs.frozen(kw_only=True)
class ChatSettings:
    """One Telegram chat's choices, kept in the job database so every process sees them."""

    chat_id: int
    #: An ISO 639-1 code the recognizer takes; None: the recognizer detects it ("auto").
    language: str | None = None
    mode: ChatMode = ChatMode.AUTO
    #: ``/summary auto`` (True): each recording of the chat asks for its summary;
    #: ``/summary off`` (False): none does; None: ``[llm] auto_summary`` decides (SPEC §27).
    summary: bool | None = None


@attrs.frozen(kw_only=True)
class PollLease:
    """The right to poll Telegram for updates, held by one process at a time (ADR 53)."""

    #: Who holds it: a name unique to the process.
    holder: str
    #: Grows at each change of holder: a renewal with an older fence fails.
    fence: int
