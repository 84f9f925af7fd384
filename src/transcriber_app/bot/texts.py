"""What the bot says when it does not take a recording, already has it, or answers a command.

In English and Russian (SPEC §21): ``texts_for`` picks by the chat's
``/language`` when it is one of those, else by the sender's Telegram
``language_code``, else English. The acknowledgement and the transcript
itself are the notifier's (``transcriber_adapters.telegram.notifier``):
``submit`` tells it ``accepted``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import attrs

from transcriber_core.entities import ChatMode, ChatSettings, Job, State
from transcriber_core.errors import QuotaExceeded
from transcriber_core.languages import AUTO


@attrs.frozen(kw_only=True)
class Texts:
    """Every reply of the intake and the commands, in one language."""

    help: str
    refused: str
    too_large: str
    download_failed: str
    unavailable: str
    no_room: str
    #: What a second copy of a recording is told, by the state of the first one's job.
    duplicates: dict[State, str]
    duplicate_in_progress: str
    #: ``/settings``; ``{language}`` and ``{mode}``.
    settings: str
    #: ``/language`` without a code: the current one and ``{accepted}``.
    language_usage: str
    language_set: str
    language_refused: str
    mode_usage: str
    mode_set: dict[ChatMode, str]
    mode_private: str
    #: ``/summary`` without ``auto`` or ``off``.
    summary_usage: str
    #: ``/summary auto`` (True) and ``off`` (False) done.
    summary_set: dict[bool, str]
    #: ``/summary`` with no ``[llm]``: summaries are not offered (SPEC §27).
    summary_unavailable: str
    #: The Summary button pressed: the summary is on its way.
    summary_asked: str
    #: A group's settings changed by someone who is not one of its administrators.
    not_admin: str
    #: ``/transcribe`` that does not answer a recording.
    transcribe_usage: str
    #: The title of a chat's recording (SPEC §26), never its sender's file name
    #: (``voice_note_title``: ``{day}``, ``{mon}`` of ``months``, ``{year}``, ``{hm}``, UTC).
    voice_note_title: str
    #: The months' short names by number, January 1.
    months: dict[int, str]
    #: A transcript button whose job is gone (deleted, swept) or was never this chat's.
    transcript_gone: str
    auto: str
    modes: dict[ChatMode, str]
    #: ``/settings``' summary line, when the service offers summaries: ``{summary}``.
    settings_summary: str
    #: The chat's summary choice: ``/summary auto`` (True) or ``off`` (False).
    summary_choices: dict[bool, str]
    #: A chat that never chose: ``{choice}`` is the service's (``[llm] auto_summary``).
    summary_default: str
    #: The sender's daily quota is spent (ADR 59); ``{resets}``, the next UTC midnight.
    quota_spent: str
    #: ``/link`` without a code, or with something that is not one.
    link_usage: str
    #: ``/link CODE`` worked; ``{name}``, the person's sign-in name.
    link_done: str
    #: A code that is wrong, used or expired.
    link_refused: str
    #: ``/link`` or ``/unlink`` in a group.
    link_private_only: str
    unlink_done: str
    unlink_none: str
    #: The recording is longer than the day's rest: ``{seconds}``, ``{left}``, ``{resets}``.
    quota_too_long: str
    #: The recording was not counted to its end and may not fit: ``{left}``, ``{resets}``.
    quota_maybe_too_long: str
    #: A link refused at once (SPEC §28), by its code; ``link_refused_other`` for any other.
    link_refusals: dict[str, str]
    link_refused_other: str
    #: A link whose host cannot be reached now.
    link_unreachable: str


ENGLISH = Texts(
    help=(
        "Send me a voice message, an audio or video file, or a video note, "
        "and I will reply with its text. A link to a recording (a video or podcast page, "
        "a media file) works too.\n\n"
        "/language <code|auto> sets the language of this chat's recordings\n"
        "/mode auto|command (groups) transcribes every recording, or only those "
        "answered with /transcribe or mentioning me\n"
        "/summary auto|off gives each recording a summary, when the service offers them\n"
        "/settings shows this chat's settings\n"
        "/link <code> shows this chat's recordings in your workspace; /unlink stops it"
    ),
    refused="Sorry, this bot is private and does not take recordings from this chat.",
    too_large=(
        "This file is too large: I can download files up to {limit}. "
        "Please send a shorter or smaller recording."
    ),
    download_failed="I could not download this file from Telegram. Please send it again.",
    unavailable="I cannot take this recording right now. Please send it again in a few minutes.",
    no_room=(
        "I cannot take recordings right now: the service is short of disk space."
        " Please send it again later."
    ),
    duplicates={
        State.DONE: "I already transcribed this recording: see my reply to the first one.",
        State.FAILED: "I already tried this recording and could not transcribe it: {error}",
        State.DEAD: "I already tried this recording and gave up after repeated errors.",
    },
    duplicate_in_progress=(
        "I already have this recording; its text will come as a reply to the first one."
    ),
    settings="Settings of this chat:\nlanguage: {language}\nmode: {mode}",
    language_usage=(
        "The language of this chat's recordings is {language}. "
        "Set it with /language <code>, one of: {accepted}"
    ),
    language_set="Done: this chat's recordings are now transcribed as {language}.",
    language_refused="I cannot transcribe that language. Choose one of: {accepted}",
    mode_usage="Use /mode auto (every recording) or /mode command (only when asked).",
    mode_set={
        ChatMode.AUTO: "Done: I transcribe every recording in this chat.",
        ChatMode.COMMAND: (
            "Done: I transcribe a recording when someone answers it with /transcribe "
            "or mentions me."
        ),
    },
    mode_private="In a private chat I transcribe every recording; /mode is for groups.",
    summary_usage="Use /summary auto (a summary of every recording) or /summary off.",
    summary_set={
        True: "Done: each recording in this chat gets a summary once transcribed.",
        False: "Done: recordings in this chat get no summary.",
    },
    summary_unavailable="Summaries are not available on this service.",
    summary_asked="Summarising: the summary will come here.",
    not_admin="Only this group's administrators can change its settings.",
    transcribe_usage="Answer a voice message or a recording with /transcribe.",
    voice_note_title="Voice note of {day} {mon} {year}, {hm}",
    months=dict(
        enumerate(
            ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
            start=1,
        )
    ),
    transcript_gone="This transcript is no longer kept.",
    auto="auto (detected)",
    link_usage=(
        "To see this chat's recordings in your workspace, make a code on your workspace page"
        " (Telegram) and send it here: /link ABCD-2345"
    ),
    link_done=(
        "Linked: from now on the recordings you send here appear in the workspace of {name}."
        " /unlink undoes it."
    ),
    link_refused=(
        "This code does not work: it is wrong, already used or expired (a code works once,"
        " for 10 minutes). Make a new one on your workspace page."
    ),
    link_private_only="/link and /unlink work in a private chat with me, not in a group.",
    unlink_done="Unlinked: new recordings from this chat no longer go to a workspace.",
    unlink_none="This chat is not linked to a workspace.",
    quota_spent="Your recording time for today is used up. You can send more after {resets}.",
    quota_too_long=(
        "This recording ({seconds} s) is longer than the {left} s left of your time for today."
        " Your time starts again at {resets}."
    ),
    quota_maybe_too_long=(
        "This recording may be longer than the {left} s left of your time for today"
        " (I did not count it to its end). Your time starts again at {resets}."
    ),
    modes={ChatMode.AUTO: "auto (every recording)", ChatMode.COMMAND: "command (when asked)"},
    settings_summary="\nsummary: {summary}",
    summary_choices={True: "auto (every recording)", False: "off"},
    summary_default="{choice}, this service's default",
    link_refusals={
        "url_not_allowed": "This link leads to an address I do not download from.",
        "playlist_not_supported": "This is a link to a playlist. Send a link to one recording.",
        "bad_url": "This does not look like an http(s) link I can open.",
        "links_disabled": "I do not download links. Please send the recording itself as a file.",
    },
    link_refused_other="I cannot download a recording from this link.",
    link_unreachable="The site of this link cannot be reached now. Check it, or send it later.",
)

RUSSIAN = Texts(
    help=(
        "Пришлите голосовое сообщение, аудио- или видеофайл или видеосообщение, "
        "и я отвечу его текстом. Можно и ссылку на запись (страницу видео или подкаста, "
        "медиафайл).\n\n"
        "/language <код|auto> задаёт язык записей в этом чате\n"
        "/mode auto|command (в группах): расшифровывать все записи или только те, "
        "на которые ответили /transcribe или где меня упомянули\n"
        "/summary auto|off: краткое содержание каждой записи, если сервис его предлагает\n"
        "/settings показывает настройки этого чата\n"
        "/link <код> показывает записи этого чата в вашем рабочем пространстве; /unlink отменяет"
    ),
    refused="Извините, это закрытый бот, и он не принимает записи из этого чата.",
    too_large=(
        "Файл слишком большой: я могу скачать файлы до {limit}. "
        "Пришлите, пожалуйста, запись покороче или поменьше."
    ),
    download_failed="Не удалось скачать этот файл из Telegram. Пришлите его ещё раз.",
    unavailable="Сейчас я не могу принять эту запись. Пришлите её ещё раз через несколько минут.",
    no_room=(
        "Сейчас я не могу принимать записи: у сервиса мало места на диске. Пришлите запись позже."
    ),
    duplicates={
        State.DONE: "Эту запись я уже расшифровал: смотрите мой ответ на первую.",
        State.FAILED: "Эту запись я уже пробовал и не смог расшифровать: {error}",
        State.DEAD: "Эту запись я уже пробовал и сдался после повторных ошибок.",
    },
    duplicate_in_progress="Эта запись у меня уже есть; текст придёт ответом на первую.",
    settings="Настройки этого чата:\nязык: {language}\nрежим: {mode}",
    language_usage=(
        "Язык записей в этом чате: {language}. "
        "Задайте его командой /language <код>, один из: {accepted}"
    ),
    language_set="Готово: записи в этом чате теперь расшифровываются как {language}.",
    language_refused="Этот язык я не распознаю. Выберите один из: {accepted}",
    mode_usage="Используйте /mode auto (все записи) или /mode command (только по просьбе).",
    mode_set={
        ChatMode.AUTO: "Готово: я расшифровываю все записи в этом чате.",
        ChatMode.COMMAND: (
            "Готово: я расшифровываю запись, когда на неё отвечают /transcribe или упоминают меня."
        ),
    },
    mode_private="В личном чате я расшифровываю все записи; /mode — для групп.",
    summary_usage="Используйте /summary auto (краткое содержание каждой записи) или /summary off.",
    summary_set={
        True: "Готово: у каждой записи в этом чате будет краткое содержание после расшифровки.",
        False: "Готово: записи в этом чате остаются без краткого содержания.",
    },
    summary_unavailable="Краткое содержание на этом сервисе недоступно.",
    summary_asked="Составляю краткое содержание: оно придёт сюда.",
    not_admin="Менять настройки группы могут только её администраторы.",
    transcribe_usage="Ответьте командой /transcribe на голосовое сообщение или запись.",
    voice_note_title="Голосовое сообщение от {day} {mon} {year}, {hm}",
    months=dict(
        enumerate(
            (
                "янв.",
                "февр.",
                "мар.",
                "апр.",
                "мая",
                "июн.",
                "июл.",
                "авг.",
                "сент.",
                "окт.",
                "нояб.",
                "дек.",
            ),
            start=1,
        )
    ),
    transcript_gone="Эта расшифровка больше не хранится.",
    auto="auto (определяется сам)",
    link_usage=(
        "Чтобы записи из этого чата появлялись в вашем рабочем пространстве, получите код"
        " на его странице (Telegram) и пришлите его сюда: /link ABCD-2345"
    ),
    link_done=(
        "Готово: записи, которые вы присылаете сюда, теперь появляются в рабочем пространстве"
        " {name}. /unlink отменяет это."
    ),
    link_refused=(
        "Этот код не подходит: он неверный, уже использован или истёк (код действует один раз,"
        " 10 минут). Получите новый на странице рабочего пространства."
    ),
    link_private_only="/link и /unlink работают в личном чате со мной, не в группе.",
    unlink_done="Готово: новые записи из этого чата больше не попадают в рабочее пространство.",
    unlink_none="Этот чат не связан с рабочим пространством.",
    quota_spent=(
        "Ваше время записей на сегодня исчерпано. Новые записи можно прислать после {resets}."
    ),
    quota_too_long=(
        "Эта запись ({seconds} с) длиннее, чем осталось вашего времени на сегодня ({left} с)."
        " Время начнётся заново в {resets}."
    ),
    quota_maybe_too_long=(
        "Эта запись может быть длиннее, чем осталось вашего времени на сегодня ({left} с):"
        " я не досчитал её до конца. Время начнётся заново в {resets}."
    ),
    modes={ChatMode.AUTO: "auto (все записи)", ChatMode.COMMAND: "command (по просьбе)"},
    settings_summary="\nкраткое содержание: {summary}",
    summary_choices={True: "auto (у каждой записи)", False: "off"},
    summary_default="{choice}, как принято на этом сервисе",
    link_refusals={
        "url_not_allowed": "Эта ссылка ведёт на адрес, с которого я не скачиваю.",
        "playlist_not_supported": "Это ссылка на плейлист. Пришлите ссылку на одну запись.",
        "bad_url": "Это не похоже на ссылку http(s), которую я могу открыть.",
        "links_disabled": "Я не скачиваю по ссылкам. Пришлите саму запись файлом.",
    },
    link_refused_other="Я не могу скачать запись по этой ссылке.",
    link_unreachable=(
        "Сайт по этой ссылке сейчас недоступен. Проверьте ссылку или пришлите её позже."
    ),
)

#: The bot's languages by ISO 639-1 code.
TEXTS = {"en": ENGLISH, "ru": RUSSIAN}

# The English texts under their old names, for callers that predate the languages.
HELP_TEXT = ENGLISH.help
REFUSED_TEXT = ENGLISH.refused
TOO_LARGE_TEXT = ENGLISH.too_large
DOWNLOAD_FAILED_TEXT = ENGLISH.download_failed
UNAVAILABLE_TEXT = ENGLISH.unavailable
NO_ROOM_TEXT = ENGLISH.no_room
DUPLICATE_TEXTS = ENGLISH.duplicates
DUPLICATE_IN_PROGRESS_TEXT = ENGLISH.duplicate_in_progress


def texts_for(settings: ChatSettings | None, language_code: str | None) -> Texts:
    """The chat's ``/language`` when the bot speaks it, else the sender's, else English."""
    if settings is not None and settings.language in TEXTS:
        return TEXTS[settings.language]
    code = (language_code or "").split("-", 1)[0].lower()
    return TEXTS.get(code, ENGLISH)


def too_large_text(max_file_bytes: int, texts: Texts = ENGLISH) -> str:
    """The refusal of a file over the limit, naming the limit in whole megabytes."""
    return texts.too_large.format(limit=f"{max_file_bytes // (1024 * 1024)} MB")


def duplicate_text(job: Job, texts: Texts = ENGLISH) -> str:
    """The reply to a recording already sent to this chat, by what became of the first copy."""
    text = texts.duplicates.get(job.state, texts.duplicate_in_progress)
    return text.format(error=job.error or "no reason recorded")


def quota_text(exc: QuotaExceeded, texts: Texts = ENGLISH) -> str:
    """The reply to a recording refused by the daily quota, with when it resets (UTC)."""
    resets = exc.resets.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    if exc.left <= 0:
        return texts.quota_spent.format(resets=resets)
    if not exc.exact:
        return texts.quota_maybe_too_long.format(left=math.floor(exc.left), resets=resets)
    return texts.quota_too_long.format(
        seconds=math.ceil(exc.incoming), left=math.floor(exc.left), resets=resets
    )


def link_refused_text(code: str, texts: Texts = ENGLISH) -> str:
    """The reply to a link refused at once (SPEC §28), by its code; never the link itself."""
    return texts.link_refusals.get(code, texts.link_refused_other)


def settings_text(settings: ChatSettings, texts: Texts, *, auto_summary: bool | None) -> str:
    """``/settings``: the chat's language and mode, and its summary choice when offered.

    ``auto_summary`` is the service's ``[llm] auto_summary``, None when it
    offers no summaries (no ``[llm]``): then no summary line is shown.
    """
    shown = texts.settings.format(
        language=settings.language or texts.auto, mode=texts.modes[settings.mode]
    )
    if auto_summary is None:
        return shown
    if settings.summary is None:
        summary = texts.summary_default.format(choice=texts.summary_choices[auto_summary])
    else:
        summary = texts.summary_choices[settings.summary]
    return shown + texts.settings_summary.format(summary=summary)


def accepted_languages(languages: frozenset[str]) -> str:
    """What ``/language`` takes: ``auto`` and each code, as the HTTP ``language`` field."""
    return ", ".join([AUTO, *sorted(languages)])


def voice_note_title(texts: Texts, sent: datetime) -> str:
    """The title of a chat's recording sent at ``sent``: "Voice note of 5 Dec 2026, 09:44" (UTC)."""
    moment = sent.astimezone(UTC)
    return texts.voice_note_title.format(
        day=moment.day,
        mon=texts.months[moment.month],
        year=moment.year,
        hm=f"{moment:%H:%M}",
    )
