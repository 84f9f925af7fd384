"""The job views: the list (state filter, find by id, newest first, paginated), a job's
detail with its files, the owner's state change, which also revives a dead job, and
deletion.

The rules are the core's (``transcriber_core.edits``): where a revived job
starts, which missing file is expected, and the edit that is refused when
the job changed since the owner read it (ADR 23).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import attrs
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.admin.rendering import (
    PREFIX,
    file_url,
    job_url,
    message,
    render,
    see_other,
    state_name,
)
from transcriber_app.web.admin.security import action, form_text, page
from transcriber_app.web.language import _
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.transcripts import why_no_transcript
from transcriber_core import deletion, edits, speakers
from transcriber_core.deletion import store_for
from transcriber_core.entities import FileRecord, Job, JobPart, OriginKind, State
from transcriber_core.errors import FileNotFound, JobChanged, JobNotFound
from transcriber_core.naming import holder_of, well_formed_id
from transcriber_core.people import is_person_owner
from transcriber_core.policy import files_go_at, job_goes_at
from transcriber_core.progress import report_of
from transcriber_core.rendering import TranscriptFormat
from transcriber_core.services import Services

log = logging.getLogger("transcriber.admin")

#: Jobs per page of the list.
PAGE_SIZE = 50
#: Pages beyond this are not offered; the offset would only make SQLite skip rows.
MAX_PAGE = 100_000

#: The file references a job page lists, in pipeline order.
_FILE_ROLES: tuple[tuple[str, str], ...] = (
    ("source", "source_file_id"),
    ("converted", "converted_file_id"),
    ("object storage copy", "storage_file_id"),
)


async def sender_names(request: Request) -> dict[str, str]:
    """Each person's name by the owner key of their jobs: who sent what, for the owner's lists."""
    people = await runtime_of(request).people.list_people()
    return {person.owner_key: person.name for person in people}


def sent_by(job: Job, names: dict[str, str]) -> str:
    """Who sent ``job`` and how: a person's name and the door, "HTTP", "API token", "Telegram"."""
    door = "Telegram" if job.origin.kind is OriginKind.TELEGRAM else "HTTP"
    if job.owner is None:
        return door
    name = names.get(job.owner)
    if name is None:
        # A token of ``[http] api_tokens`` (its digest), or a person since deleted.
        return _("API token") if door == "HTTP" and not is_person_owner(job.owner) else door
    return f"{name} · {door}"


@page
async def jobs_list(request: Request) -> Response:
    """``GET /admin/``: jobs newest first; ``state`` filters, ``q`` finds an id, ``page`` pages."""
    services = runtime_of(request).services
    params = request.query_params
    query = params.get("q", "").strip()
    problem = None
    status_code = 200
    if query:
        try:
            job = await _job_by_id(services, query)
        except JobNotFound:
            problem = _("No job has this id.")
            status_code = 404
        else:
            return see_other(job_url(job.id))
    state_value = params.get("state", "")
    state = None
    if state_value:
        try:
            state = State(state_value)
        except ValueError:
            return _unknown_state(request)
    page_number = _page_number(params.get("page"))
    offset = (page_number - 1) * PAGE_SIZE
    found = await services.listings.list_jobs(state=state, limit=PAGE_SIZE + 1, offset=offset)
    counts = await services.listings.count_by_state()

    def link(**changes: Any) -> str:
        wanted: dict[str, Any] = {"state": state.value if state else None, "page": None}
        wanted.update(changes)
        query_string = urlencode({k: v for k, v in wanted.items() if v not in (None, 1)})
        return f"{PREFIX}/" + (f"?{query_string}" if query_string else "")

    settings = runtime_of(request).services.settings
    senders = await sender_names(request)
    context = {
        "jobs": found[:PAGE_SIZE],
        "sent_by": lambda job: sent_by(job, senders),
        "files_go_at": lambda job: files_go_at(job, settings),
        "state": state,
        "states": list(State),
        "counts": counts,
        "total": sum(counts.values()),
        "page": page_number,
        "newer_url": link(page=page_number - 1) if page_number > 1 else None,
        "older_url": link(page=page_number + 1) if len(found) > PAGE_SIZE else None,
        "state_url": lambda value: link(state=value),
        "job_url": job_url,
        "query": query,
        "problem": problem,
    }
    return render(request, "jobs.html", context, status_code=status_code)


def _page_number(value: str | None) -> int:
    """The page asked for, from 1; anything unreadable is the first page."""
    try:
        number = int(value or "1")
    except ValueError:
        return 1
    return min(max(number, 1), MAX_PAGE)


@page
async def job_detail(request: Request) -> Response:
    """``GET /admin/jobs/{id}``: every field of the job, its files and the state form."""
    services = runtime_of(request).services
    try:
        job = await _job_of(request)
    except JobNotFound:
        return _no_such_job(request)
    lease_until = (
        job.acquire_time + services.settings.lease
        if job.acquisition_id is not None and job.acquire_time is not None
        else None
    )
    context = {
        "job": job,
        "sent_by": sent_by(job, await sender_names(request)),
        "files": await _file_rows(services, job),
        "parts": _part_rows(services, await services.jobs.get_parts(job.id)),
        "states": list(State),
        "revive_to": edits.revive_state(job),
        "lease_until": lease_until,
        "word_count": len(job.text.split()) if job.text else 0,
        "files_go_at": files_go_at(job, services.settings),
        "job_goes_at": job_goes_at(job, services.settings),
        "progress": report_of(job),
        "transcript_formats": list(TranscriptFormat),
        "no_transcript": why_no_transcript(job),
        "file_url": file_url,
        "job_url": job_url,
    }
    return render(request, "job.html", context)


@attrs.frozen(kw_only=True)
class PartRow:
    """One part as the job page shows it: its work, and who holds its lease until when."""

    part: JobPart
    #: done, failed, recognising (it has an operation) or not started.
    state: str
    #: The worker (host:process) whose lease on the part is live; None when none is.
    holder: str | None
    #: When that lease lapses unless renewed.
    lease_until: datetime | None

    @property
    def done(self) -> bool:
        """True once the part's transcript is in (the page counts these)."""
        return self.part.done


def _part_rows(services: Services, parts: list[JobPart]) -> list[PartRow]:
    """The parts of a split job with their holders: a lease counts while it has not lapsed."""
    now = services.clock.now()
    rows = []
    for part in parts:
        until = None
        if part.acquisition_id is not None and part.acquire_time is not None:
            until = part.acquire_time + services.settings.lease
        live = until is not None and until > now
        rows.append(
            PartRow(
                part=part,
                state=_part_state(part),
                holder=holder_of(part.acquisition_id) if live else None,
                lease_until=until if live else None,
            )
        )
    return rows


def _part_state(part: JobPart) -> str:
    if part.done:
        return "done"
    if part.failed:
        return "failed"
    return "recognising" if part.operation_id else "not started"


async def _file_rows(services: Services, job: Job) -> list[dict[str, Any]]:
    """One row per file the job points at: its record, or why there is none."""
    rows = []
    for role, field in _FILE_ROLES:
        file_id: str | None = getattr(job, field)
        if file_id is None:
            continue
        try:
            record: FileRecord | None = await services.file_records.get_file(file_id)
        except FileNotFound:
            record = None
        rows.append(
            {
                "role": role,
                "id": file_id,
                "record": record,
                "downloadable": record is not None and store_for(services, record) is not None,
                "removed": record is None and edits.removed_on_purpose(job, file_id),
            }
        )
    return rows


@action
async def change_state(request: Request, form: FormData) -> Response:
    """``POST /admin/jobs/{id}/state``: move the job through the core's transition as the owner.

    The owner's transition clears lease, delay, attempts and error (reference: Admin panel);
    the workers of the new state are woken so a revived job starts at once.
    The form carries the state the owner saw: a job that has moved since is
    not touched, so nobody revives a job that someone else already revived.
    The save itself is refused if anything changed the job after this
    request read it (a worker's result), so no result is overwritten.
    """
    services = runtime_of(request).services
    try:
        to = State(form_text(form, "state"))
    except ValueError:
        return _unknown_state(request)
    try:
        job = await _job_of(request)
    except JobNotFound:
        return _no_such_job(request)
    session = session_of(request)
    if form_text(form, "from_state") != job.state.value:
        session.flash(
            _(
                "The job moved to %(state)s since you opened it; nothing was changed.",
                state=state_name(job.state.value),
            ),
        )
        return see_other(job_url(job.id))
    try:
        await edits.change_state(services, job, to)
    except JobNotFound:
        return _no_such_job(request)
    except JobChanged:
        log.info("admin.state_change_refused", extra={"job_id": job.id, "to_state": to.value})
        session.flash(
            _(
                "The job changed while you were changing it; nothing was changed."
                " Reload: this page shows it as it is now."
            )
        )
        return see_other(job_url(job.id))
    log.info(
        "admin.state_change",
        extra={"job_id": job.id, "from_state": job.state.value, "to_state": to.value},
    )
    session.flash(
        _(
            "State changed from %(old)s to %(new)s.",
            old=state_name(job.state.value),
            new=state_name(to.value),
        )
    )
    return see_other(job_url(job.id))


@page
async def confirm_delete(request: Request) -> Response:
    """``GET /admin/jobs/{id}/delete``: what deleting the job removes, and the button that does.

    The job page's Delete leads here; nothing is removed until this page's
    form is posted (no script: the panel's CSP allows none, ADR 15).
    """
    services = runtime_of(request).services
    try:
        job = await services.jobs.get(request.path_params["job_id"])
    except JobNotFound:
        return _no_such_job(request)
    files = [row for row in await _file_rows(services, job) if row["record"] is not None]
    context = {
        "job": job,
        "files": files,
        "files_bytes": sum(row["record"].size for row in files),
        "word_count": len(job.text.split()) if job.text else 0,
        "job_url": job_url,
    }
    return render(request, "delete.html", context)


@action
async def delete_job(request: Request, form: FormData) -> Response:
    """``POST /admin/jobs/{id}/delete``: delete the job, its transcript and its files (ADR 36).

    The same core rule as ``DELETE /api/jobs/{id}``: the job is gone at once,
    a worker still holding it writes nothing and removes what it stored.
    """
    services = runtime_of(request).services
    job_id = request.path_params["job_id"]
    if not well_formed_id(job_id):
        return _no_such_job(request)
    try:
        files = await deletion.delete_job(services, job_id)
    except JobNotFound:
        return _no_such_job(request)
    log.info("admin.job_deleted", extra={"job_id": job_id, "files": files})
    session_of(request).flash(_("The job, its transcript and its files were deleted."))
    return see_other(f"{PREFIX}/")


async def _job_of(request: Request) -> Job:
    """The job of the path's id; ``JobNotFound`` for an unknown one or one no id could be."""
    return await _job_by_id(runtime_of(request).services, request.path_params["job_id"])


async def _job_by_id(services: Services, job_id: str) -> Job:
    """The job with this id; ``JobNotFound`` too for text no id could be (never looked up)."""
    if not well_formed_id(job_id):
        raise JobNotFound()
    return await services.jobs.get(job_id)


@action
async def rename_speakers(request: Request, form: FormData) -> Response:
    """``POST /admin/jobs/{id}/speakers``: the names typed for each speaker, compare-and-set."""
    services = runtime_of(request).services
    try:
        job = await _job_of(request)
    except JobNotFound:
        return _no_such_job(request)
    session = session_of(request)
    new = {s.id: form_text(form, s.id) for s in job.speakers if form_text(form, s.id)}
    try:
        await speakers.rename_speakers(services, job, new)
    except JobNotFound:
        return _no_such_job(request)
    except speakers.BadSpeakers as exc:
        session.flash(_("Nothing was renamed: %(reason)s.", reason=exc))
        return see_other(job_url(job.id))
    except JobChanged:
        session.flash(_("The job changed while you were renaming; nothing was changed."))
        return see_other(job_url(job.id))
    log.info("admin.speakers_renamed", extra={"job_id": job.id, "count": len(new)})
    session.flash(_("Speakers renamed."))
    return see_other(job_url(job.id))


def _no_such_job(request: Request) -> Response:
    return message(request, _("No such job"), _("No job has this id."), status_code=404)


def _unknown_state(request: Request) -> Response:
    return message(request, _("Unknown state"), _("There is no such state."), status_code=400)
