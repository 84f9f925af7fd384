"""The ports a pipeline runs on, bundled once by the composition root.

The job database comes in whole (``repo``, the union ``JobRepository``, which
only the composition root and tests touch) and is read by role: each core
module takes the role it uses (``queue``, ``jobs``, ``file_records``,
``outbox``, ``removals``, ``listings``, ``parts``, ``corrections``, ``search``), typed as
that narrow port, so mypy holds it to that role's methods (ADR 40).
"""

from __future__ import annotations

import attrs

from transcriber_core.policy import DEFAULT_SETTINGS, Settings
from transcriber_core.ports import (
    Clock,
    ConditionStore,
    Converter,
    Corrections,
    Diarizer,
    DurationMeter,
    DurationProbe,
    FetchLimits,
    FileRecords,
    FileStore,
    IdSource,
    JobQueue,
    JobRepository,
    Jobs,
    LanguageModel,
    Listings,
    MediaFetcher,
    Notifier,
    Outbox,
    PartQueue,
    Recognizer,
    Removals,
    SummaryStore,
    TranscriptSearch,
    UsageStore,
    VoiceStore,
    WakeupFeed,
    WebhookSender,
)
from transcriber_core.wakeup import Wakeup

#: What one link may bring in unless the app says otherwise: ``[import] max_bytes``'s default.
DEFAULT_FETCH_LIMITS = FetchLimits(max_bytes=2 * 1024**3)


@attrs.frozen(kw_only=True)
class Services:
    """Everything the intake, the steps and the workers need, chosen by the app."""

    #: The job database whole: the composition root hands it in; callers read it by role.
    repo: JobRepository
    #: Where recordings and converted audio live.
    files: FileStore
    converter: Converter
    recognizer: Recognizer
    notifier: Notifier
    clock: Clock
    ids: IdSource
    #: Where the recognizer reads audio from (Object Storage); None: it reads ``files``.
    recognizer_files: FileStore | None = None
    #: Tells who speaks when, for jobs that ask (SPEC §18); None: speakers are never labelled.
    diarizer: Diarizer | None = None
    #: Where workers note the service's own faults for ``/health``; None: they are only logged.
    conditions: ConditionStore | None = None
    #: Reads a recording's declared duration at intake, for its lane; None: bytes alone decide.
    probe: DurationProbe | None = None
    #: Counts a recording's decoded seconds at intake for a quota (ADR 67); None: the header's.
    meter: DurationMeter | None = None
    #: Sends webhooks (ADR 35); None: ``[webhooks] secret`` is unset and callbacks are refused.
    webhooks: WebhookSender | None = None
    #: Seconds sent per payer per day, which the intake charges (ADR 59); None: nothing counted.
    usage: UsageStore | None = None
    #: Each owner's remembered voices (SPEC §25); None: speakers are never matched to voices.
    voices: VoiceStore | None = None
    #: Downloads links' recordings (SPEC §28); None: links are refused at intake.
    fetcher: MediaFetcher | None = None
    #: What one link may bring in (``[import] max_bytes``, §17's duration limit).
    fetch_limits: FetchLimits = DEFAULT_FETCH_LIMITS
    #: The chat model summaries and questions go to (SPEC §27); None: no ``[llm]``, both off.
    language_model: LanguageModel | None = None
    #: Each recording's summary as a unit of work (ADR 83); None with ``language_model``.
    summaries: SummaryStore | None = None
    #: This host's name: the scope of conditions about its own disk.
    host: str = ""
    #: This process among the workers (host and process id): named in the parts it leases.
    worker: str = ""
    settings: Settings = DEFAULT_SETTINGS
    #: This process's fan-out to its idle loops.
    wakeup: Wakeup = attrs.field(factory=Wakeup)
    #: Wake-ups from other processes on the same database; None: this process's own only.
    wakeup_feed: WakeupFeed | None = None

    @property
    def queue(self) -> JobQueue:
        """The queue the step loops work from."""
        return self.repo

    @property
    def parts(self) -> PartQueue:
        """The parts of split recordings, each taken by any worker (ADR 52)."""
        return self.repo

    @property
    def jobs(self) -> Jobs:
        """Taking jobs in, reading them, the owner's edits."""
        return self.repo

    @property
    def corrections(self) -> Corrections:
        """A person's corrections of a transcript, compare-and-set (ADR 57)."""
        return self.repo

    @property
    def file_records(self) -> FileRecords:
        """The records of the files jobs hold."""
        return self.repo

    @property
    def outbox(self) -> Outbox:
        """The deliveries owed about jobs (ADR 35)."""
        return self.repo

    @property
    def removals(self) -> Removals:
        """Deletion at the owner's word and the retention sweeps (ADR 36)."""
        return self.repo

    @property
    def listings(self) -> Listings:
        """What the admin pages and ``/metrics`` list and count."""
        return self.repo

    @property
    def search(self) -> TranscriptSearch:
        """Full-text search over one owner's transcripts (ADR 58)."""
        return self.repo
