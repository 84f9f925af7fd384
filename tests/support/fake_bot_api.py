"""A fake Telegram Bot API server over real HTTP on 127.0.0.1, for aiogram to talk to.

It serves the few methods the bot uses (getMe, getUpdates with long polling
and offsets, getFile, file downloads, sendMessage, sendDocument,
setWebhook, deleteWebhook, getChatMember, answerCallbackQuery, inline
keyboards and button presses), private chats and supergroups
(a negative chat id), lets a test push user messages carrying files it holds, and
records what the bot sent to each chat. Like Telegram, it refuses (400) a
blank message, a text over 4,096 UTF-16 code units and a caption over 1,024.
``wait_sent`` awaits the n-th message in a chat, so tests never sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiohttp import web

#: A token aiogram accepts; the fake checks it on every request.
TOKEN = "123456789:TEST-fake-bot-api-token_0123456789"
#: The bot the token belongs to.
BOT_USER = {"id": 123456789, "is_bot": True, "first_name": "Transcriber", "username": "test_bot"}
#: The sender of every pushed message: a name that must never reach a log or storage.
SENDER_FIRST_NAME = "Секретный"
SENDER_LAST_NAME = "Отправитель"
SENDER_USERNAME = "secret_sender_login"
#: A group's title: as private as a sender's name.
GROUP_TITLE = "Секретная группа"
#: Longest wait for something the bot should do at once; a hang fails instead of blocking.
WAIT_SECONDS = 5
#: What the cloud Bot API lets a bot download (reference: Telegram bot).
CLOUD_LIMIT = 20 * 1024 * 1024
#: Longest message text and document caption, in UTF-16 code units, as Telegram counts them.
TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024


@attrs.define
class FakeFile:
    """A file a user sent: its ids, the bytes served, and the size Telegram declares."""

    file_id: str
    file_unique_id: str
    data: bytes
    #: The size getFile and the message report; may be larger than ``data`` to test limits.
    declared_size: int
    #: The file's path on the server; absolute in local mode, when the bot reads it from disk.
    file_path: str


@attrs.frozen(kw_only=True)
class Sent:
    """One message the bot sent."""

    method: str
    chat_id: int
    message_id: int
    #: Message text, or the document's caption.
    text: str | None
    #: The message this one replies to, and whether a missing target is allowed.
    reply_to: int | None
    allow_sending_without_reply: bool
    #: For documents: the file name and bytes uploaded.
    filename: str | None = None
    document: bytes | None = None
    #: The inline keyboard sent with it: rows of (text, callback_data).
    buttons: tuple[tuple[tuple[str, str], ...], ...] = ()
    #: The texts it had before edits (``editMessageText``), oldest first.
    history: tuple[str, ...] = ()

    @property
    def body(self) -> str:
        """What a reader sees: the text, or the document's contents."""
        if self.document is not None:
            return self.document.decode("utf-8")
        return self.text or ""


@attrs.frozen(kw_only=True)
class Failure:
    """A scripted error answer for the next call of one method."""

    status: int
    description: str
    retry_after: int | None = None


class FakeBotApi:
    """The server; ``async with FakeBotApi() as api`` starts it on a free port.

    ``local=True`` plays a local Bot API server: no 20 MB limit in getFile.
    """

    def __init__(self, *, local: bool = False, files_dir: Path | None = None) -> None:
        self.local = local
        #: In local mode with a folder, getFile answers absolute paths to files written there.
        self.files_dir = files_dir
        self.files: dict[str, FakeFile] = {}
        self.sent: list[Sent] = []
        #: ``(chat id, message id, text)`` of each edit that changed a message, in order.
        self.edits: list[tuple[int, int, str]] = []
        #: Method names called, in order (lower case).
        self.calls: list[str] = []
        self._updates: list[dict[str, Any]] = []
        #: Every message pushed, by chat and message id (a reply quotes the one it answers).
        self.messages: dict[tuple[int, int], dict[str, Any]] = {}
        #: Per chat, the users getChatMember calls administrators.
        self.admins: dict[int, set[int]] = {}
        #: answerCallbackQuery calls: (callback query id, text or None).
        self.answered: list[tuple[str, str | None]] = []
        #: What the last setWebhook asked for: url, secret_token, allowed_updates.
        self.webhook: dict[str, Any] | None = None
        #: Every update pushed, by id, so a test can have one delivered again.
        self.pushed: dict[int, dict[str, Any]] = {}
        self._failures: dict[str, list[Failure]] = {}
        self._changed = asyncio.Condition()
        self._ids = itertools.count(1)
        self._closing = False
        self._runner: web.AppRunner | None = None
        self.url = ""
        #: When set, downloads send half their bytes and then wait for this event.
        self.hold_downloads: asyncio.Event | None = None
        #: Set when a download has begun sending bytes.
        self.download_started = asyncio.Event()

    async def __aenter__(self) -> FakeBotApi:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._method)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Answer every waiting long poll with nothing, then stop serving."""
        async with self._changed:
            self._closing = True
            self._changed.notify_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # What a test does: files, incoming messages, scripted failures.

    def add_file(
        self, data: bytes, *, declared_size: int | None = None, unique_id: str | None = None
    ) -> FakeFile:
        """Hold ``data`` as a Telegram file; the same ``unique_id`` means the same file."""
        number = next(self._ids)
        unique = unique_id or f"unique-{number}"
        file_path = f"files/file_{number}"
        if self.files_dir is not None:
            path = self.files_dir / f"file_{number}"
            path.write_bytes(data)
            file_path = str(path)
        fake = FakeFile(
            file_id=f"file-id-{number}",
            file_unique_id=unique,
            data=data,
            declared_size=len(data) if declared_size is None else declared_size,
            file_path=file_path,
        )
        self.files[fake.file_id] = fake
        return fake

    async def push(
        self,
        chat_id: int,
        *,
        user_id: int | None = None,
        language_code: str | None = None,
        first_name: str = SENDER_FIRST_NAME,
        **content: Any,
    ) -> int:
        """Queue a message from the secret sender in ``chat_id``; return its message id.

        A negative ``chat_id`` is a supergroup (its title a secret too) and
        ``user_id`` the member who speaks (default: the chat's own id, as in a
        private chat). ``language_code`` is the sender's Telegram language;
        ``first_name`` tells members apart in what the bot says to them.
        """
        message_id = next(self._ids)
        sender: dict[str, Any] = {
            "id": chat_id if user_id is None else user_id,
            "is_bot": False,
            "first_name": first_name,
            "last_name": SENDER_LAST_NAME,
            "username": SENDER_USERNAME,
        }
        if language_code is not None:
            sender["language_code"] = language_code
        chat: dict[str, Any]
        if chat_id < 0:
            chat = {"id": chat_id, "type": "supergroup", "title": GROUP_TITLE}
        else:
            chat = {
                "id": chat_id,
                "type": "private",
                "first_name": SENDER_FIRST_NAME,
                "last_name": SENDER_LAST_NAME,
                "username": SENDER_USERNAME,
            }
        message = {
            "message_id": message_id,
            "date": 1767225600,
            "chat": chat,
            "from": sender,
            **content,
        }
        self.messages[chat_id, message_id] = message
        await self.push_update({"update_id": next(self._ids), "message": message})
        return message_id

    async def push_update(self, update: dict[str, Any]) -> int:
        """Queue a whole update (its ``update_id`` included); return that id."""
        self.pushed[update["update_id"]] = update
        async with self._changed:
            self._updates.append(update)
            self._changed.notify_all()
        return int(update["update_id"])

    async def redeliver(self, message_id: int) -> None:
        """Hand the update that carried ``message_id`` out again, as Telegram may."""
        update = next(u for u in self.pushed.values() if _message_id(u) == message_id)
        async with self._changed:
            if update not in self._updates:
                self._updates.append(update)
                self._updates.sort(key=lambda u: u["update_id"])
            self._changed.notify_all()

    def pending_updates(self) -> list[int]:
        """Ids of the updates not confirmed yet (at or above the last offset asked)."""
        return [update["update_id"] for update in self._updates]

    async def push_text(
        self, chat_id: int, text: str, *, reply_to: int | None = None, **sender: Any
    ) -> int:
        """A text message (a command when it starts with a slash), maybe answering ``reply_to``."""
        content: dict[str, Any] = {"text": text}
        if text.startswith("/"):
            length = len(text.split(maxsplit=1)[0])
            content["entities"] = [{"type": "bot_command", "offset": 0, "length": length}]
        if reply_to is not None:
            content["reply_to_message"] = self.messages[chat_id, reply_to]
        return await self.push(chat_id, **sender, **content)

    async def push_media(
        self,
        chat_id: int,
        kind: str,
        file: FakeFile,
        *,
        file_name: str | None = None,
        mime_type: str | None = None,
        sized: bool = True,
        caption: str | None = None,
        **sender: Any,
    ) -> int:
        """A message with one file of ``kind``: voice, audio, video, video_note or document.

        ``sized=False`` leaves the size out of the message; getFile still states it.
        """
        media: dict[str, Any] = {"file_id": file.file_id, "file_unique_id": file.file_unique_id}
        if sized:
            media["file_size"] = file.declared_size
        if kind in {"voice", "audio", "video", "video_note"}:
            media["duration"] = 3
        if kind == "video":
            media.update(width=640, height=480)
        if kind == "video_note":
            media["length"] = 240
        if file_name is not None:
            media["file_name"] = file_name
        if mime_type is not None:
            media["mime_type"] = mime_type
        extra: dict[str, Any] = {} if caption is None else {"caption": caption}
        return await self.push(chat_id, **sender, **extra, **{kind: media})

    def fail_next(
        self, method: str, status: int, description: str, *, retry_after: int | None = None
    ) -> None:
        """Answer the next call of ``method`` with an error."""
        failure = Failure(status=status, description=description, retry_after=retry_after)
        self._failures.setdefault(method.lower(), []).append(failure)

    # What a test reads back.

    def sent_to(self, chat_id: int) -> list[Sent]:
        """Messages the bot sent to ``chat_id``, in order."""
        return [sent for sent in self.sent if sent.chat_id == chat_id]

    async def delivered(self, chat_id: int) -> list[str]:
        """Texts and document contents delivered to ``chat_id``: the notifier contract's Inbox."""
        return [sent.body for sent in self.sent_to(chat_id)]

    async def wait_sent(
        self, chat_id: int, count: int, *, within: float = WAIT_SECONDS
    ) -> list[Sent]:
        """Wait (at most ``within`` s) until the bot sent ``count`` messages to ``chat_id``; all."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(lambda: len(self.sent_to(chat_id)) >= count)
            return self.sent_to(chat_id)

    async def wait_shown(self, chat_id: int, text: str) -> Sent:
        """Wait (bounded) until a message in ``chat_id`` says ``text``, sent or edited so; it."""
        return await self.wait_shown_where(chat_id, lambda sent: sent.text == text)

    async def wait_shown_where(self, chat_id: int, check: Callable[[Sent], bool]) -> Sent:
        """Wait (bounded) until a message in ``chat_id`` passes ``check``; that message."""

        def showing() -> Sent | None:
            return next((sent for sent in self.sent_to(chat_id) if check(sent)), None)

        async with asyncio.timeout(WAIT_SECONDS), self._changed:
            await self._changed.wait_for(lambda: showing() is not None)
            shown = showing()
            assert shown is not None
            return shown

    # The HTTP side.

    async def _method(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != TOKEN:
            return _error(401, "Unauthorized")
        method = request.match_info["method"].lower()
        self.calls.append(method)
        form = await request.post()
        failures = self._failures.get(method)
        if failures:
            failure = failures.pop(0)
            return _error(failure.status, failure.description, retry_after=failure.retry_after)
        handler = {
            "getme": self._get_me,
            "getupdates": self._get_updates,
            "getfile": self._get_file,
            "sendmessage": self._send_message,
            "senddocument": self._send_document,
            "editmessagetext": self._edit_message_text,
            "deletewebhook": self._delete_webhook,
            "setwebhook": self._set_webhook,
            "getchatmember": self._get_chat_member,
            "answercallbackquery": self._answer_callback_query,
        }.get(method)
        if handler is None:
            return _error(404, "Not Found: method not found")
        return await handler(form)

    async def _get_me(self, form: Any) -> web.Response:
        return _ok(BOT_USER)

    async def _delete_webhook(self, form: Any) -> web.Response:
        self.webhook = None
        return _ok(True)

    async def _answer_callback_query(self, form: Any) -> web.Response:
        text = form.get("text")
        async with self._changed:
            self.answered.append(
                (str(form["callback_query_id"]), None if text is None else str(text))
            )
            self._changed.notify_all()
        return _ok(True)

    async def press(self, sent: Sent, data: str, *, user_id: int | None = None) -> str:
        """A user presses the button with ``data`` under the bot's ``sent``; the query id."""
        query_id = f"query-{next(self._ids)}"
        message: dict[str, Any] = {
            "message_id": sent.message_id,
            "date": 1767225600,
            "chat": {"id": sent.chat_id, "type": "supergroup" if sent.chat_id < 0 else "private"},
            "from": BOT_USER,
            "text": sent.text or "",
        }
        user = {"id": sent.chat_id if user_id is None else user_id, "is_bot": False}
        user["first_name"] = SENDER_FIRST_NAME
        query = {
            "id": query_id,
            "from": user,
            "message": message,
            "chat_instance": "chat-instance",
            "data": data,
        }
        await self.push_update({"update_id": next(self._ids), "callback_query": query})
        return query_id

    async def wait_answered(self, query_id: str) -> str | None:
        """Wait (bounded) for the bot's answerCallbackQuery to ``query_id``; its text."""
        async with asyncio.timeout(WAIT_SECONDS), self._changed:
            await self._changed.wait_for(lambda: any(q == query_id for q, _ in self.answered))
        return next(text for q, text in self.answered if q == query_id)

    async def _get_chat_member(self, form: Any) -> web.Response:
        chat_id, user_id = int(form["chat_id"]), int(form["user_id"])
        status = "administrator" if user_id in self.admins.get(chat_id, set()) else "member"
        user = {"id": user_id, "is_bot": False, "first_name": SENDER_FIRST_NAME}
        member: dict[str, Any] = {"status": status, "user": user}
        if status == "administrator":
            member.update(
                can_be_edited=False,
                is_anonymous=False,
                can_manage_chat=True,
                can_delete_messages=True,
                can_manage_video_chats=True,
                can_restrict_members=True,
                can_promote_members=False,
                can_change_info=True,
                can_invite_users=True,
                can_post_stories=False,
                can_edit_stories=False,
                can_delete_stories=False,
                can_send_welcome_messages=False,
            )
        return _ok(member)

    async def _set_webhook(self, form: Any) -> web.Response:
        allowed = form.get("allowed_updates")
        self.webhook = {
            "url": form.get("url"),
            "secret_token": form.get("secret_token"),
            "allowed_updates": None if allowed is None else json.loads(allowed),
        }
        return _ok(True)

    def update_of(self, chat_id: int, message_id: int) -> dict[str, Any]:
        """The update that carried ``message_id`` (for posting it to a webhook instead)."""
        return next(u for u in self.pushed.values() if _message_id(u) == message_id)

    async def _get_updates(self, form: Any) -> web.Response:
        if self.webhook is not None:
            # As Telegram: no getUpdates while a webhook is set.
            return _error(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = int(form.get("offset", 0))
        timeout = float(form.get("timeout", 0))
        async with self._changed:
            # Updates below the offset are confirmed: Telegram forgets them.
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait_for(lambda: bool(self._updates) or self._closing)
            return _ok([] if self._closing else list(self._updates))

    async def _get_file(self, form: Any) -> web.Response:
        fake = self.files.get(str(form.get("file_id")))
        if fake is None:
            return _error(400, "Bad Request: invalid file_id")
        if not self.local and fake.declared_size > CLOUD_LIMIT:
            return _error(400, "Bad Request: file is too big")
        return _ok(
            {
                "file_id": fake.file_id,
                "file_unique_id": fake.file_unique_id,
                "file_size": fake.declared_size,
                "file_path": fake.file_path,
            }
        )

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != TOKEN:
            return web.Response(status=401)
        path = request.match_info["path"]
        fake = next((f for f in self.files.values() if f.file_path == path), None)
        if fake is None:
            return web.Response(status=404)
        if self.hold_downloads is None:
            return web.Response(body=fake.data, content_type="application/octet-stream")
        response = web.StreamResponse(headers={"Content-Length": str(len(fake.data))})
        await response.prepare(request)
        half = len(fake.data) // 2
        await response.write(fake.data[:half])
        self.download_started.set()
        await self.hold_downloads.wait()
        await response.write(fake.data[half:])
        await response.write_eof()
        return response

    async def _send_message(self, form: Any) -> web.Response:
        text = str(form.get("text", ""))
        # Telegram trims the text, then counts UTF-16 code units (an emoji is two).
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if _utf16_units(text.strip()) > TEXT_LIMIT:
            return _error(400, "Bad Request: message is too long")
        return await self._record("sendmessage", form, text=text)

    async def _edit_message_text(self, form: Any) -> web.Response:
        """Replace a sent message's text, as Telegram does: the same text is an error."""
        chat_id, message_id = int(form["chat_id"]), int(form["message_id"])
        text = str(form.get("text", ""))
        if not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if _utf16_units(text.strip()) > TEXT_LIMIT:
            return _error(400, "Bad Request: MESSAGE_TOO_LONG")
        async with self._changed:
            index = next(
                (
                    at
                    for at, sent in enumerate(self.sent)
                    if (sent.chat_id, sent.message_id) == (chat_id, message_id)
                ),
                None,
            )
            if index is None:
                return _error(400, "Bad Request: message to edit not found")
            sent = self.sent[index]
            buttons = _buttons(form.get("reply_markup"))
            if (sent.text, sent.buttons) == (text, buttons):
                return _error(
                    400,
                    "Bad Request: message is not modified: specified new message content and"
                    " reply markup are exactly the same as a current content and reply markup"
                    " of the message",
                )
            self.sent[index] = attrs.evolve(
                sent, text=text, buttons=buttons, history=(*sent.history, sent.text or "")
            )
            self.edits.append((chat_id, message_id, text))
            self._changed.notify_all()
        return _ok(
            {
                "message_id": message_id,
                "date": 1767225600,
                "edit_date": 1767225601,
                "chat": {"id": chat_id, "type": "private"},
                "from": BOT_USER,
                "text": text,
            }
        )

    async def _send_document(self, form: Any) -> web.Response:
        reference = str(form["document"])
        field = form[reference.removeprefix("attach://")]
        caption = form.get("caption")
        if caption is not None and _utf16_units(str(caption).strip()) > CAPTION_LIMIT:
            return _error(400, "Bad Request: message caption is too long")
        return await self._record(
            "senddocument",
            form,
            text=None if caption is None else str(caption),
            filename=field.filename,
            document=field.file.read(),
        )

    async def _record(
        self,
        method: str,
        form: Any,
        *,
        text: str | None,
        filename: str | None = None,
        document: bytes | None = None,
    ) -> web.Response:
        chat_id = int(form["chat_id"])
        reply = json.loads(form["reply_parameters"]) if "reply_parameters" in form else {}
        reply.setdefault("message_id", _int_or_none(form.get("reply_to_message_id")))
        if "allow_sending_without_reply" in form:
            reply["allow_sending_without_reply"] = form["allow_sending_without_reply"] == "true"
        sent = Sent(
            method=method,
            chat_id=chat_id,
            message_id=next(self._ids),
            text=text,
            reply_to=reply.get("message_id"),
            allow_sending_without_reply=bool(reply.get("allow_sending_without_reply")),
            filename=filename,
            document=document,
            buttons=_buttons(form.get("reply_markup")),
        )
        async with self._changed:
            self.sent.append(sent)
            self._changed.notify_all()
        result: dict[str, Any] = {
            "message_id": sent.message_id,
            "date": 1767225600,
            "chat": {"id": chat_id, "type": "private"},
            "from": BOT_USER,
        }
        if document is not None:
            result["document"] = {"file_id": "sent-doc", "file_unique_id": "sent-doc"}
            if text is not None:
                result["caption"] = text
        else:
            result["text"] = text
        return _ok(result)


async def close_bot(bot: Bot) -> None:
    """Close the bot's HTTP session without aiogram's 250 ms wait for TLS, useless on plain HTTP."""
    assert isinstance(bot.session, AiohttpSession)
    client = await bot.session.create_session()
    await client.close()


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _buttons(markup: Any) -> tuple[tuple[tuple[str, str], ...], ...]:
    if markup is None:
        return ()
    rows = json.loads(str(markup)).get("inline_keyboard", [])
    return tuple(
        tuple((button["text"], button.get("callback_data", "")) for button in row) for row in rows
    )


def _message_id(update: dict[str, Any]) -> int | None:
    message = update.get("message")
    return None if message is None else int(message["message_id"])


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _error(status: int, description: str, *, retry_after: int | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return web.json_response(body, status=status)
