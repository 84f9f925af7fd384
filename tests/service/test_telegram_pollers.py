"""Two API processes in polling mode on PostgreSQL: one polls; kill it and the other takes over."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.service.test_worker import NO_STEPS
from tests.support.fake_bot_api import TOKEN, FakeBotApi
from tests.support.postgres import PostgresServer
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, MotoS3
from tests.support.service import Service, running_service
from transcriber_app.bot.polling import POLL_LEASE
from transcriber_app.bot.texts import HELP_TEXT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

CHAT = 6161


@contextlib.asynccontextmanager
async def serve_beside(
    root: Path, config: Mapping[str, Mapping[str, Any]]
) -> AsyncIterator[Service]:
    """A ``serve`` started from a thread, so this loop keeps serving the fake while it boots."""
    with contextlib.ExitStack() as stack:
        service = await asyncio.to_thread(
            stack.enter_context,
            running_service(root, config=config, env={"AWS_EC2_METADATA_DISABLED": "true"}),
        )
        try:
            yield service
        finally:
            await asyncio.to_thread(stack.close)


def lease_holder(url: str) -> str:
    """Who holds the polling lease now, by the database's clock; "" when nobody does."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT holder FROM telegram_poll_lease WHERE expires > statement_timestamp()"
        ).fetchone()
    return "" if row is None else str(row[0])


async def test_one_of_two_serve_processes_polls_and_the_other_takes_over_when_it_dies(
    tmp_path: Path, postgres: PostgresServer, moto_s3: MotoS3
) -> None:
    """Two serves share PostgreSQL and S3: one holds the lease; SIGKILL it, the other answers."""
    url = postgres.create_database()
    async with FakeBotApi() as api:
        config: dict[str, Any] = {
            **NO_STEPS,
            "database": {"url": url},
            "storage": {"files": "s3"},
            "s3": {
                "endpoint_url": moto_s3.endpoint_url,
                "region": REGION,
                "bucket": moto_s3.new_bucket(),
                "access_key_id": ACCESS_KEY_ID,
                "secret_access_key": SECRET_ACCESS_KEY,
                "path_style": True,
            },
            "telegram": {"token": TOKEN, "api_base": api.url},
        }
        async with (
            serve_beside(tmp_path / "api-1", config) as first,
            serve_beside(tmp_path / "api-2", config) as second,
        ):
            await api.push_text(CHAT, "/help")
            [reply] = await api.wait_sent(CHAT, 1, within=20)
            assert reply.text == HELP_TEXT
            holder = await asyncio.to_thread(lease_holder, url)
            by_pid = {first.pid: first, second.pid: second}
            [polling] = [s for pid, s in by_pid.items() if f":{pid}:" in holder]
            [other] = [s for s in by_pid.values() if s is not polling]
            assert "bot.poll_lease_taken" in polling.logs()
            assert "bot.poll_lease_taken" not in other.logs()
            killed_at = time.monotonic()
            await asyncio.to_thread(polling.kill)
            await api.push_text(CHAT, "/help")
            limit = POLL_LEASE.total_seconds() * 4 / 3 + 10  # lease, a renewal period, a margin
            replies = await api.wait_sent(CHAT, 2, within=limit)
            took = time.monotonic() - killed_at
            logging.getLogger(__name__).info("takeover after %.1f s", took)
            assert "bot.poll_lease_taken" in other.logs()
            new_holder = await asyncio.to_thread(lease_holder, url)
    assert [r.text for r in replies] == [HELP_TEXT, HELP_TEXT]
    assert f":{other.pid}:" in new_holder
    assert took < 60  # SPEC §21: another takes over within a minute
