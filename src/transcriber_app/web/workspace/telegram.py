"""The workspace's Telegram page: a one-time code to link a chat, the linked chats, unlink (ADR 60).

The code is shown once, on the answer to the POST that makes it, and
stored only as the hash of its normal form; it works for
``LINK_CODE_LIFETIME`` on the store's clock, once, and a newer code of the
same person replaces it. In Telegram, ``/link CODE`` in a private chat with
the bot links that chat; its new recordings are then this person's.

The page names the bot (``@username`` from ``getMe``, with its ``t.me``
link), so a person knows whom to write to. aiogram keeps ``getMe``'s answer
on the bot (``Bot.me``), so Telegram is asked once per process; while it
cannot be reached the page says so and still makes codes. Without a bot
(no ``[telegram] token``) the page says none is set up and makes no code.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import attrs
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.language import _
from transcriber_app.web.sessions import session_of
from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace import views
from transcriber_app.web.workspace.credentials import new_link_code
from transcriber_app.web.workspace.views import PREFIX
from transcriber_core import naming
from transcriber_core.errors import Conflict
from transcriber_core.people import (
    LINK_CODE_LIFETIME,
    Person,
    link_code_hash,
    link_code_of,
)

log = logging.getLogger("transcriber.workspace")

#: How long the page waits for Telegram's ``getMe`` the first time; later pages ask nobody.
GET_ME_WITHIN = timedelta(seconds=3)


@attrs.frozen(kw_only=True)
class BotName:
    """What the page says of the bot: whether one is set up, and its username when known."""

    #: False without ``[telegram] token``: no chat can be linked, so no code is made.
    configured: bool
    #: The bot's @username without the @, or None while Telegram cannot be asked.
    username: str | None = None

    @property
    def link(self) -> str | None:
        """The bot's ``t.me`` address, which opens a chat with it."""
        return None if self.username is None else f"https://t.me/{self.username}"


async def bot_name(request: Request) -> BotName:
    """The service's bot as the page names it: asked of Telegram once, then kept by aiogram."""
    intake = runtime_of(request).bot
    if intake is None:
        return BotName(configured=False)
    # aiogram is loaded already whenever a bot is configured (bootstrap imports it then).
    from transcriber_adapters.telegram import (  # noqa: PLC0415
        TelegramUnavailable,
        TokenRejected,
        get_me,
    )

    try:
        me = await get_me(intake.bot, answer_within=GET_ME_WITHIN)
    except (TelegramUnavailable, TokenRejected):
        log.warning("workspace.bot_name_unknown")
        return BotName(configured=True)
    return BotName(configured=True, username=me.username)


async def _page(
    request: Request,
    person: Person,
    *,
    code: str | None = None,
    bot: BotName | None = None,
    status_code: int = 200,
) -> Response:
    chats = await runtime_of(request).people.list_linked_chats(person.id)
    context = {
        "bot": bot or await bot_name(request),
        "chats": chats,
        "code": code,
        "minutes": int(LINK_CODE_LIFETIME.total_seconds() // 60),
        "nav": "telegram",
    }
    return views.render(request, "telegram.html", context, person=person, status_code=status_code)


@views.person_page
async def telegram_page(request: Request, person: Person) -> Response:
    """``GET /w/telegram``: the chats linked to one, and the button that makes a code."""
    return await _page(request, person)


@views.person_action
async def make_code(request: Request, _form: FormData, person: Person) -> Response:
    """``POST /w/telegram/code``: a new one-time code, shown this once; earlier ones stop.

    Without a bot there is nobody to send it to: 409, no code made.
    """
    bot = await bot_name(request)
    if not bot.configured:
        return await _page(request, person, bot=bot, status_code=409)
    code = new_link_code()
    normal = link_code_of(code)
    if normal is None:  # pragma: no cover - new_link_code makes only well-formed codes
        raise AssertionError("a link code that link_code_of refuses")
    try:
        await runtime_of(request).people.make_link_code(
            person.id, code_hash=link_code_hash(normal), lifetime=LINK_CODE_LIFETIME
        )
    except Conflict:  # pragma: no cover - 40 random bits met a live code
        session_of(request).flash(_("Try again."))
        return views.see_other(f"{PREFIX}/telegram")
    log.info("workspace.link_code_made")
    return await _page(request, person, code=code, bot=bot, status_code=201)


@views.person_action
async def unlink(request: Request, _form: FormData, person: Person) -> Response:
    """``POST /w/telegram/{chat_id}/unlink``: that chat's new recordings are no longer one's."""
    # A chat id a database cannot hold (past 64 bits) was a 500: unknown, without a lookup.
    chat_id = naming.chat_id_of(request.path_params["chat_id"])
    done = chat_id is not None and await runtime_of(request).people.unlink_chat(
        chat_id, person_id=person.id
    )
    session_of(request).flash(_("Chat unlinked.") if done else _("No such chat of yours."))
    return views.see_other(f"{PREFIX}/telegram")
