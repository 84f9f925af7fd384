"""Watching child processes and feeding named pipes, for tests of subprocesses and copies."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO


def _live_processes() -> Iterator[tuple[int, str, int, int]]:
    """(pid, command name, parent pid, process group) of every process that is not a zombie."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited while we looked
        # "pid (comm) state ppid pgrp ..."; comm may hold spaces, so split after the last ")".
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        if state != "Z":
            yield int(entry.name), comm, int(ppid), int(pgrp)


def children(name_prefix: str = "", *, parent: int | None = None) -> list[int]:
    """Pids of ``parent``'s (this process's) live children whose command starts ``name_prefix``.

    multiprocessing's resource tracker is left out: the first test that
    spawns processes starts it, and it lives as long as the test session.
    """
    parent = os.getpid() if parent is None else parent
    return [
        pid
        for pid, comm, ppid, _ in _live_processes()
        if ppid == parent and comm.startswith(name_prefix) and not _is_resource_tracker(pid)
    ]


def _is_resource_tracker(pid: int) -> bool:
    try:
        command = (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False  # exited while we looked
    return b"multiprocessing.resource_tracker" in command


def group_members(group: int) -> list[int]:
    """Pids of the live processes in process group ``group``.

    Zombies are left out: killed orphans wait for a reaper this test does not control.
    """
    return [pid for pid, _, _, pgrp in _live_processes() if pgrp == group]


async def open_fifo_writer(
    fifo: Path, reader: asyncio.Task[Any], *, wait_seconds: float | None = None
) -> BinaryIO:
    """The write end of ``fifo``, once ``reader`` (a task) has opened it for reading.

    Opening a FIFO for writing blocks until someone reads; if ``reader``
    ends without ever opening it, or nothing opens it within ``wait_seconds``
    seconds, the open is released and an error raised.
    """
    opening = asyncio.ensure_future(asyncio.to_thread(open, fifo, "wb", buffering=0))
    await asyncio.wait({opening, reader}, timeout=wait_seconds, return_when=asyncio.FIRST_COMPLETED)
    if opening.done():
        return opening.result()
    # Free the thread blocked in open(), then report why the reader never came.
    release = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        (await opening).close()
    finally:
        os.close(release)
    if not reader.done():
        raise AssertionError(f"nothing opened the FIFO for reading in {wait_seconds} s")
    reader.result()
    raise AssertionError("the reader finished without opening the FIFO")
