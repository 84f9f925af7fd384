"""The live list of one's recordings: rows for the page, and the JSON its script polls (ADR 64).

``GET /w/recordings.json?page=N`` answers the same page of the person's
jobs as ``/w/?page=N``, each as the row the page shows (state, when, length,
what is happening now, the first words or the error), read by one query
(``Listings.list_owned_summaries``: the queue position and the parts are
counted in that statement, the words never read). ``live.js`` asks every
few seconds while the tab is visible and puts the changes in place; any API
process can answer, since everything comes from the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from transcriber_app.web.admin.rendering import (
    format_length,
    format_short_time,
    format_time,
    shown_title,
    state_name,
)
from transcriber_app.web.language import _
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace import views
from transcriber_app.web.workspace.upload import size_limit_text as size_text
from transcriber_core.entities import JobSummary, State
from transcriber_core.people import Person
from transcriber_core.policy import QUEUE_POSITION_LIMIT, percent_done

#: Recordings one page of the list shows.
PAGE_SIZE = 50
#: The deepest page asked for; beyond it the last one is shown.
MAX_PAGE = 10_000
#: How often the page asks while something moves, and while nothing does (milliseconds).
POLL_BUSY_MS = 2_000
POLL_IDLE_MS = 10_000


def _working(state: State) -> str:
    """What a state is called in a row's "now" column while a worker holds the job."""
    if state is State.FETCH:
        return _("fetching the link")
    return _("converting") if state is State.CONVERT else _("recognising")


@attrs.frozen(kw_only=True)
class Row:
    """One recording as the list shows it; the page renders it, the poll sends it as JSON."""

    id: str
    url: str
    #: The person's title, or its dated default (ADR 79).
    title: str
    state: str
    #: The state as the page calls it, in the person's language.
    state_name: str
    #: True once nothing more happens to the job: the page stops asking about it.
    terminal: bool
    #: When it was sent, short (``12-03 11:20``) and full (the cell's title), UTC.
    when: str
    when_full: str
    #: Its length, ``m:ss``, or a dash before it is measured.
    length: str
    #: What is happening now: its place in the queue, parts done, percent; empty once ended.
    now: str
    #: Whole percent recognised, when the recognizer says; else None.
    percent: int | None
    queue_position: int | None
    parts_done: int
    parts_total: int
    #: The transcript's first words, or the error of a job that ended without one.
    preview: str
    #: True when ``preview`` is an error.
    failed: bool

    def to_json(self) -> dict[str, Any]:
        """The row as the poll's JSON sends it."""
        return attrs.asdict(self)


def percent_of(summary: JobSummary) -> int | None:
    """Whole percent of the audio recognised (of a link fetched), while it runs and is told."""
    progress = summary.progress
    if progress is not None and summary.state is State.FETCH:
        if not progress.total:
            return None
        return percent_done(min(progress.seconds_done, progress.total), progress.total)
    if summary.progress is None or not summary.duration:
        return None
    done = min(summary.progress.seconds_done, summary.duration)
    return percent_done(done, summary.duration)


def now_of(summary: JobSummary, percent: int | None) -> str:
    """What is happening to the job now, in a few words; empty once it ended."""
    if summary.state.is_terminal:
        return ""
    # A split recording waits in check, unleased, while its parts are recognised: its parts
    # say how far it is, not its place among the jobs waiting in check.
    if summary.queue_position is not None and not summary.parts_total:
        ahead = summary.queue_position
        if ahead == 0:
            return _("waiting: next in line")
        if ahead >= QUEUE_POSITION_LIMIT:
            return _("waiting: %(count)s+ ahead", count=ahead)
        return _("waiting: %(count)s ahead", count=ahead)
    said = [_working(summary.state)]
    if summary.parts_total:
        # The parts say how far it is; the noted percent of a split recording lags them
        # (it is noted when the job is next looked at), so the two could disagree.
        said.append(
            _("%(done)s of %(total)s parts", done=summary.parts_done, total=summary.parts_total)
        )
    elif summary.state is State.FETCH and summary.progress is not None:
        # The bytes so far, and the percent when the site declared its size (ADR 85).
        said.append(size_text(int(summary.progress.seconds_done)))
        if percent is not None:
            said.append(f"{percent} %")
    elif percent is not None:
        said.append(f"{percent} %")
    return " · ".join(said)


def row_of(summary: JobSummary) -> Row:
    """The list's row of ``summary``."""
    percent = percent_of(summary)
    return Row(
        id=summary.id,
        url=views.recording_url(summary.id),
        title=shown_title(summary.title, summary.created),
        state=summary.state.value,
        state_name=state_name(summary.state.value),
        terminal=summary.state.is_terminal,
        when=format_short_time(summary.created),
        when_full=format_time(summary.created),
        length=format_length(summary.duration),
        now=now_of(summary, percent),
        percent=percent,
        queue_position=summary.queue_position,
        parts_done=summary.parts_done,
        parts_total=summary.parts_total,
        preview=summary.error or summary.preview or "",
        failed=summary.error is not None,
    )


def page_of(request: Request) -> int:
    """The ``page`` query parameter: 0 when missing or not a number, at most ``MAX_PAGE``."""
    try:
        page = max(0, int(request.query_params.get("page", "0")))
    except ValueError:
        page = 0
    return min(page, MAX_PAGE)


async def rows_of(request: Request, person: Person, page: int) -> tuple[Sequence[Row], bool]:
    """The page's rows of the person's own jobs (one query) and whether an older page exists."""
    services = runtime_of(request).services
    summaries = await services.listings.list_owned_summaries(
        person.owner_key,
        lease=services.settings.lease,
        limit=PAGE_SIZE + 1,
        offset=page * PAGE_SIZE,
    )
    return [row_of(s) for s in summaries[:PAGE_SIZE]], len(summaries) > PAGE_SIZE


def poll_ms(rows: Sequence[Row]) -> int:
    """How long the page waits before it asks again: soon while a job of the page moves."""
    return POLL_IDLE_MS if all(row.terminal for row in rows) else POLL_BUSY_MS


@views.person_api
async def recordings_json(request: Request, person: Person) -> Response:
    """``GET /w/recordings.json?page=N``: the rows of that page of one's recordings, live."""
    page = page_of(request)
    rows, more = await rows_of(request, person, page)
    body = {"page": page, "more": more, "poll_ms": poll_ms(rows)}
    return JSONResponse({**body, "jobs": [row.to_json() for row in rows]})


@views.person_page
async def home(request: Request, person: Person) -> Response:
    """``GET /w/``: one's recordings, newest first, as rows the page's script keeps current."""
    page = page_of(request)
    rows, more = await rows_of(request, person, page)
    services = runtime_of(request).services
    usage = None
    if services.usage is not None:
        usage = (await services.usage.usage([person.owner_key]))[person.owner_key]
    context = {
        "usage": usage,
        "quota": services.settings.seconds_per_day,
        "rows": rows,
        "page": page,
        "more": more,
        "poll_ms": poll_ms(rows),
        "nav": "recordings",
    }
    return views.render(request, "home.html", context, person=person)
