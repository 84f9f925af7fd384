"""The panel's routes, mounted under ``/admin`` with its middleware."""

from __future__ import annotations

from starlette.middleware import Middleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from transcriber_app.web.admin import account, files, jobs, people
from transcriber_app.web.admin.rendering import HERE, PREFIX
from transcriber_app.web.admin.security import MAX_FORM_BYTES, SecurityHeaders
from transcriber_app.web.language import Languages
from transcriber_app.web.sessions import Sessions
from transcriber_app.web.workspace import views


def mount() -> Mount:
    """The panel under ``/admin`` with its server-side sessions and its headers on every answer.

    The exception middleware sits inside ``SecurityHeaders``, so the 404 and
    405 that the routing raises are answered with the headers too.
    """
    routes = [
        Route("/", jobs.jobs_list, methods=["GET"]),
        Route("/setup", account.setup_page, methods=["GET"]),
        Route("/setup", account.setup_submit, methods=["POST"]),
        Route("/reset", account.reset_page, methods=["GET"]),
        Route("/reset", account.reset_submit, methods=["POST"]),
        # The one door (ADR 76): the same form and the same handler as ``/`` and ``/w/login``.
        Route("/login", views.login_page, methods=["GET"]),
        Route("/login", views.login_submit, methods=["POST"]),
        Route("/logout", views.logout, methods=["POST"]),
        Route("/language", views.choose_language, methods=["POST"]),
        Route("/account", account.account_page, methods=["GET"]),
        Route("/account/password", account.change_password, methods=["POST"]),
        Route("/jobs/{job_id}", jobs.job_detail, methods=["GET"]),
        Route("/jobs/{job_id}/state", jobs.change_state, methods=["POST"]),
        Route("/jobs/{job_id}/delete", jobs.confirm_delete, methods=["GET"]),
        Route("/jobs/{job_id}/delete", jobs.delete_job, methods=["POST"]),
        Route("/jobs/{job_id}/speakers", jobs.rename_speakers, methods=["POST"]),
        Route("/jobs/{job_id}/transcript", files.transcript, methods=["GET"]),
        Route("/files/{file_id}", files.download, methods=["GET"]),
        Route("/people", people.people_page, methods=["GET"]),
        Route("/people", people.invite, methods=["POST"]),
        Route("/people/{person_id}/disable", people.disable, methods=["POST"]),
        Route("/people/{person_id}/enable", people.enable, methods=["POST"]),
        Route("/people/{person_id}/delete", people.confirm_delete, methods=["GET"]),
        Route("/people/{person_id}/delete", people.delete, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="admin-static"),
    ]
    middleware = [
        Middleware(SecurityHeaders),
        Middleware(Languages),
        Middleware(ExceptionMiddleware),
        Middleware(Sessions),
    ]
    return Mount(PREFIX, routes=routes, middleware=middleware, max_body_size=MAX_FORM_BYTES)
