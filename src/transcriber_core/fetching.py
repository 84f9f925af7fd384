"""The ``fetch`` step (SPEC §28, ADR 85): a link's recording downloaded and stored like an upload.

A job that came in as a link starts in ``fetch``. Its step downloads the
one recording behind the link (``MediaFetcher.fetch``) into a private
staging folder, within ``Services.fetch_limits``, noting the bytes as the
job's progress; stores it as the job's source file (a ``FileRecord``, as
an upload's); and hands the job to ``convert``, from where it goes on as
an upload does. The folder goes however the step ends: refused, over a
limit, cancelled (shutdown, or the job deleted: a lost lease cancels the
step), or stored.

The page's title (``Fetched.title``, cleaned by ``page_title``) becomes the
recording's title when the sender gave none (SPEC §26, §28).

``FetchRefused`` fails the job with its code as the reason;
``FetchUnavailable`` is transient and retried with the usual backoff. The
link never reaches a log line or an error text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import unicodedata
from datetime import datetime
from urllib.parse import urlsplit

from transcriber_core.entities import Event, Job, State
from transcriber_core.errors import FetchRefused, JobNotFound, MissingFile
from transcriber_core.naming import derived_file_id, extension_of
from transcriber_core.outbox import deliveries_for
from transcriber_core.policy import PROGRESS_INTERVAL, is_short
from transcriber_core.progress import note_progress
from transcriber_core.services import Services
from transcriber_core.titles import MAX_TITLE_CHARS
from transcriber_core.transitions import transition

log = logging.getLogger("transcriber.fetching")

#: Role name of the recording a fetch stores; see ``derived_file_id``.
FETCHED = "fetched"
#: The code of a link on a service that fetches none (no fetcher installed or configured).
NO_FETCHER = "links_disabled"
#: The code of a text that is not an http(s) link the service would try.
BAD_URL = "bad_url"
#: The longest link taken: browsers and sites keep theirs far shorter.
MAX_LINK_CHARS = 2048
#: Whitespace or a control character: never part of a link as sent.
_NOT_IN_LINK = re.compile(r"[\s\x00-\x1f\x7f]")


def page_title(raw: str | None) -> str | None:
    """A site's title as a recording's title: one line, no control characters, not too long.

    Unlike a person's title (``titles.clean_title``) nothing is refused: a
    site's title is cleaned to fit, and None when nothing of it is left.
    """
    if raw is None:
        return None
    kept = "".join(" " if unicodedata.category(c) in ("Cc", "Cf") else c for c in raw)
    title = " ".join(kept.split())[:MAX_TITLE_CHARS].strip()
    return title or None


def well_formed_link(url: str) -> bool:
    """True for an http(s) link with a host, of at most ``MAX_LINK_CHARS``, without spaces."""
    if len(url) > MAX_LINK_CHARS or _NOT_IN_LINK.search(url):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(host)


async def fetch(job: Job, services: Services) -> Job:
    """Download the job's link, store the recording as its source, and move it to ``convert``."""
    fetcher = services.fetcher
    if job.source_url is None:
        raise MissingFile("the job has no link to fetch")
    if fetcher is None:
        raise FetchRefused(NO_FETCHER)
    files = services.files
    notes = FetchNotes(services, job)
    async with files.staging_folder() as into:
        try:
            fetched = await fetcher.fetch(
                job.source_url, into, limits=services.fetch_limits, on_progress=notes
            )
        except FetchRefused as exc:
            log.info("fetch.refused", extra={"job_id": job.id, "code": exc.code})
            raise
        finally:
            await notes.close()
        if not fetched.path.resolve().is_relative_to(into.resolve()):
            # The adapter's promise, held: nothing outside the folder is ever stored.
            raise FetchRefused("unsupported_url")
        record = await files.put(
            derived_file_id(job.id, FETCHED),
            extension_of(fetched.path.name),
            fetched.path,
            now=services.clock.now(),
            move=True,
        )
    # The record exists before the job points at it (queue rule 9); a retry replaces both.
    await services.file_records.put_file(record)
    log.info("fetch.stored", extra={"job_id": job.id, "size": record.size})
    title = page_title(fetched.title)
    if job.title is None and title is not None:
        # The page's title is the recording's default (SPEC §28); one the sender gave stays.
        with contextlib.suppress(JobNotFound):  # deleted meanwhile: the fenced save says so
            await services.jobs.save_title(job.id, title)
    return transition(
        job,
        State.CONVERT,
        now=services.clock.now(),
        source_file_id=record.id,
        short=is_short(record.size, fetched.duration, services.settings),
    )


class FetchNotes:
    """A fetch's ``on_progress``: the bytes so far noted as the job's progress, throttled.

    The first call is noted at once, later ones once ``PROGRESS_INTERVAL``
    has passed and the count moved; one write in flight at a time (a call
    meanwhile is dropped: the next carries more). Each note is fenced by the
    job's lease (``note_progress``) and edits a chat's status message.
    """

    def __init__(self, services: Services, job: Job) -> None:
        self._services = services
        self._job = job
        self._deliveries = deliveries_for(job, Event.PROGRESS)
        self._last_at: datetime | None = None
        self._last_bytes = -1
        self._writing: asyncio.Future[None] | None = None
        self._closed = False

    def __call__(self, fetched: int, total: int | None) -> None:
        """Note ``fetched`` bytes of ``total`` (None: unknown) if a note is due."""
        if self._closed or (self._writing is not None and not self._writing.done()):
            return
        now = self._services.clock.now()
        if self._last_at is not None and (
            now - self._last_at < PROGRESS_INTERVAL or fetched == self._last_bytes
        ):
            return
        self._last_at, self._last_bytes = now, fetched
        self._writing = asyncio.ensure_future(
            note_progress(
                self._services,
                self._job,
                float(max(0, fetched)),
                begun=None,
                total=None if total is None else float(total),
                deliveries=self._deliveries,
            )
        )

    async def close(self) -> None:
        """Wait for the note being written, so none outlives the step; later calls do nothing."""
        self._closed = True
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)
