"""Downloads, to the owner only: a copy's bytes streamed from the store that holds it,
and a done job's transcript in each format (ADR 34).

Log lines here carry the copy's size, extension and location, never its id
or stored name (reference: Privacy, acceptance 12): the id is the stored name minus its
extension.
"""

from __future__ import annotations

import logging
import re

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from transcriber_app.web.admin.rendering import plain
from transcriber_app.web.admin.security import owner_only
from transcriber_app.web.language import _
from transcriber_app.web.state import runtime_of
from transcriber_app.web.streams import replay_first
from transcriber_app.web.transcripts import (
    ALLOWED,
    transcript_format,
    transcript_response,
    why_no_transcript,
)
from transcriber_core.deletion import store_for
from transcriber_core.entities import FileRecord, State
from transcriber_core.errors import FileNotFound, JobNotFound, TranscriberError
from transcriber_core.naming import well_formed_id

log = logging.getLogger("transcriber.admin")


@owner_only
async def download(request: Request) -> Response:
    """``GET /admin/files/{id}``: the file's bytes as an attachment named ``<id><extension>``."""
    services = runtime_of(request).services
    file_id = request.path_params["file_id"]
    if not well_formed_id(file_id):
        return plain(_("No file has this id."), status_code=404)
    try:
        record = await services.file_records.get_file(file_id)
    except FileNotFound:
        return plain(_("No file has this id."), status_code=404)
    store = store_for(services, record)
    if store is None:
        return plain(
            _(
                "This copy lives in %(location)s storage, which this service does not read.",
                location=record.location.value,
            ),
            status_code=409,
        )
    described = {
        "size": record.size,
        "extension": record.extension,
        "location": record.location.value,
    }
    chunks = store.open(record)
    try:
        # Read the first chunk before answering: a missing file must be a 404,
        # not a 200 that breaks off.
        first = await anext(chunks, b"")
    except FileNotFound:
        return plain(_("The file's bytes are gone from storage."), status_code=404)
    except TranscriberError as exc:
        log.warning("admin.download_failed", extra={**described, "error_type": type(exc).__name__})
        return plain(_("Storage did not answer; try again."), status_code=503)
    log.info("admin.download", extra=described)
    return StreamingResponse(
        replay_first(first, chunks),
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{_download_name(record)}"',
            "Content-Length": str(record.size),
        },
    )


@owner_only
async def transcript(request: Request) -> Response:
    """``GET /admin/jobs/{id}/transcript?format=``: the API's transcript answer, for the owner."""
    wanted = transcript_format(request.query_params.get("format"))
    if wanted is None:
        return plain(_("The format must be one of: %(formats)s.", formats=ALLOWED), status_code=400)
    job_id = request.path_params["job_id"]
    if not well_formed_id(job_id):
        return plain(_("No job has this id."), status_code=404)
    try:
        job = await runtime_of(request).services.jobs.get(job_id)
    except JobNotFound:
        return plain(_("No job has this id."), status_code=404)
    if job.state is not State.DONE:
        return plain(why_no_transcript(job), status_code=409)
    log.info("admin.transcript", extra={"job_id": job.id, "format": wanted.value})
    return await transcript_response(job, wanted)


def _download_name(record: FileRecord) -> str:
    """The stored name, ``<id><extension>``, with anything a header could choke on replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", record.name)
