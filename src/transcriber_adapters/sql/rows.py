"""Rows to records and back, written once for both SQL adapters.

SQLite and PostgreSQL store the same columns (``*_COLUMNS`` here, in the
order every statement selects them); they differ only in how a time and
the words column travel: SQLite as INTEGER microseconds (``sqlite/times.py``)
and JSON text, PostgreSQL as native ``timestamptz`` and ``jsonb`` (which
psycopg reads back as a list). ``RowMapping`` takes those differences as
functions (a words reader; time functions only where the driver does not
map datetimes itself); everything else (enums, the shared HTTP origin,
booleans, jobs, files, parts, sessions, login failures, deliveries) is
here once. Each adapter's ``statements.py`` makes one ``RowMapping`` and
exports its bound methods under the names its modules have always imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, LiteralString

from transcriber_core.entities import (
    PROGRESS_STATES,
    SUMMARY_PREVIEW_CHARS,
    Correction,
    Delivery,
    DeliveryKind,
    Diarization,
    Event,
    FileRecord,
    Job,
    JobPart,
    JobSummary,
    Location,
    LoginFailures,
    NewDelivery,
    Origin,
    OriginKind,
    Print,
    Progress,
    SessionLogin,
    Speaker,
    SpeakerPrint,
    State,
    Turn,
    Word,
)
from transcriber_core.languages import Task

#: Columns of ``jobs`` in the order every statement selects or returns them.
JOB_COLUMNS: tuple[LiteralString, ...] = (
    "id",
    "state",
    "origin_kind",
    "origin_chat_id",
    "origin_message_id",
    "source_file_id",
    "converted_file_id",
    "storage_file_id",
    "operation_id",
    "duration",
    "text",
    "words",
    "language",
    "language_requested",
    "prompt",
    "task",
    "error",
    "attempts",
    "acquisition_id",
    "acquire_time",
    "delay_time",
    "dedup_key",
    "upload_digest",
    "short",
    "owner",
    "ended",
    "callback_url",
    "created",
    "updated",
    "speakers_wanted",
    "speakers",
    "prints",
    "heard",
    "source_url",
)
#: The columns of a job's ``progress`` (ADR 51), selected after ``JOB_COLUMNS`` by every read
#: (``JOB_READ_COLUMNS``); only ``save_progress_if_held`` writes them, and a save clears them
#: when the job leaves ``recognize`` and ``check``.
PROGRESS_COLUMNS: tuple[LiteralString, ...] = (
    "progress_seconds",
    "progress_started",
    "progress_updated",
    "progress_total",
)
#: The chat message that shows the job's status (SPEC §21): only ``save_status_message``
#: writes it; no save touches it.
STATUS_MESSAGE_COLUMN: LiteralString = "status_message_id"
#: A person's correction of the transcript (ADR 57): only ``save_correction`` writes them
#: (with ``text`` and ``words``); no save touches them.
CORRECTION_COLUMNS: tuple[LiteralString, ...] = (
    "edit_version",
    "original_text",
    "original_words",
)
#: The person's title of the recording (ADR 79): written by the insert and by ``save_title``
#: alone; no save touches it, so a step's save never undoes a rename.
TITLE_COLUMN: LiteralString = "title"
#: What every statement that reads a job selects or returns, in this order.
JOB_READ_COLUMNS: tuple[LiteralString, ...] = (
    *JOB_COLUMNS,
    *PROGRESS_COLUMNS,
    STATUS_MESSAGE_COLUMN,
    *CORRECTION_COLUMNS,
    TITLE_COLUMN,
)
#: What a new job's insert writes: every saved column and its title.
JOB_INSERT_COLUMNS: tuple[LiteralString, ...] = (*JOB_COLUMNS, TITLE_COLUMN)
#: What a summary statement selects of the job itself, as ``me``, before its queue position
#: and its parts done and in all (``RowMapping.summary_from_row``).
SUMMARY_COLUMNS: tuple[LiteralString, ...] = (
    "me.id",
    "me.state",
    "me.created",
    "me.updated",
    "me.duration",
    # substr counts characters in both dialects; the words are never read.
    f"substr(me.text, 1, {SUMMARY_PREVIEW_CHARS})",
    "me.error",
    "me.progress_seconds",
    "me.progress_started",
    "me.progress_updated",
    "me.progress_total",
    "me.title",
)
#: Parts in all and parts done of the job ``me``, as two columns (ADR 26).
SUMMARY_PARTS: LiteralString = (
    "(SELECT count(*) FROM job_parts AS p WHERE p.job_id = me.id),"
    " (SELECT count(*) FROM job_parts AS p WHERE p.job_id = me.id AND p.text IS NOT NULL)"
)
#: Columns of ``files`` in the order every statement selects them.
FILE_COLUMNS: tuple[LiteralString, ...] = (
    "id",
    "location",
    "object_key",
    "size",
    "extension",
    "created",
)
#: Columns of ``job_parts`` in the order every statement selects them.
PART_COLUMNS: tuple[LiteralString, ...] = (
    "job_id",
    "part_index",
    "start_seconds",
    "end_seconds",
    "file_id",
    "storage_file_id",
    "operation_id",
    "text",
    "words",
    "attempts",
    "acquisition_id",
    "acquire_time",
    "delay_time",
    "error",
    "failed",
)
#: Columns of a session's login part (``person_sessions`` after its person) in read order.
SESSION_COLUMNS: tuple[LiteralString, ...] = (
    "id_hash",
    "csrf",
    "created",
    "last_seen",
    "expires",
    "flash",
)
_JOB_WIDTH = len(JOB_READ_COLUMNS)

_STATES = {state.value: state for state in State}
_ORIGIN_KINDS = {kind.value: kind for kind in OriginKind}
_LOCATIONS = {location.value: location for location in Location}
_HTTP = Origin.http()
_KINDS = {kind.value: kind for kind in DeliveryKind}
_EVENTS = {event.value: event for event in Event}
_TASKS = {task.value: task for task in Task}
#: The JSON text of no words; most rows before recognition carry it.
NO_WORDS = "[]"


def words_to_db(words: tuple[Word, ...]) -> str:
    """The JSON text a words column is written from (TEXT in SQLite, ``jsonb`` in PostgreSQL)."""
    if not words:
        return NO_WORDS
    return json.dumps(
        [_word_item(word) for word in words],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _word_item(word: Word) -> dict[str, Any]:
    item: dict[str, Any] = {"text": word.text, "start": word.start, "end": word.end}
    if word.speaker is not None:
        item["speaker"] = word.speaker
    return item


def words_from_items(items: list[dict[str, Any]]) -> tuple[Word, ...]:
    """The words of a decoded JSON list of ``{"text", "start", "end"[, "speaker"]}`` objects."""
    return tuple(
        Word(text=item["text"], start=item["start"], end=item["end"], speaker=item.get("speaker"))
        for item in items
    )


def speakers_to_db(speakers: tuple[Speaker, ...]) -> str:
    """The JSON text of the ``speakers`` column: ``[{"id", "name"[, "voice_id"]}, ...]``."""
    return json.dumps(
        [_speaker_item(s) for s in speakers], ensure_ascii=False, separators=(",", ":")
    )


def speakers_from_db(value: str) -> tuple[Speaker, ...]:
    """The speakers of a ``speakers`` column's JSON text."""
    return tuple(
        Speaker(id=item["id"], name=item["name"], voice_id=item.get("voice_id"))
        for item in json.loads(value)
    )


def _speaker_item(speaker: Speaker) -> dict[str, str]:
    item = {"id": speaker.id, "name": speaker.name}
    if speaker.voice_id is not None:
        item["voice_id"] = speaker.voice_id
    return item


#: The JSON text of no prints: every job without measured speakers.
NO_PRINTS = "[]"


def prints_to_db(prints: tuple[SpeakerPrint, ...]) -> str:
    """The JSON text of the ``prints`` column: ``[{"speaker", "vector"}, ...]`` (SPEC §25).

    Floats as Python writes them, which read back to the same floats: the
    job read back equals the job saved (``save_if_unchanged`` compares them).
    """
    if not prints:
        return NO_PRINTS
    return json.dumps(
        [{"speaker": p.speaker, "vector": list(p.vector)} for p in prints], separators=(",", ":")
    )


def prints_from_db(value: str) -> tuple[SpeakerPrint, ...]:
    """The speakers' prints of a ``prints`` column's JSON text."""
    if value == NO_PRINTS:
        return ()
    return tuple(
        SpeakerPrint(speaker=item["speaker"], vector=tuple(float(x) for x in item["vector"]))
        for item in json.loads(value)
    )


def heard_to_db(heard: Diarization | None) -> str | None:
    """The JSON text of the ``heard`` column (ADR 89): ``{"turns": [[label, start, end]...],
    "prints": {label: vector}}``; None while nothing was heard early."""
    if heard is None:
        return None
    return json.dumps(
        {
            "turns": [[t.speaker, t.start, t.end] for t in heard.turns],
            "prints": {label: list(vector) for label, vector in heard.prints.items()},
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def heard_from_db(value: str | None) -> Diarization | None:
    """What the diarizer heard early, from a ``heard`` column's JSON text."""
    if value is None:
        return None
    item = json.loads(value)
    return Diarization(
        turns=tuple(
            Turn(speaker=label, start=float(start), end=float(end))
            for label, start, end in item["turns"]
        ),
        prints={label: tuple(float(x) for x in vector) for label, vector in item["prints"].items()},
    )


def print_to_db(vector: Print) -> str:
    """The JSON text of a voice's print (``voices.vector``)."""
    return json.dumps(list(vector), separators=(",", ":"))


def print_from_db(value: str) -> Print:
    """A voice's print from its JSON text."""
    return tuple(float(x) for x in json.loads(value))


def delivery_params(
    job_id: str, deliveries: Sequence[NewDelivery], now: object
) -> list[dict[str, Any]]:
    """The parameters of inserting each of ``deliveries`` (the core chose them) for the job."""
    return [
        {"job_id": job_id, "kind": new.kind.value, "event": new.event.value, "now": now}
        for new in deliveries
    ]


def _same(value: Any) -> Any:
    return value


class RowMapping:
    """Every row mapping of the job repository and the owner store, for one time encoding."""

    def __init__(
        self,
        *,
        words_from_db: Callable[[Any], tuple[Word, ...]],
        time_to_db: Callable[[datetime], Any] | None = None,
        time_from_db: Callable[[Any], datetime] | None = None,
    ) -> None:
        """Read words with ``words_from_db``; map times with ``time_to_db``/``time_from_db``.

        Without them the driver binds and reads aware datetimes itself (psycopg),
        and the job mapping, the hot path, skips the conversion entirely.
        """
        self._words_from_db = words_from_db
        self._job_time_to_db = time_to_db
        self._job_time_from_db = time_from_db
        self._to_db: Callable[[datetime], Any] = time_to_db or _same
        self._from_db: Callable[[Any], datetime] = time_from_db or _same

    @staticmethod
    def state_of(value: str) -> State:
        """The state stored as ``value``."""
        return _STATES[value]

    @staticmethod
    def delivery_kind_of(value: str) -> DeliveryKind:
        """The delivery kind stored as ``value``."""
        return _KINDS[value]

    def job_params(self, job: Job) -> dict[str, Any]:
        """The named parameters of each column of ``JOB_INSERT_COLUMNS`` for ``job``.

        A save's statement names only ``JOB_COLUMNS``: the title is the insert's.
        """
        origin = job.origin
        acquire_time: Any = job.acquire_time
        delay_time: Any = job.delay_time
        ended: Any = job.ended
        created: Any = job.created
        updated: Any = job.updated
        to_db = self._job_time_to_db
        if to_db is not None:
            acquire_time = None if acquire_time is None else to_db(acquire_time)
            delay_time = None if delay_time is None else to_db(delay_time)
            ended = None if ended is None else to_db(ended)
            created = to_db(created)
            updated = to_db(updated)
        return {
            "id": job.id,
            "state": job.state.value,
            "origin_kind": origin.kind.value,
            "origin_chat_id": origin.chat_id,
            "origin_message_id": origin.message_id,
            "source_file_id": job.source_file_id,
            "converted_file_id": job.converted_file_id,
            "storage_file_id": job.storage_file_id,
            "operation_id": job.operation_id,
            "duration": job.duration,
            "text": job.text,
            "words": words_to_db(job.words),
            "language": job.language,
            "language_requested": job.language_requested,
            "prompt": job.prompt,
            "task": job.task.value,
            "error": job.error,
            "attempts": job.attempts,
            "acquisition_id": job.acquisition_id,
            "acquire_time": acquire_time,
            "delay_time": delay_time,
            "dedup_key": job.dedup_key,
            "upload_digest": job.upload_digest,
            "short": job.short,
            "owner": job.owner,
            "ended": ended,
            "callback_url": job.callback_url,
            "created": created,
            "updated": updated,
            "speakers_wanted": job.speakers_wanted,
            "speakers": speakers_to_db(job.speakers),
            "prints": prints_to_db(job.prints),
            "heard": heard_to_db(job.heard),
            "source_url": job.source_url,
            "title": job.title,
        }

    def job_from_row(self, row: Sequence[Any]) -> Job:
        """The job of a row selected as ``JOB_READ_COLUMNS`` (extra trailing columns ignored)."""
        (
            id_,
            state,
            origin_kind,
            origin_chat_id,
            origin_message_id,
            source_file_id,
            converted_file_id,
            storage_file_id,
            operation_id,
            duration,
            text,
            words,
            language,
            language_requested,
            prompt,
            task,
            error,
            attempts,
            acquisition_id,
            acquire_time,
            delay_time,
            dedup_key,
            upload_digest,
            short,
            owner,
            ended,
            callback_url,
            created,
            updated,
            speakers_wanted,
            speakers,
            prints,
            heard,
            source_url,
            progress_seconds,
            progress_started,
            progress_updated,
            progress_total,
            status_message_id,
            edit_version,
            original_text,
            original_words,
            title,
        ) = row[:_JOB_WIDTH]
        from_db = self._job_time_from_db
        progress = None
        if progress_seconds is not None:
            if from_db is not None:
                progress_started = from_db(progress_started)
                progress_updated = from_db(progress_updated)
            progress = Progress(
                seconds_done=progress_seconds,
                total=progress_total,
                started=progress_started,
                updated=progress_updated,
            )
        if from_db is not None:
            acquire_time = None if acquire_time is None else from_db(acquire_time)
            delay_time = None if delay_time is None else from_db(delay_time)
            ended = None if ended is None else from_db(ended)
            created = from_db(created)
            updated = from_db(updated)
        if origin_kind == "http" and origin_chat_id is None and origin_message_id is None:
            origin = _HTTP
        else:
            kind = _ORIGIN_KINDS[origin_kind]
            origin = Origin(kind=kind, chat_id=origin_chat_id, message_id=origin_message_id)
        return Job(
            id=id_,
            state=_STATES[state],
            origin=origin,
            source_file_id=source_file_id,
            converted_file_id=converted_file_id,
            storage_file_id=storage_file_id,
            operation_id=operation_id,
            duration=duration,
            text=text,
            words=self._words_from_db(words),
            language=language,
            language_requested=language_requested,
            prompt=prompt,
            task=_TASKS[task],
            error=error,
            attempts=attempts,
            acquisition_id=acquisition_id,
            acquire_time=acquire_time,
            delay_time=delay_time,
            dedup_key=dedup_key,
            upload_digest=upload_digest,
            # SQLite has no boolean type and reads 0 or 1.
            short=bool(short),
            owner=owner,
            ended=ended,
            callback_url=callback_url,
            created=created,
            updated=updated,
            speakers_wanted=speakers_wanted,
            speakers=speakers_from_db(speakers),
            prints=prints_from_db(prints),
            heard=heard_from_db(heard),
            source_url=source_url,
            progress=progress,
            status_message_id=status_message_id,
            edit_version=edit_version,
            original_text=original_text,
            original_words=None if original_words is None else self._words_from_db(original_words),
            title=title,
        )

    def correction_params(
        self, job_id: str, correction: Correction, version: int
    ) -> dict[str, Any]:
        """The named parameters of ``save_correction``'s statement (``now`` aside)."""
        original = correction.original_words
        return {
            "id": job_id,
            "version": version,
            "text": correction.text,
            "words": words_to_db(correction.words),
            "original_text": correction.original_text,
            "original_words": None if original is None else words_to_db(original),
        }

    def file_params(self, record: FileRecord) -> dict[str, Any]:
        """The named parameters of every ``files`` column for ``record``."""
        return {
            "id": record.id,
            "location": record.location.value,
            "object_key": record.object_key,
            "size": record.size,
            "extension": record.extension,
            "created": self._to_db(record.created),
        }

    def file_from_row(self, row: Sequence[Any]) -> FileRecord:
        """The file record of a row selected as ``FILE_COLUMNS``."""
        id_, location, object_key, size, extension, created = row
        return FileRecord(
            id=id_,
            location=_LOCATIONS[location],
            object_key=object_key,
            size=size,
            extension=extension,
            created=self._from_db(created),
        )

    def part_params(self, part: JobPart) -> dict[str, Any]:
        """The named parameters of every ``job_parts`` column for ``part``."""
        return {
            "job_id": part.job_id,
            "part_index": part.index,
            "start_seconds": part.start,
            "end_seconds": part.end,
            "file_id": part.file_id,
            "storage_file_id": part.storage_file_id,
            "operation_id": part.operation_id,
            "text": part.text,
            "words": words_to_db(part.words),
            "attempts": part.attempts,
            "acquisition_id": part.acquisition_id,
            "acquire_time": self._time_or_none(part.acquire_time),
            "delay_time": self._time_or_none(part.delay_time),
            "error": part.error,
            "failed": part.failed,
        }

    def summary_from_row(self, row: Sequence[Any]) -> JobSummary:
        """The live view of a row selected as ``SUMMARY_COLUMNS`` (``list_owned_summaries``)."""
        id_, state_value, created, updated, duration, preview, error = row[:7]
        progress_seconds, progress_started, progress_updated, progress_total, title = row[7:12]
        queue_position, parts_total, parts_done = row[12:]
        state = _STATES[state_value]
        from_db = self._from_db
        progress = None
        if progress_seconds is not None and state in PROGRESS_STATES:
            progress = Progress(
                seconds_done=progress_seconds,
                total=progress_total,
                started=from_db(progress_started),
                updated=from_db(progress_updated),
            )
        return JobSummary(
            id=id_,
            state=state,
            created=from_db(created),
            updated=from_db(updated),
            duration=duration,
            preview=preview,
            error=error if state.is_terminal else None,
            progress=progress,
            queue_position=queue_position,
            parts_done=parts_done,
            parts_total=parts_total,
            title=title,
        )

    def _time_or_none(self, value: datetime | None) -> Any:
        return None if value is None else self._to_db(value)

    def part_from_row(self, row: Sequence[Any]) -> JobPart:
        """The part of a row selected as ``PART_COLUMNS``."""
        (job_id, index, start, end, file_id, storage_file_id, operation_id, text, words) = row[:9]
        attempts, acquisition_id, acquire_time, delay_time, error, failed = row[9:]
        from_db = self._from_db
        return JobPart(
            attempts=attempts,
            acquisition_id=acquisition_id,
            acquire_time=None if acquire_time is None else from_db(acquire_time),
            delay_time=None if delay_time is None else from_db(delay_time),
            error=error,
            failed=bool(failed),
            job_id=job_id,
            index=index,
            start=start,
            end=end,
            file_id=file_id,
            storage_file_id=storage_file_id,
            operation_id=operation_id,
            text=text,
            words=self._words_from_db(words),
        )

    def session_params(self, session: SessionLogin) -> dict[str, Any]:
        """The named parameters of a session's login columns for ``session``."""
        to_db = self._to_db
        return {
            "id_hash": session.id_hash,
            "csrf": session.csrf,
            "created": to_db(session.created),
            "last_seen": to_db(session.last_seen),
            "expires": to_db(session.expires),
            "flash": session.flash,
        }

    def session_from_row(self, row: Sequence[Any]) -> SessionLogin:
        """The session of a row selected in ``SESSION_COLUMNS`` order."""
        from_db = self._from_db
        id_hash, csrf, created, last_seen, expires, flash = row
        return SessionLogin(
            id_hash=id_hash,
            csrf=csrf,
            created=from_db(created),
            last_seen=from_db(last_seen),
            expires=from_db(expires),
            flash=flash,
        )

    def login_failures_params(
        self, failures: LoginFailures, *, previous: LoginFailures | None
    ) -> dict[str, Any]:
        """The parameters of storing ``failures`` over ``previous`` (``seen_*`` when not None)."""
        params: dict[str, Any] = {
            "client": failures.client,
            "count": failures.count,
            "last": self._to_db(failures.last),
        }
        if previous is not None:
            if previous.client != failures.client:
                raise ValueError("previous failures belong to another client")
            params.update(seen_count=previous.count, seen_last=self._to_db(previous.last))
        return params

    def login_failures_from_row(self, row: Sequence[Any]) -> LoginFailures:
        """The failures of a row selected as ``client, count, last``."""
        client, count, last = row
        return LoginFailures(client=client, count=count, last=self._from_db(last))

    def delivery_from_row(self, row: Sequence[Any]) -> Delivery:
        """The delivery of a row selected in ``deliveries`` column order."""
        from_db = self._from_db
        id_, job_id, kind, event, attempts, acquisition_id, acquire_time, due, created, error = row
        return Delivery(
            id=id_,
            job_id=job_id,
            kind=_KINDS[kind],
            event=_EVENTS[event],
            attempts=attempts,
            acquisition_id=acquisition_id,
            acquire_time=None if acquire_time is None else from_db(acquire_time),
            due=from_db(due),
            created=from_db(created),
            last_error=error,
        )
