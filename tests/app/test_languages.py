"""The pages in the reader's language (SPEC §26, ADR 77): Accept-Language, the switch, dates."""

from __future__ import annotations

import html
import json
import re

import httpx

from tests.app.test_workspace import SECRET, csrf, person
from tests.app.test_workspace import owner as owner  # noqa: PLC0414 - the fixture, shared
from tests.app.test_workspace_search import recording
from tests.support.admin import in_process_client, log_in
from transcriber_app.bootstrap import Runtime
from transcriber_app.web.language import COOKIE

RUSSIAN = {"Accept-Language": "ru-RU,ru;q=0.9,en;q=0.8"}
_HTML_LANG = re.compile(r'<html lang="([^"]+)">')


def lang_of(page: httpx.Response) -> str:
    """The page's ``<html lang>``."""
    match = _HTML_LANG.search(page.text)
    assert match is not None, page.text
    return match[1]


def switch_to(page: httpx.Response, code: str) -> dict[str, str]:
    """The header switch's form on ``page``, asking for ``code``."""
    action = re.search(r'<form method="post" action="([^"]+/language)"', page.text)
    assert action is not None, page.text
    switch = page.text[action.start() :]
    next_field = re.search(r'name="next" value="([^"]*)"', switch)
    assert next_field is not None
    assert f'name="language" value="{code}"' in switch
    return {"csrf": csrf(switch), "next": next_field[1], "language": code}


async def test_accept_language_russian_gives_russian_pages_on_both_sides(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """Signed out and in, workspace and panel: ``<html lang="ru">``, Russian words, the header."""
    async with in_process_client(runtime) as stranger:
        login = await stranger.get("/w/login", headers=RUSSIAN)
        assert lang_of(login) == "ru"
        assert login.headers["content-language"] == "ru"
        assert "<h1>Войти</h1>" in login.text
        assert "Sign in" not in login.text
        # The panel's door is the same form (ADR 76), in the same language.
        admin_login = await stranger.get("/admin/login", headers=RUSSIAN)
        assert lang_of(admin_login) == "ru"
        assert "<h1>Войти</h1>" in admin_login.text
        # A stylesheet is the same in every language: no Content-Language, no Vary on it.
        css = await stranger.get("/w/static/workspace.css", headers=RUSSIAN)
        assert "content-language" not in css.headers
    panel = await owner.get("/admin/people", headers=RUSSIAN)
    assert lang_of(panel) == "ru"
    assert "<h1>Люди</h1>" in panel.text
    assert ">Задания</a>" in panel.text
    alice = await person(runtime, owner, "alice")
    home = await alice.get("/w/", headers=RUSSIAN)
    assert lang_of(home) == "ru"
    assert "<h1>Ваши записи</h1>" in home.text
    # The scripts' words travel with the page, in its language.
    strings = re.search(r"data-strings='([^']+)'", home.text)
    assert strings is not None
    assert json.loads(html.unescape(strings[1]))["saved"] == "Сохранено."
    # The switch names the other language in itself, never by its code.
    assert ">English</button>" in home.text
    await alice.aclose()


async def test_other_languages_and_no_header_get_english(runtime: Runtime) -> None:
    """German (no catalog), a wildcard or nothing: English, the switch offering "Русский"."""
    async with in_process_client(runtime) as stranger:
        for headers in ({"Accept-Language": "de-DE,de;q=0.9"}, {"Accept-Language": "*"}, {}):
            page = await stranger.get("/w/login", headers=headers)
            assert lang_of(page) == "en"
            assert "<h1>Sign in</h1>" in page.text
            assert 'value="ru" lang="ru">Русский</button>' in page.text


async def test_the_persons_choice_is_kept_across_sessions(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """A person who picks Russian gets it after signing in again elsewhere, whatever the browser."""
    alice = await person(runtime, owner, "alice")
    page = await alice.get("/w/tokens")
    assert lang_of(page) == "en"
    answer = await alice.post("/w/language", data=switch_to(page, "ru"))
    assert answer.status_code == 303
    assert answer.headers["location"] == "/w/tokens"
    assert f"{COOKIE}=ru" in answer.headers["set-cookie"]
    assert lang_of(await alice.get("/w/tokens")) == "ru"
    stored = await runtime.people.find_person("alice")
    assert stored is not None
    assert stored.language == "ru"
    # Another browser, English by its header and without the cookie: Russian once signed in.
    async with in_process_client(runtime) as laptop:
        login = await laptop.get("/w/login", headers={"Accept-Language": "en"})
        assert lang_of(login) == "en"
        form = {"csrf": csrf(login.text), "name": "alice", "password": SECRET, "next": "/w/"}
        assert (await laptop.post("/w/login", data=form)).status_code == 303
        home = await laptop.get("/w/", headers={"Accept-Language": "en"})
        assert lang_of(home) == "ru"
        assert "<h1>Ваши записи</h1>" in home.text
        # Back to English from there: kept in the row too.
        back = await laptop.post("/w/language", data=switch_to(home, "en"))
        assert back.status_code == 303
    stored = await runtime.people.find_person("alice")
    assert stored is not None
    assert stored.language == "en"
    assert lang_of(await alice.get("/w/", headers=RUSSIAN)) == "en"
    await alice.aclose()


async def test_the_switch_signed_out_is_a_cookie_and_the_owners_is_kept_too(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """Signed out, the choice lives in the browser's cookie; the owner's in their row as well."""
    async with in_process_client(runtime) as stranger:
        login = await stranger.get("/admin/login")
        answer = await stranger.post("/admin/language", data=switch_to(login, "ru"))
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/admin/")
        page = await stranger.get("/admin/login", headers={"Accept-Language": "en"})
        assert lang_of(page) == "ru"
        # The same cookie serves the workspace's pages.
        assert lang_of(await stranger.get("/w/login")) == "ru"
        # A forged switch (no CSRF token) changes nothing; an unknown code neither.
        forged = await stranger.post("/admin/language", data={"language": "en"})
        assert forged.status_code == 403
        workspace = await stranger.get("/w/login")
        unknown = {**switch_to(workspace, "en"), "language": "xx"}
        refused = await stranger.post("/w/language", data=unknown)
        assert refused.status_code == 303
        assert "set-cookie" not in refused.headers or COOKIE not in refused.headers["set-cookie"]
        assert lang_of(await stranger.get("/w/login")) == "ru"
    panel = await owner.get("/admin/")
    answer = await owner.post("/admin/language", data=switch_to(panel, "ru"))
    assert answer.status_code == 303
    jobs = await owner.get("/admin/")
    assert lang_of(jobs) == "ru"
    assert "<h1>Задания</h1>" in jobs.text
    # The owner is a person (ADR 76): the choice is kept in their row, for every browser.
    me = await runtime.people.find_owner()
    assert me is not None
    assert me.language == "ru"
    async with in_process_client(runtime) as laptop:
        landed = await log_in(laptop)
        assert landed.headers["location"] == "/admin/"
        assert lang_of(await laptop.get("/admin/", headers={"Accept-Language": "en"})) == "ru"


async def test_dates_and_states_read_as_the_language_writes_them(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """A recording's date and state, in the list and the panel: "1 Mar, 12:00" / "1 мар., 12:00"."""
    alice = await person(runtime, owner, "alice")
    stored = await runtime.people.find_person("alice")
    assert stored is not None
    job = await recording(runtime, stored, "hello there")
    english = await alice.get("/w/")
    assert ">1 Mar, 12:00<" in english.text
    assert ">done</span>" in english.text
    russian = await alice.get("/w/", headers=RUSSIAN)
    assert ">1 мар., 12:00<" in russian.text
    assert ">готово</span>" in russian.text
    rows = (await alice.get("/w/recordings.json", headers=RUSSIAN)).json()["jobs"]
    assert rows[0]["state"] == "done"
    assert rows[0]["state_name"] == "готово"
    assert rows[0]["when"] == "1 мар., 12:00"
    detail = await owner.get(f"/admin/jobs/{job.id}", headers=RUSSIAN)
    assert "1 мар. 2026\N{NARROW NO-BREAK SPACE}г., 12:00:00.000 UTC" in detail.text
    assert "2 слова" in detail.text
    await alice.aclose()


async def test_the_upload_pages_languages_are_named(
    runtime: Runtime, owner: httpx.AsyncClient
) -> None:
    """The recognition language picker lists names in the reader's language, not bare codes."""
    alice = await person(runtime, owner, "alice")
    english = await alice.get("/w/upload")
    assert '<option value="auto" selected>detect it</option>' in english.text
    assert '<option value="ru">Russian</option>' in english.text
    russian = await alice.get("/w/upload", headers=RUSSIAN)
    assert '<option value="ru">Русский</option>' in russian.text
    assert '<option value="en">Английский</option>' in russian.text
    await alice.aclose()
