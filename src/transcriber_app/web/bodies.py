"""The API's JSON answers as attrs classes, sent with ``schemas.to_json`` and shown in the document.

A field left at its default is not sent: ``text`` appears once a job has
one, ``error`` only in a terminal state, and so on (reference: HTTP API).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from transcriber_app.web.schemas import doc
from transcriber_core.entities import Condition, Job, JobPart, Speaker, State
from transcriber_core.languages import AUTO
from transcriber_core.progress import FetchReport, ProgressReport, fetch_report_of, report_of
from transcriber_core.titles import shown_title


@attrs.frozen(kw_only=True)
class Accepted:
    """An upload taken: the job to poll."""

    job_id: str = attrs.field(metadata=doc("the job's id: a capability, keep it private"))


@attrs.frozen(kw_only=True)
class RecognitionProgress:
    """How far the recognition has come, as its worker last noted it (ADR 51)."""

    percent: int = attrs.field(metadata=doc("whole percent of the audio recognised, 0 to 100"))
    seconds_done: float = attrs.field(metadata=doc("seconds of the audio recognised so far"))
    seconds_total: float = attrs.field(metadata=doc("seconds of the whole audio"))
    eta_seconds: float | None = attrs.field(
        default=None,
        metadata=doc(
            "estimated seconds left as of updated: the pace so far applied to the rest;"
            " absent until 5 % of the audio is done"
        ),
    )
    updated: datetime = attrs.field(metadata=doc("when the progress was last noted"))

    @classmethod
    def of(cls, report: ProgressReport) -> RecognitionProgress:
        """The answer's view of ``report``."""
        return cls(
            percent=report.percent,
            seconds_done=report.seconds_done,
            seconds_total=report.seconds_total,
            eta_seconds=report.eta_seconds,
            updated=report.updated,
        )


@attrs.frozen(kw_only=True)
class FetchProgress:
    """How far a link's download has come, while the job is in fetch (SPEC §28, ADR 85)."""

    bytes: int = attrs.field(metadata=doc("bytes downloaded so far"))
    total_bytes: int | None = attrs.field(
        metadata=doc("bytes in all, when the site declares them; null when unknown")
    )
    percent: int | None = attrs.field(
        metadata=doc("whole percent of total_bytes downloaded, 0 to 100; null when unknown")
    )

    @classmethod
    def of(cls, report: FetchReport) -> FetchProgress:
        """The answer's view of ``report``."""
        return cls(bytes=report.bytes, total_bytes=report.total_bytes, percent=report.percent)


@attrs.frozen(kw_only=True)
class JobStatus:
    """The public view of a job: no file ids, no origin, no lease."""

    job_id: str
    state: State
    title: str = attrs.field(
        metadata=doc(
            "the recording's title: the one sent or set with PATCH, else its dated default"
            ' ("Recording of 5 Dec 2026, 09:44", UTC)'
        )
    )
    created: datetime
    updated: datetime
    text: str | None = attrs.field(default=None, metadata=doc("the transcript, once done"))
    error: str | None = attrs.field(
        default=None, metadata=doc("why the job ended without a transcript; terminal states only")
    )
    duration: float | None = attrs.field(
        default=None, metadata=doc("seconds of audio, once measured")
    )
    language: str | None = attrs.field(
        default=None, metadata=doc("the language the recognizer heard (ISO 639-1), when it says")
    )
    language_requested: str = attrs.field(
        metadata=doc("the language asked for at upload: auto or an ISO 639-1 code")
    )
    task: str = attrs.field(metadata=doc("transcribe, or translate (to English)"))
    parts_done: int | None = attrs.field(
        default=None, metadata=doc("parts recognised, for a recording split into parts")
    )
    parts_total: int | None = attrs.field(
        default=None, metadata=doc("parts in all, for a recording split into parts")
    )
    queue_position: int | None = attrs.field(
        default=None,
        metadata=doc("jobs waiting ahead of this one in its step and lane, while it waits"),
    )
    speakers: tuple[Speaker, ...] = attrs.field(
        default=(),
        metadata=doc("the voices found, each with its id on words and its name; once labelled"),
    )
    progress: RecognitionProgress | None = attrs.field(
        default=None,
        metadata=doc(
            "how far the recognition has come, while the job is in recognize or check and its"
            " recognizer reports it (Whisper, or a recording split into parts)"
        ),
    )
    fetch: FetchProgress | None = attrs.field(
        default=None,
        metadata=doc("how far a link's download has come, while the job is in fetch"),
    )

    @classmethod
    def of(
        cls, job: Job, parts: Sequence[JobPart] = (), *, queue_position: int | None = None
    ) -> JobStatus:
        """The view of ``job``; ``queue_position`` is given while the job waits (ADR 27)."""
        return cls(
            job_id=job.id,
            state=job.state,
            title=shown_title(job.title, job.created),
            created=job.created,
            updated=job.updated,
            text=job.text,
            # A job still on its way may be waiting for the service (a full disk, a
            # refused key): that is ours to fix, not the sender's to read (reference: Limits).
            error=job.error if job.state.is_terminal else None,
            duration=job.duration,
            language=job.language,
            language_requested=job.language_requested or AUTO,
            task=job.task.value,
            parts_done=sum(part.done for part in parts) if parts else None,
            parts_total=len(parts) if parts else None,
            queue_position=queue_position,
            speakers=job.speakers,
            progress=None if (report := report_of(job)) is None else RecognitionProgress.of(report),
            fetch=None
            if (fetching := fetch_report_of(job)) is None
            else FetchProgress.of(fetching),
        )


@attrs.frozen(kw_only=True)
class Titled:
    """A job's title once set: what ``PATCH /api/jobs/{id}`` answers."""

    job_id: str
    title: str = attrs.field(metadata=doc("the title now: the one set, or the dated default"))

    @classmethod
    def of(cls, job: Job) -> Titled:
        """The title of ``job`` as it is stored."""
        return cls(job_id=job.id, title=shown_title(job.title, job.created))


@attrs.frozen(kw_only=True)
class HeldCondition:
    """A service condition that holds: its code and since when."""

    code: str
    since: datetime


@attrs.frozen(kw_only=True)
class Unhealthy:
    """Why the service cannot work now: the first cause's code, every condition that holds."""

    error: str = attrs.field(
        metadata=doc("database_unavailable, or the first condition's code (disk_full, ...)")
    )
    message: str
    conditions: tuple[HeldCondition, ...] = ()

    @classmethod
    def of(cls, held: Sequence[Condition]) -> Unhealthy:
        """The answer while ``held`` (not empty) hold; each code once in the message."""
        codes = list(dict.fromkeys(condition.code for condition in held))
        return cls(
            error=codes[0],
            message="the service cannot do its work now: " + ", ".join(codes),
            conditions=tuple(HeldCondition(code=c.code, since=c.since) for c in held),
        )


@attrs.frozen(kw_only=True)
class SpeakerNames:
    """A job's speakers as they are named now (SPEC §18)."""

    job_id: str
    speakers: tuple[Speaker, ...] = attrs.field(
        metadata=doc("each speaker's id on words and segments, and its name, in order")
    )

    @classmethod
    def of(cls, job: Job) -> SpeakerNames:
        """The speakers of ``job``."""
        return cls(job_id=job.id, speakers=job.speakers)
