"""How the panel answers: the Jinja environment and its filters, pages, messages, links.

Templates autoescape everything, so a job's error or text holding HTML shows
as text; an undefined name in a template is an error, not an empty string.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from transcriber_app.web import language
from transcriber_app.web.sessions import CSRF_FIELD, session_of

#: Where the panel lives on the service's port.
PREFIX = "/admin"
#: Where the workspace lives: the owner's own recordings are there too (ADR 76).
WORKSPACE_PREFIX = "/w"
#: The panel's own files: templates and the stylesheet.
HERE = Path(__file__).parent
#: Templates both sides include: the header's language switch.
SHARED_TEMPLATES = HERE.parent / "templates"


#: A stored time in full (UTC, to the millisecond) in the request's language, or a dash.
format_time = language.format_when
#: A list's narrow column (UTC) in the request's language; the full time goes in its title.
format_short_time = language.format_short_when


def format_length(seconds: float | None) -> str:
    """A recording's length as ``m:ss`` or ``h:mm:ss``; ``—`` before it is measured."""
    if seconds is None:
        return "—"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_size(size: int) -> str:
    """Bytes with the language's separators and, from a KiB up, a rounded binary unit."""
    text = language.ngettext(
        "%(num)s byte", "%(num)s bytes", size, num=language.format_number(size)
    )
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            if size < 1024:
                return text
            return f"{text} ({language.format_number(round(value, 1))} {unit})"
    return text


def shown_title(title: str | None, created: datetime) -> str:
    """A recording's title, or its dated default in the request's language (ADR 79)."""
    if title is not None:
        return title
    return language._("Recording of %(when)s", when=language.format_day(created))


def state_name(state: str) -> str:
    """A job state as the pages call it, in the request's language."""
    names = {
        "fetch": language._("fetch"),
        "convert": language._("convert"),
        "recognize": language._("recognize"),
        "check": language._("check"),
        "done": language._("done"),
        "failed": language._("failed"),
        "dead": language._("dead"),
    }
    return names.get(state, state)


def page_environment(templates_folder: Path) -> jinja2.Environment:
    """Jinja2 for pages of this panel's look: autoescaped, strict, translated, with its filters."""
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [jinja2.FileSystemLoader(templates_folder), jinja2.FileSystemLoader(SHARED_TEMPLATES)]
        ),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    language.install(env)
    env.filters["when"] = format_time
    env.filters["short_when"] = format_short_time
    env.filters["length_of"] = format_length
    env.filters["size"] = format_size
    env.filters["span"] = language.format_span
    env.filters["number"] = language.format_number
    env.filters["tenths"] = language.format_tenths
    env.filters["state_name"] = state_name
    env.filters["quoted_list"] = language.quoted_list
    # A recording's title, or its dated default (ADR 79): ``shown_title(job.title, job.created)``.
    env.globals["shown_title"] = shown_title
    return env


templates = Jinja2Templates(env=page_environment(HERE / "templates"))


def render(
    request: Request,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The page ``template`` with the session's owner flag, CSRF token and one-shot flash."""
    session = session_of(request)
    full = {
        "owner": session.is_owner,
        "csrf": session.csrf_token(),
        "csrf_field": CSRF_FIELD,
        "flash": session.take_flash(),
        "prefix": PREFIX,
        "workspace_prefix": WORKSPACE_PREFIX,
        **(context or {}),
    }
    return templates.TemplateResponse(
        request, template, full, status_code=status_code, headers=dict(headers or {})
    )


def message(request: Request, title: str, text: str, *, status_code: int) -> Response:
    """A page that only says something: a refusal, a missing job."""
    return render(request, "message.html", {"title": title, "text": text}, status_code=status_code)


def plain(text: str, *, status_code: int) -> Response:
    """A one-line answer without a page, for downloads and refused posts."""
    return PlainTextResponse(f"{text}\n", status_code=status_code)


def see_other(url: str) -> RedirectResponse:
    """303: go and GET ``url`` (after a post, or to the login page)."""
    return RedirectResponse(url, status_code=303)


def job_url(job_id: str) -> str:
    """The job's page."""
    return f"{PREFIX}/jobs/{quote(job_id, safe='')}"


def file_url(file_id: str) -> str:
    """The file's download."""
    return f"{PREFIX}/files/{quote(file_id, safe='')}"
