"""The ports: what the core needs from the outside world, as narrow Protocols.

Adapters do not inherit from these classes; ``typing_tests/`` checks each
adapter against its port with mypy, and ``transcriber_contracts`` checks its
behaviour.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

import attrs

from transcriber_core.entities import (
    ChatMode,
    ChatSettings,
    Condition,
    Correction,
    Delivery,
    DeliveryKind,
    Diarization,
    FileRecord,
    Job,
    JobPart,
    JobSummary,
    Location,
    LoginFailures,
    NewDelivery,
    PollLease,
    Print,
    State,
    Voice,
    Word,
)

# ``Event`` moved to the entities (a delivery names one); it is still exported from here.
from transcriber_core.entities import Event as Event  # noqa: PLC0414 - explicit re-export
from transcriber_core.languages import DEFAULT_REQUEST, Abilities, RecognitionRequest
from transcriber_core.people import (
    MAX_TOKENS_PER_PERSON,
    Invite,
    LinkCode,
    LinkedChat,
    Person,
    PersonSession,
    PersonToken,
)
from transcriber_core.policy import QuotaDecision
from transcriber_core.search import Hit, SearchQuery
from transcriber_core.summaries import Completion, Message, Summary
from transcriber_core.usage import Charge, Measured, Usage


class Clock(Protocol):
    """The one source of time; every stored time comes from it."""

    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class IdSource(Protocol):
    """Makes ids for jobs, files and leases."""

    def new_id(self) -> str:
        """A fresh unguessable id: at least 128 random bits, URL-safe."""
        ...


@attrs.frozen(kw_only=True)
class Removed:
    """What one deletion took out of the repository: whose, and the file records to delete."""

    #: Ids of the jobs deleted, or whose files were.
    jobs: tuple[str, ...] = ()
    #: The file records deleted with them; their bytes are the caller's to delete.
    files: tuple[FileRecord, ...] = ()


@attrs.frozen(kw_only=True)
class Ready:
    """What the poller wakes at one tick: the step states with work, and the outbox."""

    #: The step states with at least one eligible job (as ``acquire`` judges).
    states: frozenset[State] = frozenset()
    #: True when ``acquire_delivery`` with the same lease would hand a delivery out now.
    delivery_due: bool = False
    #: True when ``acquire_part`` with the same lease would hand a part out now (ADR 52).
    parts_due: bool = False


class JobQueue(Protocol):
    """The queue the step loops work from: leases, fenced saves, what is ready (Queue rules)."""

    async def acquire(
        self,
        state: State,
        *,
        acquisition_id: str,
        lease: timedelta,
        short_only: bool = False,
    ) -> Job | None:
        """Atomically lease the oldest eligible job in ``state``; None when there is no work.

        Judged on the store's own clock (``now``), never the caller's:
        eligible is ``delay_time`` null or not after ``now``, and no lease,
        or one whose ``acquire_time`` is at least ``lease`` before ``now``;
        with ``short_only``, also ``short`` (the express lane). Order:
        ``created``, then ``id``. Sets the acquisition id, ``acquire_time``
        and ``updated`` to ``now`` and adds one to ``attempts``. A terminal
        ``state`` is refused with ``ValueError``.
        """
        ...

    async def renew(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the lease's ``acquire_time`` to the store's now.

        Raises ``LeaseLost`` if the job is not held by ``acquisition_id``, or
        no longer exists.
        """
        ...

    async def save_if_held(
        self,
        job: Job,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write every field of ``job`` if the stored job is still leased by ``acquisition_id``.

        With ``delay``, the stored ``delay_time`` is the store's now plus
        ``delay`` and the job's own ``delay_time`` is ignored: a retry pause
        or a poll delay never depends on the caller's clock. ``deliveries``
        (what the core decided the move calls for, ADR 35) are written into
        the outbox in the same transaction: both or neither. Raises
        ``LeaseLost`` otherwise (also for a job that no longer exists),
        writing nothing; ``Conflict`` when the dedup key is taken.
        """
        ...

    async def save_parts_if_held(
        self, job_id: str, parts: Sequence[JobPart], *, acquisition_id: str
    ) -> None:
        """Write each part, replacing the one at its index, if ``acquisition_id`` leases the job.

        All or nothing; raises ``LeaseLost`` otherwise (also for a job that
        no longer exists), writing nothing. Every part must belong to ``job_id``.
        """
        ...

    async def save_progress_if_held(
        self,
        job_id: str,
        seconds_done: float,
        *,
        acquisition_id: str,
        begun: timedelta | None = None,
        total: float | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Note ``seconds_done`` of the job's audio as recognised, if ``acquisition_id`` holds it.

        In ``fetch`` the count is bytes downloaded, and ``total`` the bytes
        declared (None: unknown), stored as the progress's ``total`` (ADR 85);
        a recognition leaves ``total`` None.

        Writes only the job's ``progress`` (ADR 51): its ``updated`` is the
        store's now; with ``begun`` (a recognition that began that long ago:
        it starts over) its ``started`` is the store's now less ``begun``,
        and the store's now when the job had no progress; otherwise
        ``started`` is kept. A duration, not an instant: no host's clock
        skews it. Nothing else of the job changes, ``updated`` included.
        ``deliveries`` (the core's ``progress`` notices) go into the outbox
        in the same transaction, as ``save_if_held``'s do. Raises
        ``LeaseLost`` otherwise (also for a job that no longer exists),
        writing nothing; ``ValueError`` for a negative ``seconds_done``.
        """
        ...

    async def ready_states(self, *, lease: timedelta) -> Ready:
        """The step states with eligible jobs and whether a delivery is due, in one query.

        The poller's whole idle cost (ADR 6, ADR 35): one round trip per tick
        wakes the step loops and the delivery loops alike.
        """
        ...


class PartQueue(Protocol):
    """The parts of split recordings as units of work of their own (SPEC §22, ADR 52).

    A part is leased, renewed and saved like a job (``JobQueue``), under its
    own acquisition id, attempts and delay; the job that owns it waits in
    ``check`` and is not leased meanwhile. Every time is the store's clock.
    """

    async def acquire_part(self, *, acquisition_id: str, lease: timedelta) -> JobPart | None:
        """Atomically lease the next unfinished part of any job; None when there is none.

        Eligible: its job is in ``check``, the part is not ``finished``, its
        ``delay_time`` is null or not after now, and it has no lease or one
        whose ``acquire_time`` is at least ``lease`` before now. Order: the
        job's ``created``, then its ``id``, then the part's ``index``. Sets
        the acquisition id and ``acquire_time`` to now and adds one to
        ``attempts``. Of any number of takers at once, one gets each part.
        """
        ...

    async def renew_part(self, job_id: str, index: int, *, acquisition_id: str) -> None:
        """Move the part's lease to now; ``LeaseLost`` unless ``acquisition_id`` holds it."""
        ...

    async def save_part_if_held(
        self, part: JobPart, *, acquisition_id: str, delay: timedelta | None = None
    ) -> bool:
        """Write the part's work and lease fields if ``acquisition_id`` still leases it.

        Written: the files, operation, text, words, attempts, error, ``failed``
        and the lease holder (``part.acquisition_id``: the same to keep the
        lease, None to give it back; ``acquire_time`` is the store's own). With
        ``delay`` the ``delay_time`` is now plus ``delay``, else the part's
        own. Raises ``LeaseLost``, writing nothing, otherwise (also for a part
        or job that no longer exists).

        A part that is ``finished`` by this save and leaves its job with no
        unfinished part, or failed for good, makes the job (in ``check``)
        due now, in the same transaction; True then, else False. Saves of one
        job's parts are serialised, so of two last parts finishing at once
        one sees the other done.
        """
        ...


class SummaryStore(Protocol):
    """Each recording's summary as a unit of work of its own (SPEC §27, ADR 83).

    One summary per job, leased, renewed and saved fenced like a part
    (``PartQueue``), under its own acquisition id, attempts and delay; it
    goes with its job (deleted with it). Every time is the store's clock.
    """

    async def request_summary(self, job_id: str) -> Summary:
        """Ask for the job's summary (again): it is ``pending`` from scratch, due now.

        Any summary the job had is replaced: its text, error, attempts and
        lease are cleared, so a worker still building the old one loses its
        lease and writes nothing. ``requested`` is now. Raises
        ``JobNotFound`` when the job does not exist.
        """
        ...

    async def get_summary(self, job_id: str) -> Summary | None:
        """The job's summary, or None when it was never asked for."""
        ...

    async def count_pending_summaries(self) -> int:
        """Summaries asked for and neither built nor given up on, their recording done or not."""
        ...

    async def acquire_summary(self, *, acquisition_id: str, lease: timedelta) -> Summary | None:
        """Atomically lease the next pending summary of a done job; None when there is none.

        Eligible: ``pending``, its job is ``done``, its ``delay_time`` is
        null or not after now, and it has no lease or one whose
        ``acquire_time`` is at least ``lease`` before now. Order:
        ``requested``, then the job id. Sets the acquisition id and
        ``acquire_time`` to now and adds one to ``attempts``. Of any number of
        takers at once, one gets each summary.
        """
        ...

    async def renew_summary(self, job_id: str, *, acquisition_id: str) -> None:
        """Move the summary's lease to now; ``LeaseLost`` unless ``acquisition_id`` holds it."""
        ...

    async def save_summary_if_held(
        self,
        summary: Summary,
        *,
        acquisition_id: str,
        delay: timedelta | None = None,
        deliveries: Sequence[NewDelivery] = (),
    ) -> None:
        """Write the summary's work and lease fields if ``acquisition_id`` still leases it.

        ``deliveries`` (the core chose them: ``outbox.summary_deliveries``)
        are written to the outbox in the same transaction (ADR 92).

        Written: state, text, points, actions, model, prompt version,
        source, error, attempts, ``created`` and the lease holder
        (``summary.acquisition_id``: the same keeps the lease, None gives it
        back; ``acquire_time`` is the store's own). With ``delay`` the
        ``delay_time`` is now plus ``delay``, else the summary's own. Raises
        ``LeaseLost``, writing nothing, otherwise (also when the summary or
        its job is gone, or it was asked for again meanwhile).
        """
        ...


class LanguageModel(Protocol):
    """An OpenAI-compatible chat model the operator runs (SPEC §27, ADR 82)."""

    @property
    def model(self) -> str:
        """The model's name as the server knows it (``[llm] model``): stored with a summary."""
        ...

    @property
    def max_input_tokens(self) -> int:
        """The most tokens one request may send (``[llm] max_input_tokens``)."""
        ...

    async def complete(self, messages: Sequence[Message], *, want_json: bool) -> Completion:
        """The model's answer to ``messages``; with ``want_json``, asked for as one JSON object.

        Raises ``ModelUnavailable`` for what may pass (429, 5xx, a timeout,
        no connection) and ``ModelRefused`` for what will not (400, 401,
        403, 404), each with the reason in our own words: never the
        server's text, which may echo the transcript.
        """
        ...


class Jobs(Protocol):
    """Taking a job in, reading it and its parts, and the owner's edits."""

    async def create(
        self, job: Job, files: Sequence[FileRecord] = (), deliveries: Sequence[NewDelivery] = ()
    ) -> tuple[Job, bool]:
        """Store a new job with its file records and ``deliveries`` at once; return it as stored.

        The store stamps ``created`` (queue order) and ``updated`` with its
        own clock, ignoring the job's; every other field is stored as given.
        ``deliveries`` (the core's ``outbox.deliveries_for`` the ``accepted``
        event) go into the outbox in the same transaction. When
        ``job.dedup_key`` is already used, store nothing and return the first
        job with False; otherwise return the stored job with True. A reused
        job id raises ``Conflict``.
        """
        ...

    async def get(
        self, job_id: str, *, owned_by: str | None = None, anonymous: bool = False
    ) -> Job:
        """The job with this id; raises ``JobNotFound``.

        With ``owned_by`` (an API token's digest, a person's key), only a job
        of that owner is found; with ``anonymous`` (an open API's caller),
        only a job that is not a person's (``policy.reachable_by``). Either is
        decided in the store's query before the row is read: another's job
        is never read, so its 404 costs what an unknown id's does.
        """
        ...

    async def find_by_dedup_key(self, dedup_key: str) -> Job | None:
        """The job that first used ``dedup_key``, or None; lets an intake skip a duplicate early."""
        ...

    async def queue_position(self, job_id: str, *, lease: timedelta) -> int | None:
        """How many jobs wait ahead of this one in its step and lane; None when it is not waiting.

        Ahead: same state, before it in ``created, id`` order, and not under a
        live lease (``acquisition_id`` null or ``acquire_time`` at least
        ``lease`` before the store's now). A short job counts only short jobs
        (its express lane); any other job counts every job. The count stops
        at ``policy.QUEUE_POSITION_LIMIT`` (that many or more). None for a job
        in a terminal state or under a live lease (it is running). Raises
        ``JobNotFound``.
        """
        ...

    async def get_parts(self, job_id: str) -> list[JobPart]:
        """The parts of a split job by index; empty for a job recognised whole (ADR 26)."""
        ...

    async def save_if_unchanged(self, job: Job, *, seen: Job) -> None:
        """Write every field of ``job`` if the stored job still equals ``seen`` (owner edits).

        ``seen`` is the job as the editor read it; a step's save, an acquire or
        a renewal since then makes the stored job differ, and the edit raises
        ``JobChanged``, writing nothing, instead of overwriting a result it
        never saw. Whoever holds the lease does not matter. Raises
        ``JobNotFound`` when the job is gone, ``Conflict`` when the dedup key
        is taken.
        """
        ...

    async def save_title(self, job_id: str, title: str | None) -> Job:
        """Write the job's ``title`` (None: none) whatever its state or lease; return it as stored.

        Only the title and ``updated`` (the store's now) change, so a step's
        save neither loses it nor is refused by it: no save writes the title
        (ADR 79). Raises ``JobNotFound`` when the job is gone.
        """
        ...


class Corrections(Protocol):
    """A person's corrections of a done job's transcript, saved compare-and-set (ADR 57)."""

    async def save_correction(self, job_id: str, correction: Correction, *, version: int) -> Job:
        """Write ``correction`` if the job is done and its ``edit_version`` is still ``version``.

        One conditional write: ``text``, ``words`` and the originals as given,
        ``edit_version`` one more, ``updated`` the store's now; no other field
        changes. Returns the job as stored. Raises ``JobChanged`` (nothing
        written) when the version moved on or the job is not done, and
        ``JobNotFound`` when it is gone.
        """
        ...


class FileRecords(Protocol):
    """The records of the files a job holds (their bytes are a ``FileStore``'s)."""

    async def put_file(self, record: FileRecord) -> None:
        """Insert the file record, or replace the one with the same id."""
        ...

    async def get_file(self, file_id: str) -> FileRecord:
        """The file record with this id; raises ``FileNotFound``."""
        ...

    async def delete_file(self, file_id: str) -> None:
        """Remove the file record; nothing happens when it does not exist."""
        ...


class Outbox(Protocol):
    """The deliveries owed to the outside world about jobs (ADR 35)."""

    # Deliveries (webhooks, notices) are rows written in the same transaction as
    # the job's move that calls for them: the core decides which
    # (``transcriber_core.outbox.deliveries_for``) and hands them to ``create`` and
    # ``save_if_held``, which store them. A ``progress`` notice is written only when
    # none of its job waits untaken (no lease): the one waiting shows the job as it is
    # when sent, so more would only repeat it (ADR 51). Loops take them like steps take jobs:
    # leased, fenced, retried. Callers pass durations; the store reads its own
    # clock for every time it writes or compares.

    async def acquire_delivery(
        self,
        *,
        acquisition_id: str,
        lease: timedelta,
        job_id: str | None = None,
        kind: DeliveryKind | None = None,
    ) -> Delivery | None:
        """Atomically lease the next due delivery (of ``job_id`` when given, else of ``kind``).

        None if none. ``kind`` keeps notice loops and webhook loops apart
        (ADR 44); with ``job_id`` (an intake's own notice) it is not used.

        Eligible: ``due`` not after now, no live lease (none, or one taken
        more than ``lease`` ago), the first of its job's deliveries of its
        kind (a job's notices go in order), and no other delivery of its job
        under a live lease (one in flight per job). Order: ``due``, then
        ``id``. Sets the acquisition id and ``acquire_time`` to now and adds
        one to ``attempts``.
        """
        ...

    async def retry_delivery(
        self, delivery: Delivery, *, acquisition_id: str, delay: timedelta, error: str
    ) -> None:
        """Give the lease back and make the delivery due ``delay`` from now, noting ``error``.

        Raises ``LeaseLost``, writing nothing, unless ``acquisition_id`` holds it.
        """
        ...

    async def finish_delivery(self, delivery: Delivery, *, acquisition_id: str) -> None:
        """Remove a delivery that was sent or given up.

        Raises ``LeaseLost``, removing nothing, unless ``acquisition_id`` holds it.
        """
        ...

    async def save_status_message(
        self, delivery: Delivery, message_id: int, *, acquisition_id: str
    ) -> None:
        """Note ``message_id`` as its job's status message if ``acquisition_id`` holds ``delivery``.

        The chat message a notice sent (SPEC §21), edited by the job's later
        notices; only this writes the job's ``status_message_id``, which no
        save changes. Raises ``LeaseLost``, writing nothing, unless
        ``acquisition_id`` holds the delivery (a deleted job takes its deliveries along).
        """
        ...

    async def pending_deliveries(self) -> dict[DeliveryKind, int]:
        """How many deliveries of each kind wait or run; kinds with none are left out."""
        ...


class Removals(Protocol):
    """Deleting a job at its owner's word, and the retention sweeps (ADR 36)."""

    async def delete_job(self, job_id: str) -> Removed:
        """Delete the job, its parts and the file records they refer to, in one transaction.

        Returns the file records deleted, whose bytes the caller deletes.
        Raises ``JobNotFound`` when there is no such job (also when another
        caller deleted it first: each record is returned to one caller).
        """
        ...

    async def take_sweep(self, name: str, *, lease: timedelta) -> bool:
        """Take the sweep ``name`` for ``lease`` on the store's clock; False while another holds it.

        One statement: of any number of processes asking at once, one gets it.
        """
        ...

    async def remove_ended_files(self, *, age: timedelta, limit: int) -> Removed:
        """Delete the file records of at most ``limit`` jobs that ended more than ``age`` ago.

        The jobs and their parts stop referring to the files; jobs keep their
        transcript. Oldest ended first; judged on the store's clock. Each
        record is returned to one caller however many sweep at once.
        """
        ...

    async def remove_ended_jobs(self, *, age: timedelta, limit: int) -> Removed:
        """Delete at most ``limit`` jobs that ended more than ``age`` ago, as ``delete_job`` does.

        Oldest ended first; judged on the store's clock. Each job and record
        is returned to one caller however many sweep at once.
        """
        ...


class Listings(Protocol):
    """What the admin pages and ``/metrics`` count and list."""

    async def list_jobs(
        self, *, state: State | None = None, limit: int = 50, offset: int = 0
    ) -> list[Job]:
        """Jobs newest first (``created``, then ``id``, descending), optionally in one state."""
        ...

    async def list_owned_jobs(self, owner: str, *, limit: int = 50, offset: int = 0) -> list[Job]:
        """The jobs stored with ``owner`` newest first, as ``list_jobs``; a workspace's list."""
        ...

    async def count_by_state(self) -> dict[State, int]:
        """How many jobs are in each state; states with none are left out."""
        ...

    async def list_owned_summaries(
        self, owner: str, *, lease: timedelta, limit: int = 50, offset: int = 0
    ) -> list[JobSummary]:
        """The live view of ``list_owned_jobs``'s page, in one statement (the workspace's poll).

        Each job's state, times, duration, progress, the first
        ``SUMMARY_PREVIEW_CHARS`` of its text, its error once terminal, its
        queue position (as ``queue_position`` with ``lease``) and its parts done
        and in all. Never the words: a page of 3-hour transcripts stays small.
        """
        ...


class TranscriptSearch(Protocol):
    """Full-text search over one owner's transcripts (SPEC §20, ADR 58)."""

    async def search(self, owner: str, query: SearchQuery, *, limit: int = 20) -> list[Hit]:
        """The done jobs stored with ``owner`` whose transcript matches ``query``, newest first.

        Matching is ``query.matches`` on the job's ``text`` as it is now (a
        correction's, ADR 57), and each hit is ``search.hit_of``'s; the store's
        index only finds the candidates, kept in step with ``text`` by the
        transaction that writes it. Another owner's jobs, jobs not done or
        without text and deleted jobs are never found. An empty query finds
        nothing; ``limit`` is 1 to ``search.MAX_HITS`` (``ValueError`` otherwise).
        """
        ...


class JobRepository(
    JobQueue,
    PartQueue,
    Jobs,
    Corrections,
    FileRecords,
    Outbox,
    Removals,
    Listings,
    TranscriptSearch,
    Protocol,
):
    """Every role of the job database at once: what an adapter implements and the app opens.

    Only the composition root (and tests) hold it; each caller in the core
    takes the one role it uses (``Services.queue``, ``.jobs`` and the rest).
    """

    async def close(self) -> None:
        """Release connections and threads; the repository is unusable afterwards."""
        ...


class LoginThrottle(Protocol):
    """Wrong passwords counted per client, seen by every process: the sign-in's back-off (ADR 17).

    One for every password form (the sign-in at ``/`` and its aliases, an
    invite's, the owner's password change), whoever signs in.
    """

    async def get_login_failures(self, client: str) -> LoginFailures | None:
        """The failures counted for ``client``, or None."""
        ...

    async def save_login_failures(
        self, failures: LoginFailures, *, previous: LoginFailures | None
    ) -> bool:
        """Store ``failures`` if what is stored for its client is still ``previous``.

        False, storing nothing, when another attempt got there first: of
        parallel guesses only one is checked.
        """
        ...

    async def clear_login_failures(self, client: str) -> None:
        """Forget ``client``'s failures: someone got in."""
        ...

    async def forget_login_failures(self, *, before: datetime) -> int:
        """Remove failures last counted before ``before``; how many clients were forgotten."""
        ...


class Invitations(Protocol):
    """The owner's one-time invites, and their one use (ADR 55)."""

    async def invite(self, person: Person, *, token_hash: str, lifetime: timedelta) -> Invite:
        """Store ``person`` (no password yet) and an invite valid ``lifetime`` on the store's clock.

        The store stamps the invite's expiry from its own clock, as it does
        leases (ADR 30): hosts whose clocks disagree judge one link alike. A
        name or id already stored raises ``Conflict`` and stores nothing.
        """
        ...

    async def accept_invite(self, token_hash: str, *, password_hash: str) -> Person | None:
        """Use the invite once: set its person's password; the person as stored, or None.

        None, changing nothing, for an unknown, used or expired (store's
        clock) invite, or a disabled person. Of uses racing on one invite,
        exactly one gets the person: the check and the use are one statement.
        """
        ...


class Accounts(Protocol):
    """The people as the owner and the sign-in see them."""

    async def get_person(self, person_id: str) -> Person | None:
        """The person with this id, disabled or not; None when there is none."""
        ...

    async def find_person(self, name: str) -> Person | None:
        """The person signing in with ``name`` (exact match), disabled or not; None."""
        ...

    async def list_people(self) -> list[Person]:
        """Every person, oldest invite first."""
        ...

    async def find_owner(self) -> Person | None:
        """The person with the owner's role, or None while no owner exists (ADR 76)."""
        ...

    async def create_owner(self, person: Person) -> bool:
        """Store ``person`` (role owner, password set) unless an owner exists (False, no change).

        At most one owner ever exists: of setups racing, exactly one is
        stored. A name or id already stored raises ``Conflict``.
        """
        ...

    async def set_password(self, person_id: str, password_hash: str) -> bool:
        """Replace the person's password hash and end every session of theirs, at once.

        False, changing nothing, when the person is unknown. No moment
        exists where the new password works and an old session still opens.
        """
        ...

    async def disable_person(self, person_id: str, *, now: datetime) -> bool:
        """Disable the person and end every session of theirs at once; False when unknown.

        The owner is never disabled: False, nothing changed.

        Their tokens stop at the same moment: ``person_for_token`` and
        ``get_person_session`` never answer for a disabled person. Their
        unused invites and link codes are deleted in the same transaction,
        so ``enable_person`` cannot bring one back (SPEC §29).
        Disabling twice keeps the first time.
        """
        ...

    async def set_person_language(self, person_id: str, language: str | None) -> bool:
        """Keep the language the person chose for the pages (None: their browser's); False
        when unknown (SPEC §26, ADR 77). Disabled or not, the choice is theirs to keep.
        """
        ...

    async def enable_person(self, person_id: str) -> bool:
        """Let a disabled person sign in again; False when unknown (ADR 60).

        In one transaction with it the person's API tokens are deleted (a
        token that may have leaked does not come back to life); their
        sessions were ended by the disabling. Linked chats stay linked.
        """
        ...

    async def delete_person(self, person_id: str) -> bool:
        """Forget the person and every row of theirs here, in one transaction (ADR 90).

        Their invites, tokens, sessions, link codes and chat links go with
        them; from the commit no token, session or chat of theirs answers.
        Their recordings and voices are other stores' (``people.forget_person``).
        False when unknown.
        """
        ...


class ChatLinks(Protocol):
    """Telegram chats linked to people by one-time codes (ADR 60)."""

    async def make_link_code(
        self, person_id: str, *, code_hash: str, lifetime: timedelta
    ) -> LinkCode:
        """Store a code for ``person_id`` expiring ``lifetime`` after the store's now.

        The person's earlier codes stop working: one live code per person.
        """
        ...

    async def use_link_code(self, code_hash: str, *, chat_id: int) -> Person | None:
        """Use the code once and link ``chat_id`` to its person; None when it cannot be used.

        Unknown, used, expired (on the store's clock) or of a person not
        active: None, nothing changed. Of uses racing on one code exactly one
        wins. A chat linked before is linked to the code's person instead.
        """
        ...

    async def person_for_chat(self, chat_id: int) -> Person | None:
        """The active person ``chat_id`` is linked to, or None."""
        ...

    async def list_linked_chats(self, person_id: str) -> list[LinkedChat]:
        """The person's linked chats, newest first."""
        ...

    async def unlink_chat(self, chat_id: int, *, person_id: str | None = None) -> bool:
        """Unlink ``chat_id`` (only from ``person_id`` when given); False when it was not linked."""
        ...


class PersonTokens(Protocol):
    """People's API tokens, kept as hashes."""

    async def add_token(self, token: PersonToken, *, limit: int = MAX_TOKENS_PER_PERSON) -> bool:
        """Store a new token unless its person holds ``limit`` already (False, nothing stored).

        The count and the insert are one write: of adds racing past the
        limit, in any number of processes, only those that fit are stored.
        A hash or id already stored raises ``Conflict``.
        """
        ...

    async def person_for_token(self, token_hash: str) -> Person | None:
        """Whose token hashes to ``token_hash``: an active person, or None (unknown, disabled)."""
        ...

    async def list_tokens(self, person_id: str) -> list[PersonToken]:
        """The person's tokens, newest first."""
        ...

    async def revoke_token(self, person_id: str, token_id: str) -> bool:
        """Delete one of the person's tokens; False when it is not theirs or not there."""
        ...


class PersonSessions(Protocol):
    """The one kind of server-side session: a person's or the owner's (ADR 17, ADR 76)."""

    async def create_person_session(self, session: PersonSession) -> None:
        """Store a new session; a stored ``id_hash`` raises ``Conflict``."""
        ...

    async def get_person_session(self, id_hash: str) -> PersonSession | None:
        """The session stored under ``id_hash`` of an active person, expired or not; else None."""
        ...

    async def save_person_session(self, session: PersonSession) -> bool:
        """Write ``last_seen``, ``expires`` and ``flash``; False, writing nothing, when gone."""
        ...

    async def delete_person_session(self, id_hash: str) -> None:
        """End one session; nothing happens when it does not exist."""
        ...

    async def delete_expired_person_sessions(self, *, now: datetime) -> int:
        """Remove the sessions whose ``expires`` is not after ``now``; how many there were."""
        ...


class PeopleStore(Invitations, Accounts, PersonTokens, PersonSessions, ChatLinks, Protocol):
    """Every role of the people's tables: what an adapter implements and the app opens."""

    async def close(self) -> None:
        """Release what the store holds; a store on a shared database leaves it open."""
        ...


class BudgetStore(Protocol):
    """Request budgets shared by every process on the database (ADR 29)."""

    async def take(
        self, name: str, *, capacity: int, per: timedelta, holder: str | None = None
    ) -> timedelta | None:
        """Take one token of budget ``name`` (``capacity`` per ``per``) now; None when taken.

        "Now" is the store's own clock, so hosts whose clocks disagree share one refill.

        Otherwise nothing is taken and the answer is how long until a token
        is back. No window of length ``per`` ever sees more than ``capacity``
        tokens taken, whichever process takes them.

        A ``holder`` (who asks: a recording or part that comes back when told)
        told to wait is promised the next token and keeps a turn, stored
        with the budget (``budgets.take_turn``, ADR 61): asked again before
        it, the answer is the rest of the wait; at or after it, the holder
        is admitted without taking again. Turns follow one another one
        refill apart, and no take overtakes a promised one.
        """
        ...

    async def levels(self) -> dict[str, float]:
        """Tokens each budget used so far holds now (the store's clock), by name."""
        ...


class UsageStore(Protocol):
    """Seconds sent per payer per UTC day, shared by every process on the database (ADR 59)."""

    async def charge(self, charge: Charge, *, limit: int) -> QuotaDecision:
        """Count ``charge`` on the store's today unless ``policy.quota_decision`` refuses it.

        The check and the count are one transaction that payers' other
        charges wait for, so racing intakes never both take the last
        seconds. A job already charged is counted nothing more and allowed.
        """
        ...

    async def settle(self, job_id: str, seconds: float) -> None:
        """Set the job's charge to the measured ``seconds``; nothing when it was never charged."""
        ...

    async def uncharge(self, job_id: str) -> None:
        """Take the job's charge back: its intake stored nothing (a replay, a failed insert)."""
        ...

    async def usage(self, payers: Sequence[str]) -> dict[str, Usage]:
        """Each payer's seconds today and this month so far, on the store's clock."""
        ...


class ConditionStore(Protocol):
    """The service's own faults that workers ran into, seen by every process (reference: Limits)."""

    async def report(self, code: str, *, scope: str, message: str) -> None:
        """Note that ``code`` holds in ``scope`` now (store's clock); keeps ``since`` if it held."""
        ...

    async def clear(self, codes: frozenset[str], *, scopes: frozenset[str]) -> None:
        """Forget ``codes`` in each of ``scopes``: a step that needed them just succeeded."""
        ...

    async def current(self, *, scopes: frozenset[str], within: timedelta) -> list[Condition]:
        """Conditions in ``scopes`` seen less than ``within`` ago (store's clock), by code."""
        ...


class ChatStore(Protocol):
    """What the Telegram intake keeps in the job database, seen by every process (ADR 53)."""

    async def take_poll_lease(self, holder: str, *, lease: timedelta) -> PollLease | None:
        """Hold the one polling lease for ``lease`` from now (store's clock); None while held.

        Free means never taken, released, or expired; of processes asking at
        once one gets it. Each taking moves the fence on.
        """
        ...

    async def renew_poll_lease(self, held: PollLease, *, lease: timedelta) -> bool:
        """Hold ``held`` ``lease`` longer from now; False when someone else took it since."""
        ...

    async def release_poll_lease(self, held: PollLease) -> None:
        """Let the lease go at once, if ``held`` still holds it: another poller may take it."""
        ...

    async def chat_settings(self, chat_id: int) -> ChatSettings:
        """The chat's settings; the defaults (``auto`` language and mode) for a chat never set."""
        ...

    async def set_chat_language(self, chat_id: int, language: str | None) -> ChatSettings:
        """Keep the chat's language (None: ``auto``), its mode untouched; the settings now.

        One statement per setting: two processes changing two settings of
        one chat at once both keep theirs.
        """
        ...

    async def set_chat_mode(self, chat_id: int, mode: ChatMode) -> ChatSettings:
        """Keep the chat's mode, its language untouched; the settings now."""
        ...

    async def set_chat_summary(self, chat_id: int, summary: bool | None) -> ChatSettings:
        """Keep the chat's summary choice (None: the service's), the rest untouched."""
        ...


class WakeupFeed(Protocol):
    """Wake-ups from other processes: states where work just became ready elsewhere."""

    async def listen(
        self,
        notify: Callable[[State], None],
        *,
        job_changed: Callable[[str], None] | None = None,
    ) -> None:
        """Call ``notify(state)`` for each wake-up until cancelled; reconnects, never raises.

        With ``job_changed``, also ``job_changed(job_id)`` each time a job ended or
        a part of it was recognised elsewhere (a ``/v1`` answer waits on it), and
        ``job_changed("")`` after a reconnect: every waiter looks again.
        """
        ...


class FileStore(Protocol):
    """Whole files under their stored names ``<id><extension>``."""

    @property
    def location(self) -> Location:
        """Where this store keeps bytes; copied into every record it makes."""
        ...

    def staging(self, extension: str) -> AbstractAsyncContextManager[Path]:
        """A fresh empty private file in the store's staging dir; removed on exit if still there.

        The staging dir is the store's own (a constructor argument), so a
        process that starts on it can remove what a killed one left there.
        """
        ...

    def staging_folder(self) -> AbstractAsyncContextManager[Path]:
        """A new empty private folder (0700) beside the staging files, for a link's download.

        Whatever is in it on exit is removed with it, however the block ends
        (SPEC §28: a refused or cancelled fetch leaves nothing).
        """
        ...

    async def put(
        self, file_id: str, extension: str, source: Path, *, now: datetime, move: bool = False
    ) -> FileRecord:
        """Store ``source`` as ``<file_id><extension>``, whole or not at all.

        Replaces a file with the same id. With ``move`` the source is taken
        (renamed when it can be) and is gone afterwards; without, it is copied.
        A missing or unreadable source raises ``StorageUnavailable``.
        """
        ...

    def working_copy(self, record: FileRecord) -> AbstractAsyncContextManager[Path]:
        """A path to the file's bytes on local disk, valid inside the block; read-only.

        The path ends with the record's extension, so tools that look at it
        (ffmpeg) see the kind of file.

        Nothing the store made for it remains after the block, whatever way it
        exits. Raises ``FileNotFound`` when the bytes are gone.
        """
        ...

    def open(self, record: FileRecord) -> AsyncIterator[bytes]:
        """The file's bytes in chunks; raises ``FileNotFound`` when they are gone."""
        ...

    def open_range(self, record: FileRecord, *, start: int, stop: int) -> AsyncIterator[bytes]:
        """The file's bytes from offset ``start`` up to, not including, ``stop``, in chunks.

        For HTTP Range (a player seeking in a long recording): only those bytes
        are read, never the whole file. ``0 <= start < stop`` (``ValueError``
        otherwise); fewer bytes come when the file ends before ``stop``, none
        when it ends before ``start``. Raises ``FileNotFound`` when the bytes
        are gone.
        """
        ...

    async def delete(self, record: FileRecord) -> None:
        """Remove the file's bytes; nothing happens when they are already gone."""
        ...

    async def delete_many(self, records: Sequence[FileRecord]) -> None:
        """Remove the bytes of every record in as few calls as the store allows (retention, ADR 36).

        Bytes already gone are fine. A failure raises; records before it may
        be gone, and deleting them again is harmless.
        """
        ...

    async def exists(self, record: FileRecord) -> bool:
        """True when the file's bytes are in the store."""
        ...


class DurationProbe(Protocol):
    """Reads how long a recording says it lasts, cheaply, before anything decodes it."""

    async def declared_duration(self, path: Path) -> float | None:
        """Seconds the container's header declares; None when it does not say or cannot be read.

        Never decodes and never raises for a bad file: the answer is the
        sender's claim, only used to pick a lane (ADR 27).
        """
        ...


class DurationMeter(Protocol):
    """Counts how long a staged recording decodes to, for its charge against a quota (ADR 67)."""

    async def measure(self, path: Path, *, up_to: float, within: timedelta) -> Measured:
        """Decode ``path`` and count its seconds, stopping past ``up_to`` or after ``within``.

        Counted in decoded samples, as the converter counts, never from the
        container's header or timestamps. Stopped early, ``whole`` is False.
        Raises ``PermanentError`` when the converter would refuse the
        recording (not media, no audio, past the decoded-size limits) and
        ``TransientError`` when it cannot run now.
        """
        ...


#: Called with the seconds of audio handled so far: converted, or recognised (ADR 51).
ProgressCallback = Callable[[float], None]


@attrs.frozen(kw_only=True)
class Silence:
    """A stretch of a recording with no sound above the converter's noise floor, in seconds."""

    start: float
    end: float


class Converter(Protocol):
    """Turns any recording into mono audio the recognizer takes, and cuts that audio into parts."""

    @property
    def output_extension(self) -> str:
        """The extension of what ``convert`` writes, with its dot."""
        ...

    async def convert(
        self,
        source: Path,
        target: Path,
        *,
        on_progress: ProgressCallback | None = None,
        background: bool = False,
    ) -> float:
        """Write ``source``'s first audio stream to ``target``; return its duration in seconds.

        ``background``: a long recording's conversion, which may run at a
        lower CPU priority than a short one's, so that a voice note converted
        meanwhile is not slowed by it (ADR 63); an adapter may ignore it.

        Raises ``UnreadableMedia`` when the input has no audio, cannot be
        decoded or is not a real audio or video container,
        ``RecordingTooLong`` when it decodes to more audio than the
        converter's limits allow, ``TransientError`` for anything that may
        pass on a retry.
        """
        ...

    async def find_silences(self, audio: Path, *, start: float, end: float) -> tuple[Silence, ...]:
        """The silences in ``[start, end]`` of ``audio`` (this converter's output), in order.

        Times count from the start of ``audio``; a silence crossing the range's
        edge is clipped to it. Only silences of the converter's minimum length
        count. Raises ``TransientError`` when the audio cannot be read.
        """
        ...

    async def cut(self, audio: Path, target: Path, *, start: float, end: float) -> float:
        """Write ``[start, end)`` of ``audio`` (this converter's output) to ``target``, same format.

        Returns the part's duration in seconds, never more than ``end - start``
        by more than one codec frame. Raises ``ValueError`` for an empty range,
        ``TransientError`` when the audio cannot be read or the part written.
        """
        ...


@attrs.frozen(kw_only=True)
class Pending:
    """The recognition is still running."""

    #: How long the recognizer asks us to wait; None for the default interval.
    retry_after: timedelta | None = None


@attrs.frozen(kw_only=True)
class Recognized:
    """The recognition finished with a transcript."""

    text: str
    words: tuple[Word, ...] = ()
    #: The language heard (ISO 639-1), when the recognizer detects or knows it.
    language: str | None = None
    #: A recognizer that labels speakers itself may give each label's voice print (SPEC §25).
    prints: Mapping[str, Print] = attrs.field(factory=dict, repr=False)


@attrs.frozen(kw_only=True)
class Rejected:
    """The recognition finished without a transcript, for good."""

    reason: str


CheckResult = Pending | Recognized | Rejected


@attrs.frozen(kw_only=True)
class RecognizerLimits:
    """What one recognition accepts; None is no limit. A longer recording is split (ADR 26)."""

    #: Longest audio one operation takes, in seconds.
    max_seconds: float | None = None
    #: Largest audio file one operation takes, in bytes.
    max_bytes: int | None = None
    #: Audio of at most this many seconds and ``direct_bytes`` bytes is read by the recognizer
    #: from the local store (a synchronous API): no copy for it first (ADR 29). None: never.
    direct_seconds: float | None = None
    direct_bytes: int | None = None

    def __attrs_post_init__(self) -> None:
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise ValueError("max_seconds must be positive")
        if self.max_bytes is not None and self.max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        if (self.direct_seconds is None) != (self.direct_bytes is None):
            raise ValueError("direct_seconds and direct_bytes go together")

    def takes_directly(self, *, seconds: float | None, size: int) -> bool:
        """True when audio of ``seconds`` and ``size`` goes to the recognizer with no copy first."""
        if self.direct_seconds is None or self.direct_bytes is None or seconds is None:
            return False
        return seconds <= self.direct_seconds and size <= self.direct_bytes

    def refusal(self, *, seconds: float | None, size: int) -> str | None:
        """Why audio of ``seconds`` (None: unknown) and ``size`` bytes is refused; None if it fits.

        The reason names the limit, so a sender learns why.
        """
        if self.max_bytes is not None and size > self.max_bytes:
            return f"the audio is larger than the recognizer's limit of {self.max_bytes} bytes"
        if self.max_seconds is not None and seconds is not None and seconds > self.max_seconds:
            return (
                f"the audio is longer than the recognizer's limit of {self.max_seconds:g} seconds"
            )
        return None


#: A recognizer that takes audio of any length and size.
NO_LIMITS = RecognizerLimits()


@attrs.frozen(kw_only=True)
class Started:
    """A recognition was started, or, for a recognizer that works while it starts, done."""

    operation_id: str
    #: Wait before the first check, when the recognizer knows better than the default.
    advised_delay: timedelta | None = None
    #: The outcome when the recognizer finished within ``start`` (a local engine, a
    #: synchronous API): the job ends at once and is never checked. None: check it.
    outcome: Recognized | Rejected | None = None


class Recognizer(Protocol):
    """A speech recognizer with long-running operations."""

    @property
    def limits(self) -> RecognizerLimits:
        """What one operation accepts; ``NO_LIMITS`` when anything goes."""
        ...

    @property
    def abilities(self) -> Abilities:
        """The languages it knows, and whether it translates and reads a prompt (SPEC §18)."""
        ...

    async def start(
        self,
        audio: FileRecord,
        *,
        duration: float | None,
        request: RecognitionRequest = DEFAULT_REQUEST,
        on_progress: ProgressCallback | None = None,
    ) -> Started:
        """Recognise ``audio`` as ``request`` asks; raises ``TransientError``, ``PermanentError``.

        ``request`` was checked against ``abilities`` at intake; a prompt the
        recognizer cannot read is ignored. A recognizer that does the work
        here returns its outcome with ``Started``; it must then honour
        cancellation while it works, and may call ``on_progress`` with the
        seconds of audio recognised so far, on the event loop's thread, as
        often as it likes (the caller throttles; ADR 51). One that only
        starts an operation never calls it.
        """
        ...

    async def check(self, operation_id: str) -> CheckResult:
        """Ask how the operation is going; raises ``TransientError`` when it cannot tell."""
        ...


class Diarizer(Protocol):
    """Tells who speaks when in a recording (SPEC §18, ADR 45)."""

    async def diarize(self, audio: Path, *, speakers: int | None) -> Diarization:
        """The turns of each voice in ``audio`` (a converter's output), and their prints.

        ``speakers`` is how many voices there are (1 to ``MAX_SPEAKERS``), or
        None to find out. Turn labels are the diarizer's own: the core numbers
        them. No speech gives no turns. Runs off the event loop and honours
        cancellation; raises ``TransientError`` when it cannot work now and
        ``PermanentError`` when the audio cannot be read.
        """
        ...


class VoiceStore(Protocol):
    """Each owner's remembered voices with their prints (SPEC §25, ADR 72).

    Every method takes the owner: a voice is never read, changed or matched
    for anyone else. A voice's print is the sum of its samples' unit prints
    (``voices.combined``); only ``voice_prints`` reads it back, for matching.
    """

    async def add_voice(self, voice: Voice, vector: Print) -> None:
        """Keep ``voice`` (``samples`` 1) with ``vector``, its first sample's print."""
        ...

    async def add_sample(self, owner: str, voice_id: str, vector: Print) -> Voice | None:
        """Add ``vector`` to the owner's voice: ``samples`` + 1, in one transaction.

        None when the owner has no such voice. Concurrent samples each count.
        """
        ...

    async def list_voices(self, owner: str) -> list[Voice]:
        """The owner's voices, oldest first."""
        ...

    async def rename_voice(self, owner: str, voice_id: str, name: str) -> Voice | None:
        """The owner's voice with its new ``name``; None when the owner has no such voice."""
        ...

    async def delete_voice(self, owner: str, voice_id: str) -> bool:
        """Delete the owner's voice and its print; False when there was none."""
        ...

    async def voice_prints(self, owner: str) -> list[tuple[Voice, Print]]:
        """The owner's voices with their prints (sums, not normalised), oldest first."""
        ...

    async def forget_owner(self, owner: str) -> int:
        """Delete every voice of ``owner`` (a person deleted); how many went."""
        ...


@attrs.frozen(kw_only=True)
class Standing:
    """Where a job stands, for the one status message a chat keeps of it (SPEC §21, ADR 51)."""

    #: The chat message that shows the job's status, to edit; None: none was sent yet.
    message_id: int | None = None
    #: Jobs waiting ahead of it while it waits for a loop; None while a step runs or it ended.
    queue_position: int | None = None
    #: Parts recognised, and in all, for a recording split into parts; None otherwise.
    parts_done: int | None = None
    parts_total: int | None = None
    #: Whole percent of the audio recognised, and the seconds left as last estimated.
    percent: int | None = None
    eta_seconds: float | None = None


class Notifier(Protocol):
    """Tells a job's origin what became of its recording."""

    async def notify(
        self, job: Job, event: Event, *, standing: Standing | None = None
    ) -> int | None:
        """Tell ``job.origin`` about ``event``; origins it cannot reach are ignored (None).

        With ``standing`` the origin keeps one status message of the job
        (SPEC §21): ``accepted`` sends it, ``progress`` edits it to where the
        job stands, an end edits it into the outcome (a long transcript's
        first message), each sending a new one when ``standing.message_id``
        is None or the message is gone. The answer is that message's id, or
        None when the notifier keeps none. Without ``standing``, ``progress``
        is ignored and every other notice is a message of its own.
        """
        ...

    async def send_summary(self, job: Job, summary: Summary) -> None:
        """Send ``job``'s done or failed summary to its origin (ADR 92); others are ignored."""
        ...


class WebhookSender(Protocol):
    """POSTs a job's end to its ``callback_url``, signed (ADR 35)."""

    async def check(self, url: str) -> None:
        """Refuse ``url`` as a callback with ``CallbackRefused`` (its reason), or return.

        Checks the URL's form and every address its host resolves to now.
        """
        ...

    async def send(self, url: str, body: bytes) -> None:
        """POST ``body`` (JSON) to ``url`` with the signature header; return on a 2xx.

        Checks the address again and connects only to the one checked. Raises
        ``CallbackRefused`` when the URL or its address is refused, and
        ``ReceiverUnavailable`` for any other answer, a timeout or a network error.
        """
        ...


@attrs.frozen(kw_only=True)
class Wishes:
    """What was asked for a recording, as its door read it; ``take_in`` judges it."""

    #: ``auto`` or an ISO 639-1 code, as sent; None: auto.
    language: str | None = None
    #: Words that prime the recognizer, as sent; None: none.
    prompt: str | None = None
    #: ``transcribe`` or ``translate``, as sent; None: transcribe.
    task: str | None = None
    #: Speakers wanted as the ``speakers`` field spells them (off, auto, 1 to 10); None: off.
    speakers: str | None = None
    #: Where to report the job's end (ADR 35), unchecked; may carry a secret: never logged.
    callback_url: str | None = attrs.field(default=None, repr=False)
    #: The recording's title as sent (``titles.clean_title`` judges it); None: none. Never logged.
    title: str | None = attrs.field(default=None, repr=False)
    #: Summarise the recording once done (SPEC §27); None: as ``[llm] auto_summary`` says.
    #: Without ``[llm]`` nothing is summarised, whatever is asked.
    summary: bool | None = None
    #: ``language`` is a standing setting (a chat's ``/language``), not this recording's ask:
    #: one the recognizer no longer has falls back to auto instead of refusing the recording.
    standing_language: bool = False


@attrs.frozen(kw_only=True)
class Staged:
    """A recording its door received whole into a staging file, with what was asked with it.

    Or a link to it (SPEC §28): ``url`` set and ``path`` None; the job's
    ``fetch`` step downloads it.
    """

    #: The staging file; ``submit`` moves it into the store. None for a link.
    path: Path | None
    #: ``naming.extension_of`` the sender's file name: the only part of it kept.
    extension: str
    #: SHA-256 of the bytes, hex, when the door computed it (an upload with a dedup key);
    #: for a link, of the link (``naming.link_digest``).
    digest: str | None = None
    wishes: Wishes = attrs.field(factory=Wishes)
    #: The http(s) link to fetch the recording from, unchecked; may carry a secret: never logged.
    url: str | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class Proof:
    """What a door shows of a recording sent again under a known dedup key."""

    #: SHA-256 of the bytes sent now; None: not read (the key alone stands for the file).
    digest: str | None = None
    #: What was asked with them, when the door read it (its answer needs it): judged as well.
    wishes: Wishes | None = None

    @property
    def read(self) -> bool:
        """True when the door read the bytes sent now (which can take hours)."""
        return self.digest is not None or self.wishes is not None


@attrs.frozen(kw_only=True)
class Sender:
    """Who a recording is from: the owner its job is stored with, and whose day it counts on."""

    #: ``Job.owner`` (a token's hash, ``person:<id>``); None: nobody's (an open API, a chat).
    owner: str | None = None
    #: Whose daily seconds it counts against (ADR 59); None: the owner's.
    payer: str | None = None


class Door(Protocol):
    """A way in (ADR 74): where a recording's bytes and sender come from; it decides nothing."""

    async def sender(self) -> Sender:
        """Who sends it; asked once its dedup key has found no first job."""
        ...

    async def sender_again(self) -> Sender:
        """Who sends it, asked again once the bytes are in, before anything is charged or stored.

        An upload can run for hours (SPEC §29): the door's refusal when its
        sender may no longer send (a token revoked, a person disabled, a
        session ended), or who sends it now (a chat unlinked meanwhile).
        """
        ...

    async def proof(self, first: Job) -> Proof:
        """The evidence that this is ``first``'s recording again (``Proof()``: none read)."""
        ...

    def staged(self) -> AbstractAsyncContextManager[Staged]:
        """The recording received whole into a staging file, inside the block.

        Raises the door's own errors for bytes it cannot take (too large,
        malformed); the staging file never outlives the block.
        """
        ...


@attrs.frozen(kw_only=True)
class FetchLimits:
    """What one fetch may bring in (SPEC §28): checked against what is declared, then counted."""

    #: Largest file, in bytes (``[import] max_bytes``).
    max_bytes: int
    #: Longest recording, in seconds (§17's recording limit); None is no limit.
    max_seconds: float | None = None


@attrs.frozen(kw_only=True)
class Fetched:
    """A link's recording, downloaded into the fetch's directory."""

    path: Path
    #: The page's or the media's title, as the site gives it; None when it gives none.
    title: str | None = None
    #: Seconds the site declares; None when it does not say.
    duration: float | None = None


#: Called with the bytes fetched so far and the total when known (SPEC §28 ``fetch``).
FetchProgress = Callable[[int, int | None], None]


class MediaFetcher(Protocol):
    """Brings in the recording behind a link: a direct media file or a page with media on it."""

    async def check(self, url: str) -> None:
        """Refuse at once what can be refused without downloading (SPEC §28: 400 at intake).

        Raises ``FetchRefused`` for a scheme other than http(s), a host whose
        addresses are not public (unless the adapter allows private ones), or
        a link that names a playlist; ``FetchUnavailable`` when the host's
        name cannot be resolved now. Never downloads media.
        """
        ...

    async def fetch(
        self, url: str, into: Path, *, limits: FetchLimits, on_progress: FetchProgress
    ) -> Fetched:
        """Download ``url``'s one recording (audio only where the site offers it) into ``into``.

        ``into`` is an empty directory the caller owns and removes. Every
        connection the fetch makes (redirects, manifests, segments, the
        extractor's own requests) goes only to public addresses. Raises
        ``FetchRefused`` (permanent: not allowed, over ``limits`` by the
        declared or the counted size or duration, a playlist, no media) or
        ``FetchUnavailable`` (transient). Cancelling the awaiting task stops
        the download promptly and leaves nothing running.
        """
        ...
