"""Downloading a file a Telegram user sent, streamed to local disk with a byte cap."""

from __future__ import annotations

import asyncio
import functools
import threading
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from aiogram import Bot

from transcriber_adapters._threads import close, in_thread
from transcriber_adapters.localdisk import copy_into, storage_errors
from transcriber_adapters.telegram.errors import FileTooLarge, TelegramRefused, telegram_errors

#: Bytes asked for per read of the download stream.
CHUNK_SIZE = 1024 * 1024
#: aiogram wants a total timeout for a download; ours is per chunk, so this only bounds a day.
_TOTAL_TIMEOUT_SECONDS = 24 * 60 * 60


async def download_file(
    bot: Bot, file_id: str, destination: Path, *, max_bytes: int, inactivity: timedelta
) -> int:
    """Write the Telegram file ``file_id`` to ``destination``; return its size in bytes.

    Raises ``FileTooLarge`` when Telegram or the file says it is over
    ``max_bytes`` or more bytes arrive than that, ``TelegramUnavailable`` when
    the transfer fails or sends nothing for ``inactivity``, ``TelegramRefused``
    when Telegram does not know the file, and ``StorageUnavailable`` when the
    local disk fails. ``destination`` may hold a partial file afterwards: it
    is the caller's staging file, which the caller removes.

    The Bot API answers a relative path to fetch over HTTP; a local Bot API
    server in ``--local`` mode answers an absolute path on its disk, which is
    copied from there when this process sees the same disk.
    """
    with telegram_errors():
        file = await bot.get_file(file_id)
    if file.file_size is not None and file.file_size > max_bytes:
        raise FileTooLarge
    if not file.file_path:
        raise TelegramRefused("Telegram gave no path to download the file from")
    if PurePosixPath(file.file_path).is_absolute():
        return await _copy_local(Path(file.file_path), destination, max_bytes=max_bytes)
    url = bot.session.api.file_url(bot.token, file.file_path)
    return await _stream(bot, url, destination, max_bytes=max_bytes, inactivity=inactivity)


async def _stream(
    bot: Bot, url: str, destination: Path, *, max_bytes: int, inactivity: timedelta
) -> int:
    with storage_errors():
        writer = await in_thread(_open_for_writing, destination, release=close)
    try:
        stream = bot.session.stream_content(
            url, timeout=_TOTAL_TIMEOUT_SECONDS, chunk_size=CHUNK_SIZE, raise_for_status=True
        )
        size = 0
        try:
            while True:
                with telegram_errors():
                    async with asyncio.timeout(inactivity.total_seconds()):
                        chunk = await anext(stream, None)
                if chunk is None:
                    return size
                size += len(chunk)
                if size > max_bytes:
                    raise FileTooLarge
                with storage_errors():
                    await in_thread(_write, writer, chunk)
        finally:
            await stream.aclose()
    finally:
        writer.close()


def _open_for_writing(path: Path) -> BinaryIO:
    return path.open("wb")


def _write(writer: BinaryIO, chunk: bytes) -> None:
    writer.write(chunk)


async def _copy_local(source: Path, destination: Path, *, max_bytes: int) -> int:
    try:
        size = await in_thread(_size_of, source)
    except OSError:
        raise TelegramRefused("the local Bot API server's file is not readable here") from None
    if size > max_bytes:
        raise FileTooLarge
    stop = threading.Event()
    with storage_errors():
        return await in_thread(
            functools.partial(copy_into, source, destination, stop=stop), stop=stop
        )


def _size_of(path: Path) -> int:
    return path.stat().st_size
