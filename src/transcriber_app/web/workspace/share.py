"""Files shared from another app (the manifest's ``share_target``): ``POST /w/share`` (ADR 80).

The phone's share sheet posts the shared recording as the upload's own
multipart form (``file``) in a top-level navigation that carries no page
and so no CSRF token. What stands in for it: the browser says where the
request comes from in ``Sec-Fetch-Site`` — ``none`` for a navigation the
browser started itself (a share from the OS, Chromium's share target),
``same-origin`` for this site's own pages — and the route takes no other
value (nor none at all); a form on another site posts ``cross-site`` (and
without the session cookie, ``SameSite=Lax``), so it is refused before a
byte of its body is read. The
recording goes through the one way in (``web.intake``, ADR 74) as the
person's, and the browser is sent on to its page.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from transcriber_app.web.api.handlers import refuse_unfit_body
from transcriber_app.web.errors import ApiError
from transcriber_app.web.intake import intake
from transcriber_app.web.language import _
from transcriber_app.web.uploads import CLOSE
from transcriber_app.web.workspace import views
from transcriber_app.web.workspace.views import PREFIX
from transcriber_core.people import Person

#: ``Sec-Fetch-Site`` values of a share: the browser's own navigation, or this site's page.
TRUSTED_SITES = frozenset({"none", "same-origin"})


def _from_here(request: Request) -> bool:
    """True when the browser says the post did not come from another site."""
    return request.headers.get("sec-fetch-site", "").lower() in TRUSTED_SITES


async def _person(request: Request, *, again: bool = False) -> Person:
    """The signed-in person the share is for, the post coming from no other site; else 403.

    ``again``: read the person from the store once more (they may have been disabled).
    """
    if not _from_here(request):
        raise ApiError(403, "cross_site", "a share from another site is refused")
    person = await (views.signed_in_again if again else views.signed_in)(request)
    if person is None:
        raise ApiError(403, "not_signed_in", "sign in first")
    return person


async def _admit(request: Request) -> tuple[str | None, str | None]:
    """The person's owner key before the body is read, and no dedup key (one share, one job)."""
    person = await _person(request)
    refuse_unfit_body(request)
    return person.owner_key, None


async def _still_signed_in(request: Request) -> str | None:
    """The gate asked again once the body is in (ADR 67)."""
    return (await _person(request, again=True)).owner_key


def _refused(request: Request, error: ApiError) -> Response:
    """The refusal as a page: the share is a navigation, the person reads what happened."""
    if error.code == "not_signed_in":
        target = f"{PREFIX}/login?{urlencode({'next': PREFIX + '/upload'})}"
        title, text = _("Sign in first"), _("Sign in, then share the recording again.")
        context = {"title": title, "text": text, "link": target, "link_text": _("Sign in")}
    else:
        text = _("The recording was refused: %(reason)s.", reason=error.message)
        context = {"title": _("Not sent"), "text": text}
    return views.render(request, "message.html", context, status_code=error.status, headers=CLOSE)


async def share(request: Request) -> Response:
    """``POST /w/share``: the shared recording into the person's jobs; 303 to its page."""
    try:
        answer = await intake(request, _admit, _still_signed_in)
    except ApiError as error:
        return _refused(request, error)
    # The intake's 202 names the job in its Location (/api/status/{id}).
    job_id = answer.headers["location"].rsplit("/", 1)[-1]
    return RedirectResponse(f"{PREFIX}/recordings/{job_id}", status_code=303)
