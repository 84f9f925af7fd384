"""The admin panel of SPEC §8: Jinja2 pages under ``/admin`` for the one owner.

Pages: setup (with the startup link's token), login, logout, the password
change, the jobs list (state filter, find by id, newest first, paginated), a
job's detail with its files, file download, and the state change that also
revives a dead job. Sessions live in the database (``sessions.py``, ADR 17).

Every page but setup and login needs the owner's session: an anonymous page
request is sent to the login page (303), an anonymous download or form post
is refused with 403, and neither learns whether the job or file exists.
Every form carries the session's CSRF token; a post without the right one is
refused with 403. Templates autoescape everything, so a job's error or text
holding HTML shows as text.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.datastructures import FormData
from starlette.middleware import Middleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from transcriber_app.web.auth import (
    AdminState,
    claim_attempt,
    client_address,
    hash_password,
    password_problem,
    verify_password,
)
from transcriber_app.web.sessions import CSRF_FIELD, ServerSessions, session_of
from transcriber_app.web.state import runtime_of
from transcriber_core import edits
from transcriber_core.entities import FileRecord, Job, State
from transcriber_core.errors import FileNotFound, JobNotFound, TranscriberError
from transcriber_core.ports import FileStore

log = logging.getLogger("transcriber.admin")

#: Jobs per page of the list.
PAGE_SIZE = 50
#: Pages beyond this are not offered; the offset would only make SQLite skip rows.
MAX_PAGE = 100_000
#: Where the panel lives on the service's port.
PREFIX = "/admin"
#: The largest request body the panel reads; its forms hold a few short fields.
MAX_FORM_BYTES = 64 * 1024

_HERE = Path(__file__).parent
Handler = Callable[[Request], Awaitable[Response]]

#: Headers on every admin answer: nothing cached, framed, referred or run.
SECURITY_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self';"
        " frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
}


def _when(moment: datetime | None) -> str:
    """A stored time for people: UTC to the millisecond, or a dash."""
    if moment is None:
        return "—"
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"


def _size(size: int) -> str:
    """Bytes with thousands separators and, from a KiB up, a rounded binary unit."""
    text = f"{size:,} bytes"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return text if size < 1024 else f"{text} ({value:.1f} {unit})"
    return text


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["size"] = _size
    return env


templates = Jinja2Templates(env=_environment())


def revive_state(job: Job) -> State:
    """The step a revived job starts again from: the first one whose result it lacks.

    Keeping the recognizer's operation or the converted audio spares a second
    recognition (which costs money) or a second conversion.
    """
    if job.operation_id is not None:
        return State.CHECK
    if job.converted_file_id is not None:
        return State.RECOGNIZE
    return State.CONVERT


# -- plumbing -------------------------------------------------------------------


def _admin(request: Request) -> AdminState:
    admin: AdminState = request.app.state.admin
    return admin


def _render(
    request: Request,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    session = session_of(request)
    full = {
        "owner": session.is_owner,
        "csrf": session.csrf_token(),
        "csrf_field": CSRF_FIELD,
        "flash": session.take_flash(),
        "prefix": PREFIX,
        **(context or {}),
    }
    return templates.TemplateResponse(
        request, template, full, status_code=status_code, headers=dict(headers or {})
    )


def _message(request: Request, title: str, text: str, *, status_code: int) -> Response:
    return _render(request, "message.html", {"title": title, "text": text}, status_code=status_code)


def _refused(text: str = "Log in as the owner first.") -> Response:
    """The answer to an anonymous download or form post: no page, no hint of what exists."""
    return PlainTextResponse(f"{text}\n", status_code=403)


def _client(request: Request) -> str:
    """Who is asking, for the login back-off: the peer, or who a trusted proxy says it is."""
    peer = request.client.host if request.client else None
    forwarded = request.headers.getlist("x-forwarded-for")
    return client_address(peer, forwarded, _admin(request).trusted_proxies)


def _job_url(job_id: str) -> str:
    return f"{PREFIX}/jobs/{quote(job_id, safe='')}"


def _safe_next(target: object) -> str:
    """Where to go after login: a path inside the panel, never another site."""
    if (
        isinstance(target, str)
        and target.startswith(f"{PREFIX}/")
        and not target.startswith("//")
        and "\\" not in target
        and all(32 < ord(char) < 127 for char in target)
    ):
        return target
    return f"{PREFIX}/"


def _stale_form() -> Response:
    return _refused("The form is stale or forged; reload the page and try again.")


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


async def _form(request: Request) -> FormData:
    return await request.form(max_files=0, max_fields=20)


def page(handler: Handler) -> Handler:
    """Only the owner sees the page; anyone else is sent to the login page."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        if not session_of(request).is_owner:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return _see_other(f"{PREFIX}/login?{urlencode({'next': target})}")
        return await handler(request)

    return guarded


def action(handler: Callable[[Request, FormData], Awaitable[Response]]) -> Handler:
    """Only the owner may post, with the session's CSRF token; anyone else gets 403."""

    @functools.wraps(handler)
    async def guarded(request: Request) -> Response:
        session = session_of(request)
        if not session.is_owner:
            return _refused()
        form = await _form(request)
        if not session.csrf_ok(form.get(CSRF_FIELD)):
            return _stale_form()
        return await handler(request, form)

    return guarded


# -- owner account ----------------------------------------------------------------


async def setup_page(request: Request) -> Response:
    """``GET /admin/setup?token=…``: the form that creates the owner, for the startup link."""
    runtime = runtime_of(request)
    if await runtime.owners.get_owner_hash() is not None:
        return _owner_exists(request)
    token = request.query_params.get("token", "")
    if not _setup_accepts(request, token):
        return _bad_setup_link(request)
    return _render(request, "setup.html", {"token": token, "problem": None})


async def setup_submit(request: Request) -> Response:
    """``POST /admin/setup``: store the owner's password hash and log the owner in."""
    form = await _form(request)
    if not session_of(request).csrf_ok(form.get(CSRF_FIELD)):
        return _stale_form()
    runtime = runtime_of(request)
    if await runtime.owners.get_owner_hash() is not None:
        return _owner_exists(request)
    token = _text(form, "token")
    if not _setup_accepts(request, token):
        return _bad_setup_link(request)
    password, confirm = _text(form, "password"), _text(form, "confirm")
    problem = password_problem(password, confirm)
    if problem is not None:
        context = {"token": token, "problem": problem}
        return _render(request, "setup.html", context, status_code=400)
    password_hash = await hash_password(password)
    if not await runtime.owners.create_owner(password_hash, now=runtime.services.clock.now()):
        return _owner_exists(request)
    _admin(request).setup = None
    log.info("admin.owner_created")
    session = session_of(request)
    await session.log_in()
    session.flash("The owner account is ready; you are logged in.")
    return _see_other(f"{PREFIX}/")


def _setup_accepts(request: Request, token: str) -> bool:
    link = _admin(request).setup
    return link is not None and link.accepts(token, runtime_of(request).services.clock.now())


def _owner_exists(request: Request) -> Response:
    return _message(
        request,
        "The owner exists",
        "The owner account was already created; setup links no longer work. Log in instead.",
        status_code=403,
    )


def _bad_setup_link(request: Request) -> Response:
    return _message(
        request,
        "Setup link refused",
        "This setup link is wrong or has expired. Restart the service to get a new one in its log.",
        status_code=403,
    )


async def login_page(request: Request) -> Response:
    """``GET /admin/login``: the password form, or the list for a logged-in owner."""
    if session_of(request).is_owner:
        return _see_other(f"{PREFIX}/")
    target = _safe_next(request.query_params.get("next"))
    return _render(request, "login.html", {"next": target, "problem": None})


async def login_submit(request: Request) -> Response:
    """``POST /admin/login``: check the password (slowly, throttled) and start the session."""
    form = await _form(request)
    if not session_of(request).csrf_ok(form.get(CSRF_FIELD)):
        return _stale_form()
    runtime, admin = runtime_of(request), _admin(request)
    target = _safe_next(form.get("next"))
    client, now = _client(request), runtime.services.clock.now()
    # Counted as a failure before the password is checked, so parallel guesses meet the
    # back-off too; a right password clears it below.
    wait = await claim_attempt(runtime.owners, client, now, admin.access)
    if wait is not None:
        return _too_many(request, "login.html", {"next": target}, wait)
    password_hash = await runtime.owners.get_owner_hash()
    if password_hash is None:
        problem = "No owner exists yet: open the setup link from the service's startup log."
        return _render(request, "login.html", {"next": target, "problem": problem}, status_code=403)
    if not await verify_password(password_hash, _text(form, "password")):
        log.warning("admin.login_failed", extra={"client": client})
        return _render(
            request,
            "login.html",
            {"next": target, "problem": "Wrong password."},
            status_code=403,
        )
    await runtime.owners.clear_login_failures(client)
    await session_of(request).log_in()
    log.info("admin.login", extra={"client": client})
    return _see_other(target)


def _too_many(
    request: Request, template: str, context: Mapping[str, Any], wait: timedelta
) -> Response:
    """429 with ``Retry-After``: the client's back-off has not passed yet."""
    seconds = max(1, math.ceil(wait.total_seconds()))
    problem = f"Too many wrong passwords; try again in {seconds} seconds."
    return _render(
        request,
        template,
        {**context, "problem": problem},
        status_code=429,
        headers={"Retry-After": str(seconds)},
    )


async def logout(request: Request) -> Response:
    """``POST /admin/logout``: end the session (CSRF-checked, so no page can log you out)."""
    form = await _form(request)
    if not session_of(request).csrf_ok(form.get(CSRF_FIELD)):
        return _stale_form()
    await session_of(request).log_out()
    return _see_other(f"{PREFIX}/login")


@page
async def account_page(request: Request) -> Response:
    """``GET /admin/account``: the form that changes the owner's password."""
    return _render(request, "account.html", {"problem": None})


@action
async def change_password(request: Request, form: FormData) -> Response:
    """``POST /admin/account/password``: check the current password, store the new one.

    Every session ends, in the same transaction as the new hash, so a cookie
    left in another browser (or stolen) is dead; this browser gets a fresh
    session. The current password is checked with the login's back-off, so a
    stolen session cannot guess it faster than the login form could.
    """
    runtime, admin = runtime_of(request), _admin(request)
    password, confirm = _text(form, "password"), _text(form, "confirm")
    problem = password_problem(password, confirm)
    if problem is not None:
        return _render(request, "account.html", {"problem": problem}, status_code=400)
    client, now = _client(request), runtime.services.clock.now()
    wait = await claim_attempt(runtime.owners, client, now, admin.access)
    if wait is not None:
        return _too_many(request, "account.html", {}, wait)
    current = await runtime.owners.get_owner_hash()
    if current is None or not await verify_password(current, _text(form, "current")):
        log.warning("admin.password_change_refused", extra={"client": client})
        problem = "The current password is wrong."
        return _render(request, "account.html", {"problem": problem}, status_code=403)
    await runtime.owners.clear_login_failures(client)
    new_hash = await hash_password(password)
    if not await runtime.owners.change_password(new_hash, now=runtime.services.clock.now()):
        return _refused()
    session = session_of(request)
    # The old record went with all the others; this browser starts a new session.
    await session.log_in()
    session.flash("Password changed; every other session was logged out.")
    log.info("admin.password_changed", extra={"client": client})
    return _see_other(f"{PREFIX}/")


# -- jobs --------------------------------------------------------------------------


@page
async def jobs_list(request: Request) -> Response:
    """``GET /admin/``: jobs newest first; ``state`` filters, ``q`` finds an id, ``page`` pages."""
    repo = runtime_of(request).services.repo
    params = request.query_params
    query = params.get("q", "").strip()
    problem = None
    status_code = 200
    if query:
        try:
            job = await repo.get(query)
        except JobNotFound:
            problem = "No job has this id."
            status_code = 404
        else:
            return _see_other(_job_url(job.id))
    state_value = params.get("state", "")
    state = None
    if state_value:
        try:
            state = State(state_value)
        except ValueError:
            return _message(request, "Unknown state", "There is no such state.", status_code=400)
    page_number = _page_number(params.get("page"))
    offset = (page_number - 1) * PAGE_SIZE
    found = await repo.list_jobs(state=state, limit=PAGE_SIZE + 1, offset=offset)
    counts = await repo.count_by_state()

    def link(**changes: Any) -> str:
        wanted: dict[str, Any] = {"state": state.value if state else None, "page": None}
        wanted.update(changes)
        query_string = urlencode({k: v for k, v in wanted.items() if v not in (None, 1)})
        return f"{PREFIX}/" + (f"?{query_string}" if query_string else "")

    context = {
        "jobs": found[:PAGE_SIZE],
        "state": state,
        "states": list(State),
        "counts": counts,
        "total": sum(counts.values()),
        "page": page_number,
        "newer_url": link(page=page_number - 1) if page_number > 1 else None,
        "older_url": link(page=page_number + 1) if len(found) > PAGE_SIZE else None,
        "state_url": lambda value: link(state=value),
        "job_url": _job_url,
        "query": query,
        "problem": problem,
    }
    return _render(request, "jobs.html", context, status_code=status_code)


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
        job = await services.repo.get(request.path_params["job_id"])
    except JobNotFound:
        return _message(request, "No such job", "No job has this id.", status_code=404)
    files = []
    for role, file_id in (
        ("source", job.source_file_id),
        ("converted", job.converted_file_id),
        ("object storage copy", job.storage_file_id),
    ):
        if file_id is None:
            continue
        try:
            record: FileRecord | None = await services.repo.get_file(file_id)
        except FileNotFound:
            record = None
        downloadable = record is not None and _store_for(request, record) is not None
        files.append({"role": role, "id": file_id, "record": record, "downloadable": downloadable})
    lease_until = (
        job.acquire_time + services.settings.lease
        if job.acquisition_id is not None and job.acquire_time is not None
        else None
    )
    context = {
        "job": job,
        "files": files,
        "states": list(State),
        "revive_to": revive_state(job) if job.state in (State.DEAD, State.FAILED) else None,
        "lease_until": lease_until,
        "word_count": len(job.text.split()) if job.text else 0,
        "file_url": lambda file_id: f"{PREFIX}/files/{quote(file_id, safe='')}",
        "job_url": _job_url,
    }
    return _render(request, "job.html", context)


@action
async def change_state(request: Request, form: FormData) -> Response:
    """``POST /admin/jobs/{id}/state``: move the job through the core's transition as the owner.

    The owner's transition clears lease, delay, attempts and error (SPEC §8);
    the workers of the new state are woken so a revived job starts at once.
    The form carries the state the owner saw: a job that has moved since is
    not touched, so nobody revives a job that someone else already revived.
    """
    services = runtime_of(request).services
    job_id = request.path_params["job_id"]
    try:
        to = State(_text(form, "state"))
    except ValueError:
        return _message(request, "Unknown state", "There is no such state.", status_code=400)
    try:
        job = await services.repo.get(job_id)
    except JobNotFound:
        return _message(request, "No such job", "No job has this id.", status_code=404)
    if _text(form, "from_state") != job.state.value:
        session_of(request).flash(
            f"The job moved to {job.state.value} since you opened it; nothing was changed.",
        )
        return _see_other(_job_url(job.id))
    try:
        await edits.change_state(services, job, to)
    except JobNotFound:
        return _message(request, "No such job", "No job has this id.", status_code=404)
    log.info(
        "admin.state_change",
        extra={"job_id": job.id, "from_state": job.state.value, "to_state": to.value},
    )
    session_of(request).flash(f"State changed from {job.state.value} to {to.value}.")
    return _see_other(_job_url(job.id))


# -- files -------------------------------------------------------------------------


def _store_for(request: Request, record: FileRecord) -> FileStore | None:
    """The service's store that holds the record's location, if it has one."""
    services = runtime_of(request).services
    for store in (services.files, services.recognizer_files):
        if store is not None and store.location == record.location:
            return store
    return None


async def download(request: Request) -> Response:
    """``GET /admin/files/{id}``: the file's bytes as an attachment named ``<id><extension>``."""
    if not session_of(request).is_owner:
        return _refused()
    services = runtime_of(request).services
    try:
        record = await services.repo.get_file(request.path_params["file_id"])
    except FileNotFound:
        return PlainTextResponse("No file has this id.\n", status_code=404)
    store = _store_for(request, record)
    if store is None:
        return PlainTextResponse(
            f"This copy lives in {record.location.value} storage, which this service"
            " does not read.\n",
            status_code=409,
        )
    chunks = store.open(record)
    try:
        # Read the first chunk before answering: a missing file must be a 404,
        # not a 200 that breaks off.
        first = await anext(chunks, b"")
    except FileNotFound:
        return PlainTextResponse("The file's bytes are gone from storage.\n", status_code=404)
    except TranscriberError:
        log.warning("admin.download_failed", extra={"file_id": record.id})
        return PlainTextResponse("Storage did not answer; try again.\n", status_code=503)
    log.info("admin.download", extra={"file_id": record.id, "size": record.size})
    return StreamingResponse(
        _stream(first, chunks),
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{_download_name(record)}"',
            "Content-Length": str(record.size),
        },
    )


def _download_name(record: FileRecord) -> str:
    """The stored name, ``<id><extension>``, with anything a header could choke on replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", record.name)


async def _stream(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    try:
        if first:
            yield first
        async for chunk in rest:
            yield chunk
    finally:
        close = getattr(rest, "aclose", None)
        if close is not None:
            await close()


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


# -- wiring -------------------------------------------------------------------------


class SecurityHeaders:
    """Adds ``SECURITY_HEADERS`` to every answer of the wrapped app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; add the headers to the response's start."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend(
                    (name.lower().encode(), value.encode())
                    for name, value in SECURITY_HEADERS.items()
                    if name.lower().encode() not in present
                )
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def mount() -> Mount:
    """The panel under ``/admin`` with its server-side sessions and its headers on every answer.

    The exception middleware sits inside ``SecurityHeaders``, so the 404 and
    405 that the routing raises are answered with the headers too.
    """
    routes = [
        Route("/", jobs_list, methods=["GET"]),
        Route("/setup", setup_page, methods=["GET"]),
        Route("/setup", setup_submit, methods=["POST"]),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login_submit, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/account", account_page, methods=["GET"]),
        Route("/account/password", change_password, methods=["POST"]),
        Route("/jobs/{job_id}", job_detail, methods=["GET"]),
        Route("/jobs/{job_id}/state", change_state, methods=["POST"]),
        Route("/files/{file_id}", download, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=_HERE / "static"), name="admin-static"),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(ExceptionMiddleware),
        Middleware(ServerSessions),
    ]
    return Mount(PREFIX, routes=routes, middleware=middleware, max_body_size=MAX_FORM_BYTES)
