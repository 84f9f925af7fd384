"""The recognizer's Object Storage copies: removing one by its file id, a failure only logged."""

from __future__ import annotations

import logging
from typing import Any

from transcriber_core.errors import NotFound
from transcriber_core.services import Services

log = logging.getLogger("transcriber.copies")


async def remove_copy(services: Services, job_id: str, file_id: str, **extra: Any) -> None:
    """Delete the copy ``file_id`` from Object Storage and its record; gone already is fine.

    Any other failure is logged with ``job_id`` and ``extra`` (never the
    object key) and swallowed: the copy is orphaned, not the job.
    """
    store = services.recognizer_files
    if store is None:
        return
    try:
        record = await services.file_records.get_file(file_id)
        await store.delete(record)
        await services.file_records.delete_file(file_id)
    except NotFound:
        return
    except Exception as exc:  # noqa: BLE001 - the copy is orphaned, not the job
        log.warning(
            "storage_copy.delete_error",
            extra={"job_id": job_id, **extra, "error_type": type(exc).__name__},
        )
