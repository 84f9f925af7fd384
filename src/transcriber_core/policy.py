"""The settings tables and the pure decisions made from them: retries, leases, ceilings, logins."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from transcriber_core.entities import (
    EVERYWHERE,
    Delivery,
    Job,
    LoginFailures,
    Progress,
    SessionLogin,
    State,
)
from transcriber_core.errors import (
    DatabaseDown,
    DiskFull,
    RecognizerCredentialsRejected,
    RecognizerDown,
    RecordingTooLong,
    ServiceCondition,
    StorageBucketMissing,
    StorageCredentialsRejected,
    StorageDown,
)
from transcriber_core.people import is_person_owner
from transcriber_core.usage import Measured, next_utc_midnight


@attrs.frozen(kw_only=True)
class Settings:
    """The settings table (reference) in one place; names are a contract, values may change."""

    #: Acquires a job may take before the next acquirer marks it dead.
    max_attempts: int = 5
    #: First retry pause; doubles at each further attempt.
    retry_base: timedelta = timedelta(seconds=1)
    #: Longest retry pause.
    retry_cap: timedelta = timedelta(minutes=5)
    #: How long a worker may stay silent before its job is handed out again.
    lease: timedelta = timedelta(minutes=2)
    #: How often a running step renews its lease.
    lease_renewal: timedelta = timedelta(seconds=30)
    #: How long one fetch step (a link's download, SPEC §28) may run.
    fetch_ceiling: timedelta = timedelta(hours=2)
    #: How long one convert step may run.
    convert_ceiling: timedelta = timedelta(hours=8)
    #: How long one recognize step (upload and start) may run.
    recognize_ceiling: timedelta = timedelta(hours=2)
    #: How long one check step may run.
    check_ceiling: timedelta = timedelta(hours=1)
    #: Wait before the first check, unless the recognizer advises its own.
    first_check_delay: timedelta = timedelta(seconds=10)
    #: Wait between checks, unless the recognizer asks for more.
    check_interval: timedelta = timedelta(seconds=5)
    #: Largest recording accepted, in bytes.
    max_record_bytes: int = 8 * 1024**3
    #: An upload that sends no byte for this long is aborted.
    upload_inactivity_timeout: timedelta = timedelta(minutes=5)
    #: An upload whose body has not all arrived this long after it began is aborted (SPEC §29).
    upload_deadline: timedelta = timedelta(hours=6)
    #: Fallback poll of the queue when nothing woke the workers.
    idle_poll_interval: timedelta = timedelta(seconds=1)
    #: First wait after a failed delivery (webhook, notice); doubles after each (ADR 35).
    delivery_retry_base: timedelta = timedelta(seconds=1)
    #: Longest wait between two tries of a delivery, even when the receiver asks for more.
    delivery_retry_cap: timedelta = timedelta(minutes=10)
    #: A delivery still failing this long after it was written is given up (logged, counted).
    delivery_window: timedelta = timedelta(hours=24)
    #: Longest one try of a delivery may take (and at most half the lease: ``delivery_limit``).
    delivery_ceiling: timedelta = timedelta(seconds=60)

    #: How long a job waits when the service itself cannot work (disk full, credentials refused).
    condition_pause: timedelta = timedelta(seconds=30)
    #: Longest wait for a condition, even when the vendor asks for more.
    condition_pause_cap: timedelta = timedelta(minutes=5)
    #: A condition no worker has run into for this long no longer holds.
    condition_max_age: timedelta = timedelta(minutes=5)

    #: A recording of at most this many bytes may ride the express lane (ADR 27).
    express_bytes: int = 20 * 1024**2
    #: ... and only while it is known to last no longer than this.
    express_duration: timedelta = timedelta(minutes=10)

    #: A job's recording and derived files are deleted this long after it ended (ADR 36).
    recordings_kept: timedelta = timedelta(days=7)
    #: The job itself and its transcript are deleted this long after it ended.
    jobs_kept: timedelta = timedelta(days=30)
    #: Ask for a summary of every recording once it is done (``[llm] auto_summary``, SPEC §27).
    auto_summary: bool = False
    #: How long building one summary (all its model requests) may run.
    summary_ceiling: timedelta = timedelta(minutes=30)
    #: How often each process offers to sweep; the sweep lease lasts as long, so one sweeps.
    sweep_interval: timedelta = timedelta(minutes=30)
    #: Jobs one sweep transaction handles: bounds memory and how long it holds the write lock.
    sweep_batch: int = 500

    #: First wait before reconnecting a lost wake-up listener; doubles at each failed try.
    reconnect_base: timedelta = timedelta(milliseconds=100)
    #: Longest wait between two tries to reconnect it (the idle poll covers the gap).
    reconnect_cap: timedelta = timedelta(seconds=5)

    #: Seconds of recordings one payer may send per UTC day (SPEC §20); 0: no quota.
    seconds_per_day: int = 0
    #: Longest the intake decodes a recording to count it for a quota (ADR 67); past it the
    #: recording is charged the most it could last, and settled when it is converted.
    measure_ceiling: timedelta = timedelta(seconds=30)

    #: The cosine similarity from which a recording's speaker is taken for a remembered voice
    #: (SPEC §25, ADR 72): measured on real voices with CAM++ prints (docs/benchmarks.md).
    voice_match: float = 0.5

    def __attrs_post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.lease_renewal >= self.lease:
            raise ValueError("lease_renewal must be shorter than lease")
        if self.delivery_retry_base <= timedelta(0) or self.delivery_window <= timedelta(0):
            raise ValueError("delivery_retry_base and delivery_window must be positive")
        if self.condition_pause <= timedelta(0):
            raise ValueError("condition_pause must be positive")
        if self.condition_max_age <= self.condition_pause:
            # A condition that still holds is seen at every pause; it must not age out in between.
            raise ValueError("condition_max_age must be longer than condition_pause")
        if self.express_bytes <= 0 or self.express_duration <= timedelta(0):
            raise ValueError("express_bytes and express_duration must be positive")
        if self.seconds_per_day < 0:
            raise ValueError("seconds_per_day must be 0 (no quota) or positive")
        if self.measure_ceiling <= timedelta(0):
            raise ValueError("measure_ceiling must be positive")
        if self.recordings_kept <= timedelta(0) or self.jobs_kept < self.recordings_kept:
            raise ValueError("recordings_kept must be positive and jobs_kept no shorter")
        if self.sweep_interval <= timedelta(0) or self.sweep_batch < 1:
            raise ValueError("sweep_interval and sweep_batch must be positive")
        if not -1.0 <= self.voice_match <= 1.0:
            raise ValueError("voice_match must be a cosine similarity, from -1 to 1")

    def ceiling(self, state: State) -> timedelta:
        """How long the step of ``state`` may run before the attempt fails."""
        ceilings = {
            State.FETCH: self.fetch_ceiling,
            State.CONVERT: self.convert_ceiling,
            State.RECOGNIZE: self.recognize_ceiling,
            State.CHECK: self.check_ceiling,
        }
        return ceilings[state]


DEFAULT_SETTINGS = Settings()


@attrs.frozen(kw_only=True)
class DecodeLimits:
    """How much audio one recording may decode to (reference: Limits, "Decoded size").

    A few kilobytes can declare hours of audio (8-bit PCM at 1 Hz), and
    converting them costs minutes of CPU; no real codec needs fewer than
    ``min_bytes_per_second`` bytes of file per second of sound.
    """

    #: Longest decoded audio accepted from one recording, whatever its size.
    max_duration: timedelta = timedelta(hours=8)
    #: Fewest bytes of file per second of decoded audio; a file with fewer is refused.
    min_bytes_per_second: float = 100.0

    def __attrs_post_init__(self) -> None:
        if self.max_duration <= timedelta(0):
            raise ValueError("max_duration must be positive")
        if self.min_bytes_per_second <= 0:
            raise ValueError("min_bytes_per_second must be positive")

    def allowed_seconds(self, size: int | None) -> float:
        """Seconds of audio a file of ``size`` bytes may decode to; ``None`` is a size unknown."""
        longest = self.max_duration.total_seconds()
        if size is None:
            return longest
        return min(longest, size / self.min_bytes_per_second)

    def refusal(self, seconds: float, size: int | None) -> RecordingTooLong | None:
        """The error that refuses ``seconds`` of audio from ``size`` bytes; None if allowed.

        It names the limit that was passed, so the sender learns why.
        """
        longest = self.max_duration.total_seconds()
        if seconds > longest:
            return RecordingTooLong(
                f"the recording is longer than the limit of {longest:g} seconds"
            )
        if seconds > self.allowed_seconds(size):
            return RecordingTooLong(
                "the recording decodes to more audio than its size allows"
                f" (the limit is {self.min_bytes_per_second:g} bytes per second of audio)"
            )
        return None


DEFAULT_DECODE_LIMITS = DecodeLimits()


def is_short(size: int, duration: float | None, settings: Settings = DEFAULT_SETTINGS) -> bool:
    """True when a recording of ``size`` bytes and ``duration`` seconds rides the express lane.

    An unknown duration does not keep a small recording out: the convert step
    measures it and takes the mark away from one that proves long (ADR 27).
    """
    if size > settings.express_bytes:
        return False
    return duration is None or duration <= settings.express_duration.total_seconds()


def is_express_loop(index: int, loops: int) -> bool:
    """True for the loop (0-based ``index`` of a step's ``loops``) that serves only short jobs.

    One loop of a step with two or more; a lone loop takes every job, so
    nothing waits for a lane that does not run.
    """
    return loops >= 2 and index == 0


def general_loops(loops: int) -> int:
    """How many of a step's ``loops`` take any job: all but the express loop (ADR 27).

    What the CPUs are shared among (ADR 89): the express loop serves short
    jobs now and then, and a voice note may borrow a CPU for its seconds.
    """
    return loops - 1 if is_express_loop(0, loops) else loops


def retry_pause(attempts: int, settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """The pause after the ``attempts``-th failed attempt: ``base * 2^(attempts-1)``, capped."""
    exponent = max(attempts, 1) - 1
    # Past 2^20 the cap has long won; stop before the multiplication overflows.
    if exponent >= 20:
        return settings.retry_cap
    return min(settings.retry_base * (1 << exponent), settings.retry_cap)


def delivery_pause(
    delivery: Delivery, asked: timedelta | None, settings: Settings = DEFAULT_SETTINGS
) -> timedelta | None:
    """The wait before the next try of a failed ``delivery``; None: give it up (ADR 35).

    ``delivery_retry_base * 2^(attempts-1)``, or the receiver's own ask
    (``asked``, e.g. Telegram's ``retry_after``) when it gives one, capped at
    ``delivery_retry_cap``. A delivery written ``delivery_window`` or longer
    before this try was taken is given up. Its age is measured between two
    times of the repository's own clock, so no host's clock skews it.
    """
    if delivery.acquire_time is None:
        raise ValueError("only a leased delivery can be retried")
    if delivery.acquire_time - delivery.created >= settings.delivery_window:
        return None
    if asked is not None and asked > timedelta(0):
        return min(asked, settings.delivery_retry_cap)
    exponent = max(delivery.attempts, 1) - 1
    # Past 2^20 the cap has long won; stop before the multiplication overflows.
    if exponent >= 20:
        return settings.delivery_retry_cap
    return min(settings.delivery_retry_base * (1 << exponent), settings.delivery_retry_cap)


def delivery_limit(settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """How long one try of a delivery may run: its ceiling, and never past half the lease.

    A delivery's lease is not renewed: a try that outlived it could be taken
    and sent again by another loop while it still runs.
    """
    return min(settings.delivery_ceiling, settings.lease / 2)


def is_exhausted(attempts: int, settings: Settings = DEFAULT_SETTINGS) -> bool:
    """True when a job acquired for the ``attempts``-th time must be marked dead."""
    return attempts > settings.max_attempts


def next_check_delay(advised: timedelta | None, settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """The wait before the next check: the recognizer may ask for more, never for less."""
    if advised is None:
        return settings.check_interval
    return max(advised, settings.check_interval)


def parts_wait(settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """How long a split job waits in ``check`` before it looks at its parts itself (ADR 52).

    The last part finished makes the job due at once, in its own save; this
    wait is the fallback only, so a lease is plenty: a part lost with its
    worker is taken again after a lease anyway.
    """
    return settings.lease


def first_check_delay(
    advised: timedelta | None, settings: Settings = DEFAULT_SETTINGS
) -> timedelta:
    """The wait before the first check: the recognizer's advice wins when it gives one."""
    return settings.first_check_delay if advised is None else advised


@attrs.frozen(kw_only=True)
class AccessSettings:
    """How long an owner's session lives and how the login back-off grows (ADR 17)."""

    #: A session unused this long is over.
    session_idle: timedelta = timedelta(hours=1)
    #: A session is over this long after the login, however busy.
    session_lifetime: timedelta = timedelta(hours=24)
    #: ``last_seen`` is written at most this often, to spare a write per page.
    session_touch: timedelta = timedelta(minutes=1)
    #: The wait after a client's first wrong password; doubles with each further one.
    login_wait_base: timedelta = timedelta(seconds=1)
    #: The longest wait a client is ever made to take before its next try.
    login_wait_cap: timedelta = timedelta(minutes=1)
    #: Failures older than this no longer count: the client starts afresh.
    login_forget: timedelta = timedelta(hours=1)

    def __attrs_post_init__(self) -> None:
        if self.session_touch >= self.session_idle:
            raise ValueError("session_touch must be shorter than session_idle")
        if self.login_wait_cap < self.login_wait_base:
            raise ValueError("login_wait_cap must not be shorter than login_wait_base")
        if self.login_forget <= self.login_wait_cap:
            raise ValueError("login_forget must be longer than login_wait_cap")


DEFAULT_ACCESS = AccessSettings()


def session_expiry(
    created: datetime, last_seen: datetime, settings: AccessSettings = DEFAULT_ACCESS
) -> datetime:
    """When a session seen last at ``last_seen`` ends: idle or absolute, whichever is first."""
    return min(last_seen + settings.session_idle, created + settings.session_lifetime)


def session_is_live(session: SessionLogin, now: datetime) -> bool:
    """True while ``session`` may still be used."""
    return now < session.expires


def session_touched(
    session: SessionLogin, now: datetime, settings: AccessSettings = DEFAULT_ACCESS
) -> SessionLogin | None:
    """``session`` seen at ``now``, when that is worth a write; None when it is not yet."""
    if now - session.last_seen < settings.session_touch:
        return None
    return attrs.evolve(
        session, last_seen=now, expires=session_expiry(session.created, now, settings)
    )


def login_backoff(count: int, settings: AccessSettings = DEFAULT_ACCESS) -> timedelta:
    """The wait after the ``count``-th wrong password in a row: ``base * 2^(count-1)``, capped."""
    exponent = max(count, 1) - 1
    # Past 2^20 the cap has long won; stop before the multiplication grows huge.
    if exponent >= 20:
        return settings.login_wait_cap
    return min(settings.login_wait_base * (1 << exponent), settings.login_wait_cap)


def login_wait(
    failures: LoginFailures | None, now: datetime, settings: AccessSettings = DEFAULT_ACCESS
) -> timedelta | None:
    """How long the client must still wait before a password is checked; None when it may try."""
    count = failures_count(failures, now, settings)
    if failures is None or count < 1:
        return None
    ready = failures.last + login_backoff(count, settings)
    return ready - now if ready > now else None


def failures_count(
    failures: LoginFailures | None, now: datetime, settings: AccessSettings = DEFAULT_ACCESS
) -> int:
    """The failures that still count at ``now``: none once ``login_forget`` has passed."""
    if failures is None or now - failures.last >= settings.login_forget:
        return 0
    return failures.count


def login_failed(
    client: str,
    failures: LoginFailures | None,
    now: datetime,
    settings: AccessSettings = DEFAULT_ACCESS,
) -> LoginFailures:
    """The client's failures with one more counted at ``now``."""
    return LoginFailures(client=client, count=failures_count(failures, now, settings) + 1, last=now)


def condition_pause(
    condition: ServiceCondition, settings: Settings = DEFAULT_SETTINGS
) -> timedelta:
    """How long a job waits out a service condition: a fixed pause, or longer if the vendor asks.

    The wait never grows with repetition: a full disk or a revoked key may be
    fixed at any moment, and the job should notice within one pause. An
    exact wait (a budget's turn, ADR 61) is kept whole, past the cap: the
    token at its end is promised to this job, so asking sooner only hears
    the rest of the wait.
    """
    asked = condition.retry_after
    if condition.exact and asked is not None:
        return asked
    if asked is None or asked <= settings.condition_pause:
        return settings.condition_pause
    return min(asked, settings.condition_pause_cap)


def outage_pause(streak: int, settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """How long a step pauses after the ``streak``-th outage in a row it met (a dependency down).

    ``retry_base * 2^(streak-1)``, capped at ``condition_pause``: a short blip
    costs a second, a long outage is probed every pause, never hammered.
    """
    exponent = max(streak, 1) - 1
    # Past 2^20 the cap has long won; stop before the multiplication overflows.
    if exponent >= 20:
        return settings.condition_pause
    return min(settings.retry_base * (1 << exponent), settings.condition_pause)


def condition_scope(condition: ServiceCondition, host: str) -> str:
    """Where a condition holds: on ``host`` for its own disk, everywhere for credentials."""
    return host if condition.local else EVERYWHERE


#: Which conditions a step that finished proves gone: it used what each one is about.
_CLEARED_BY: dict[State, frozenset[str]] = {
    State.FETCH: frozenset({DiskFull.code, StorageDown.code, DatabaseDown.code}),
    State.CONVERT: frozenset({DiskFull.code, StorageDown.code, DatabaseDown.code}),
    State.RECOGNIZE: frozenset(
        {
            StorageCredentialsRejected.code,
            StorageBucketMissing.code,
            StorageDown.code,
            RecognizerCredentialsRejected.code,
            RecognizerDown.code,
            DatabaseDown.code,
        }
    ),
    State.CHECK: frozenset(
        {RecognizerCredentialsRejected.code, RecognizerDown.code, DatabaseDown.code}
    ),
}


def conditions_cleared_by(state: State) -> frozenset[str]:
    """The codes a step of ``state`` that finished without error shows no longer hold."""
    return _CLEARED_BY.get(state, frozenset())


def files_go_at(job: Job, settings: Settings) -> datetime | None:
    """When retention deletes ``job``'s recording and derived files; None while it runs (ADR 36)."""
    if job.ended is None or not job.state.is_terminal:
        return None
    return job.ended + settings.recordings_kept


def job_goes_at(job: Job, settings: Settings) -> datetime | None:
    """When retention deletes ``job`` itself with its transcript; None while it runs."""
    if job.ended is None or not job.state.is_terminal:
        return None
    return job.ended + settings.jobs_kept


#: The most jobs ``queue_position`` counts ahead of one (red team 3): a status read
#: costs at most this many index steps however long the queue, and a caller reading
#: the limit knows that many or more wait ahead.
QUEUE_POSITION_LIMIT = 1000


def reachable_by(job: Job, caller: str | None) -> bool:
    """True when an API caller may see and delete ``job`` (ADR 36).

    ``caller`` is the SHA-256 of the caller's token, or None when the API
    has no tokens (the job id alone is the capability). With tokens, only
    the token that sent the job reaches it: a job sent without one (from
    Telegram, or before tokens were set) is reachable by none. A person's
    job (ADR 55) is reachable by that person alone, on an open API too.
    """
    if caller is None:
        return not is_person_owner(job.owner)
    return job.owner == caller


def reconnect_pause(failures: int, settings: Settings = DEFAULT_SETTINGS) -> timedelta:
    """The wait before reconnecting after ``failures`` failed tries in a row (a wake-up feed).

    ``reconnect_base * 2^(failures-1)``, capped at ``reconnect_cap``; no wait
    before the very first connection (``failures`` 0).
    """
    if failures <= 0:
        return timedelta(0)
    exponent = failures - 1
    # Past 2^20 the cap has long won; stop before the multiplication overflows.
    if exponent >= 20:
        return settings.reconnect_cap
    return min(settings.reconnect_base * (1 << exponent), settings.reconnect_cap)


#: The least time between two progress notes of one recognition (ADR 51): a note is one
#: small UPDATE, so a 20-minute recording costs a few hundred, not one per segment.
PROGRESS_INTERVAL = timedelta(seconds=3)
#: The least move, in whole percent of the audio, that is worth a note.
PROGRESS_STEP = 1
#: The least share of the audio done before the time left is estimated: before it, the
#: model's load and first window weigh more than the pace.
ESTIMATE_MIN_SHARE = 0.05


def percent_done(seconds_done: float, seconds_total: float) -> int:
    """Whole percent of ``seconds_total`` that ``seconds_done`` is, rounded down, 0 to 100."""
    if seconds_total <= 0:
        return 0
    return max(0, min(100, int(100 * seconds_done / seconds_total)))


def progress_due(
    *, percent: int, now: datetime, last_percent: int | None, last_at: datetime | None
) -> bool:
    """True when a recognition at ``percent`` should note it now (ADR 51).

    The first note is always due; later ones once ``PROGRESS_INTERVAL`` has
    passed since the last and the percent moved by ``PROGRESS_STEP`` or more.
    """
    if last_percent is None or last_at is None:
        return True
    return now - last_at >= PROGRESS_INTERVAL and percent - last_percent >= PROGRESS_STEP


def time_left(progress: Progress, seconds_total: float) -> timedelta | None:
    """The estimate of the recognition's time left as of ``progress.updated``; None: too early.

    The pace so far holds for the rest: ``elapsed * (total - done) / done``,
    where ``elapsed`` is ``updated - started`` (both the store's clock, so a
    skewed host changes nothing). None until ``ESTIMATE_MIN_SHARE`` of the
    audio is done or while no time has passed.
    """
    done = progress.seconds_done
    elapsed = progress.updated - progress.started
    if seconds_total <= 0 or done < ESTIMATE_MIN_SHARE * seconds_total:
        return None
    if elapsed <= timedelta(0):
        return None
    return elapsed * (max(seconds_total - done, 0.0) / done)


#: The least time between two edits of one chat's status messages (SPEC §21): Telegram
#: throttles a bot that edits faster. Paced by a budget per chat in the database, so every
#: notice loop on every host shares it (ADR 51).
CHAT_EDIT_INTERVAL = timedelta(seconds=3)
#: The names of those budgets start with this; ``/metrics`` leaves them out (they would
#: name chats and grow with them).
CHAT_PACE_PREFIX = "chat-edits:"


def chat_pace(chat_id: int) -> str:
    """The name of the budget that paces the edits of one chat's status messages."""
    return f"{CHAT_PACE_PREFIX}{chat_id}"


#: Budgets named after one owner of recordings: the questions they ask (ADR 94).
ASK_PACE_PREFIX = "questions:"
#: Questions one owner may ask (``POST /api/jobs/{id}/ask``) in any ``ASK_PER``: each
#: is answered inside its request by the model's server, a request per piece of a long
#: transcript. As every budget (``budgets.burst_of``): 10 at once, then one every 30 s
#: (ADR 94).
ASK_CAPACITY = 100
ASK_PER = timedelta(minutes=45)
#: Budgets that name a chat or a person: kept out of ``/metrics`` labels.
PRIVATE_BUDGET_PREFIXES = (CHAT_PACE_PREFIX, ASK_PACE_PREFIX)


def ask_pace(owner: str | None) -> str:
    """The name of the budget that paces the questions about ``owner``'s recordings.

    Recordings of nobody (a service without people, API tokens) share one.
    """
    return f"{ASK_PACE_PREFIX}{owner or '-'}"


@attrs.frozen(kw_only=True)
class QuotaDecision:
    """What the daily quota says about one more recording (ADR 59)."""

    #: True when the recording may be taken.
    allowed: bool
    #: Seconds the payer had counted today before this recording.
    used: float
    #: The day's quota in seconds; 0: none.
    limit: int
    #: When the day's count starts again (the next UTC midnight); None when there is no quota.
    resets: datetime | None

    @property
    def left(self) -> float:
        """Seconds still free today (0 when spent); meaningless without a quota."""
        return max(float(self.limit) - self.used, 0.0)


def quota_decision(*, now: datetime, used: float, incoming: float, limit: int) -> QuotaDecision:
    """May a recording of ``incoming`` seconds be taken from a payer who used ``used`` today?

    ``limit`` 0 means no quota. Otherwise the recording fits while
    ``used + incoming`` is at most ``limit``: a recording ending exactly at
    the limit is taken, one a second longer is not; once the day is spent
    (``used`` at the limit) nothing is, not even a recording of unknown
    length. ``incoming`` is what the header declares, 0 when it says
    nothing. The day is UTC, so a refusal lasts until the next UTC midnight
    after ``now``.
    """
    if limit < 0:
        raise ValueError("a quota is 0 (none) or a positive number of seconds")
    if limit == 0:
        return QuotaDecision(allowed=True, used=used, limit=0, resets=None)
    resets = next_utc_midnight(now)
    allowed = used < limit and used + max(incoming, 0.0) <= limit
    return QuotaDecision(allowed=allowed, used=used, limit=limit, resets=resets)


def charge_decision(
    *, now: datetime, used: float, incoming: float, limit: int, charged_before: bool
) -> QuotaDecision:
    """``quota_decision`` for charging one job: a job charged before passes, counted once.

    A retried or replayed job is already in ``used``; it is taken again
    whatever the day holds, and the store adds nothing for it.
    """
    if charged_before:
        decision = quota_decision(now=now, used=used, incoming=0.0, limit=limit)
        return attrs.evolve(decision, allowed=True)
    return quota_decision(now=now, used=used, incoming=incoming, limit=limit)


#: Seconds decoded past the quota when counting a recording: enough to know it does not fit.
MEASURE_MARGIN_SECONDS = 1.0


def measure_bound(limit: int) -> float:
    """Seconds of a recording the intake decodes at most to charge it under a quota of ``limit``.

    A recording longer than the whole day's quota is refused whatever the day
    holds, so counting stops just past it: the cost of the count is bounded
    by the quota, not by the recording (ADR 67).
    """
    return float(limit) + MEASURE_MARGIN_SECONDS


def charged_seconds(measured: Measured | None, *, declared: float | None, limit: int) -> float:
    """The seconds a recording is charged at intake, the same rule for every container (ADR 67).

    Counted to its end: its length. Stopped past the quota ``limit``
    (``measure_bound``): what was counted, which no day can hold. Stopped by
    the measure's ceiling first: the most it could last, settled to the
    converted length later. Not measured (no meter, or no quota to hold):
    what its header declares, else 0.
    """
    if measured is None:
        return max(declared or 0.0, 0.0)
    if measured.whole or measured.counted > limit:
        return measured.counted
    return max(measured.counted, measured.most)
