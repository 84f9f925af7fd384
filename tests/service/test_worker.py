"""``transcriber worker`` beside an API-only ``serve`` on one SQLite data dir (ADR 38).

Every process here is real: ``serve`` with every ``[workers]`` count at 0
takes the uploads, a ``worker`` on the same data dir runs the steps, and
each answers ``/health`` and ``/metrics`` on its own port.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.admin import write_job
from tests.support.fake_bot_api import TOKEN, FakeBotApi
from tests.support.service import (
    SERVE_COMMAND,
    WORKER_COMMAND,
    Service,
    running_service,
    start_failing,
)
from transcriber_core.entities import State

pytestmark = pytest.mark.slow

#: ``serve`` as an API process only: no step runs there.
NO_STEPS = {"workers": {"convert": 0, "recognize": 0, "check": 0}}
#: A small worker: two convert loops (one is the express lane), one of each other step.
SOME_STEPS = {"workers": {"fetch": 1, "convert": 2, "recognize": 1, "check": 1}}
#: Series that describe the queue, read from the database by whichever process is scraped.
QUEUE_SERIES = ("transcriber_jobs{", "transcriber_queue_depth ", "transcriber_service_conditions{")
#: A process with a bot imports aiogram: on a loaded machine that took over 20 s.
BOT_READY_TIMEOUT = 90.0


def _merged(*configs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for config in configs:
        for section, values in config.items():
            merged.setdefault(section, {}).update(values)
    return merged


@contextlib.contextmanager
def api_and_worker(
    tmp_path: Path,
    *,
    serve: Mapping[str, Mapping[str, Any]] | None = None,
    worker: Mapping[str, Mapping[str, Any]] | None = None,
) -> Iterator[tuple[Service, Service]]:
    """An API-only ``serve`` and one ``worker`` on the same data dir, both answering /health."""
    data = tmp_path / "data"
    with (
        running_service(
            tmp_path / "serve", config=_merged(NO_STEPS, serve or {}), data_dir=data
        ) as api,
        running_service(
            tmp_path / "worker",
            config=_merged(SOME_STEPS, worker or {}),
            data_dir=data,
            command=WORKER_COMMAND,
            listener="worker",
        ) as steps,
    ):
        yield api, steps


def upload(service: Service, data: bytes, filename: str = "voice.mp3") -> str:
    """POST ``data`` to ``service``; the new job's id."""
    with service.client() as client:
        response = client.post("/api/audio", files={"file": (filename, data)})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["job_id"]
    return job_id


def queue_lines(service: Service) -> list[str]:
    """The queue's series in ``service``'s /metrics, sorted."""
    with service.client() as client:
        response = client.get("/metrics")
    assert response.status_code == 200
    return sorted(line for line in response.text.splitlines() if line.startswith(QUEUE_SERIES))


def metric(service: Service, name: str) -> float:
    """The value of one series (name with labels) in ``service``'s /metrics."""
    with service.client() as client:
        text = client.get("/metrics").text
    [value] = [line.rpartition(" ")[2] for line in text.splitlines() if line.startswith(f"{name} ")]
    return float(value)


def lines_with(logs: str, *fragments: str) -> list[str]:
    """The log lines that hold every fragment."""
    return [line for line in logs.splitlines() if all(f in line for f in fragments)]


def test_worker_runs_the_steps_of_an_api_only_serve(tmp_path: Path, recording: bytes) -> None:
    """An upload to a serve with no steps ends done via the worker, whose probes answer."""
    with api_and_worker(tmp_path) as (api, worker):
        job_id = upload(api, recording)
        assert api.wait_for_job(job_id)["state"] == "done"
        with worker.client() as client:
            health = client.get("/health")
            missing = client.get("/api/status/" + job_id)
        assert worker.wait_for_log("service.start", "role=worker", "loops=5")
        assert api.wait_for_log("service.start", "role=serve", "loops=0")
        api_logs, worker_logs = api.logs(), worker.logs()
    assert health.status_code == 200
    assert missing.status_code == 404, "a worker serves no API"
    assert missing.json()["error"] == "not_found"
    assert not lines_with(api_logs, "step.start")
    for state in ("convert", "recognize", "check"):
        assert len(lines_with(worker_logs, "step.start", job_id, f"state={state}")) == 1


def test_both_processes_report_the_same_queue(tmp_path: Path, recording: bytes) -> None:
    """The queue gauges come from the database: serve and worker scrape the same numbers."""
    with api_and_worker(tmp_path) as (api, worker):
        job_ids = [upload(api, recording) for _ in range(3)]
        for job_id in job_ids:
            assert api.wait_for_job(job_id)["state"] == "done"
        on_api, on_worker = queue_lines(api), queue_lines(worker)
        # Event counters are each process's own: only the worker acquired.
        acquired_by_api = metric(api, 'transcriber_acquires_total{state="convert"}')
        acquired_by_worker = metric(worker, 'transcriber_acquires_total{state="convert"}')
    assert on_api == on_worker
    assert 'transcriber_jobs{state="done"} 3.0' in on_api
    assert "transcriber_queue_depth 0.0" in on_api
    assert (acquired_by_api, acquired_by_worker) == (0, 3)


def test_conditions_reach_the_metrics_of_every_process(tmp_path: Path) -> None:
    """A condition noted in the database shows in both processes' metrics and health."""
    with api_and_worker(tmp_path) as (api, worker):
        # As a worker on another host would note refused keys (times: microseconds, ADR 3).
        now = time.time_ns() // 1000
        with contextlib.closing(sqlite3.connect(api.data_dir / "transcriber.db")) as conn, conn:
            conn.execute(
                "INSERT INTO service_conditions (code, scope, message, since, seen)"
                " VALUES ('recognizer_credentials_rejected', '', 'refused', ?, ?)",
                (now, now),
            )
        on_api, on_worker = queue_lines(api), queue_lines(worker)
        with worker.client() as client:
            health = client.get("/health")
    assert on_api == on_worker
    assert 'transcriber_service_conditions{code="recognizer_credentials_rejected"} 1.0' in on_api
    assert health.status_code == 503
    assert health.json()["error"] == "recognizer_credentials_rejected"


def test_sigterm_stops_a_worker_like_serve(tmp_path: Path, long_recording: bytes) -> None:
    """SIGTERM mid-convert: the worker's step finishes and is saved, no step starts, exit 0."""
    stop = {"shutdown": {"grace_seconds": 20.0, "hard_seconds": 30.0}}
    with api_and_worker(tmp_path, worker=stop) as (api, worker):
        job_id = upload(api, long_recording, filename="long.wav")
        worker.wait_for_log("step.start", f"job_id={job_id}", "state=convert")
        signalled = time.monotonic()
        assert worker.stop() == 0
        assert time.monotonic() - signalled < 20
        logs = worker.logs()
        status = api.wait_for_job(job_id, states=frozenset({"recognize"}))
        assert httpx.get(f"{api.base_url}/health").status_code == 200
    assert status["state"] == "recognize", "nobody runs the next step: serve has no loops"
    assert lines_with(logs, "step.end", job_id, "state=convert", "to=recognize")
    assert not lines_with(logs, "step.start", job_id, "state=recognize")
    assert lines_with(logs, "service.stopped")
    assert not list((tmp_path / "data" / "tmp").glob("*/*")), "no staging file left"


def test_two_workers_share_one_data_dir(tmp_path: Path, recording: bytes) -> None:
    """A second worker joins the data dir too; each has its own staging folder, removed at exit."""
    with api_and_worker(tmp_path) as (api, worker):
        with running_service(
            tmp_path / "worker2",
            config=SOME_STEPS,
            data_dir=tmp_path / "data",
            command=WORKER_COMMAND,
            listener="worker",
        ) as second:
            folders = sorted((tmp_path / "data" / "tmp").iterdir())
            job_id = upload(api, recording)
            assert api.wait_for_job(job_id)["state"] == "done"
            assert second.stop() == 0
        left = sorted((tmp_path / "data" / "tmp").iterdir())
        assert worker.stop() == 0
    assert len(folders) == 3, "serve, worker and the second worker"
    assert len(left) == 2


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"worker": {"port": 0}}, "[worker] port: must be between 1 and 65535"),
        ({"worker": {"colour": "blue"}}, "[worker] colour: unknown key"),
        ({"workers": {"check": -1}}, "[workers] check: must not be negative"),
    ],
    ids=["port", "unknown-key", "negative-loops"],
)
def test_worker_with_a_bad_config_exits_2_naming_the_key(
    tmp_path: Path, config: dict[str, Any], named: str
) -> None:
    """A worker refuses a broken config like serve: exit 2, the key named, nothing made."""
    code, stderr = start_failing(tmp_path, config=config, command=WORKER_COMMAND)
    assert code == 2, stderr
    assert "config error" in stderr
    assert named in stderr
    assert not (tmp_path / "data").exists()


@contextlib.asynccontextmanager
async def _beside(stack_entry: Any) -> AsyncIterator[Service]:
    """Enter a ``running_service`` from a thread, so this loop keeps serving the fake Bot API."""
    with contextlib.ExitStack() as stack:
        service = await asyncio.to_thread(stack.enter_context, stack_entry)
        try:
            yield service
        finally:
            await asyncio.to_thread(stack.close)


# Two services start on a shared 2-CPU box, and the worker's status edits are paced 3 s
# apart (ADR 51): more than the default 60 s may pass.
@pytest.mark.timeout(120)
async def test_worker_sends_notices_without_polling(tmp_path: Path, recording: bytes) -> None:
    """Serve polls the bot; the worker only shows the transcript through its own Bot API.

    Its Bot API has never seen the status message serve sent: the edit finds
    none, and the worker sends a status message of its own, edited from then on.
    """
    chat = 4242
    async with FakeBotApi() as polled, FakeBotApi() as notices:
        data = tmp_path / "data"
        serve_config = _merged(NO_STEPS, {"telegram": {"token": TOKEN, "api_base": polled.url}})
        worker_config = _merged(SOME_STEPS, {"telegram": {"token": TOKEN, "api_base": notices.url}})
        async with (
            _beside(
                running_service(
                    tmp_path / "serve",
                    config=serve_config,
                    data_dir=data,
                    ready_timeout=BOT_READY_TIMEOUT,
                )
            ),
            _beside(
                running_service(
                    tmp_path / "worker",
                    config=worker_config,
                    data_dir=data,
                    command=WORKER_COMMAND,
                    listener="worker",
                    ready_timeout=BOT_READY_TIMEOUT,
                )
            ),
        ):
            message_id = await polled.push_media(chat, "voice", polled.add_file(recording))
            [ack] = await polled.wait_sent(chat, 1)
            transcript = await notices.wait_shown_where(chat, lambda sent: "seconds" in sent.body)
    assert ack.reply_to == message_id
    assert transcript.reply_to == message_id
    assert "seconds" in transcript.body
    assert "getupdates" in polled.calls
    assert "getupdates" not in notices.calls
    assert set(notices.calls) == {"sendmessage", "editmessagetext"}
    assert notices.sent_to(chat) == [transcript]


@pytest.mark.parametrize(
    ("command", "listener", "steps"),
    [(SERVE_COMMAND, "http", NO_STEPS), (WORKER_COMMAND, "worker", SOME_STEPS)],
    ids=["api-only-serve", "worker"],
)
async def test_every_process_sweeps_whatever_its_loops(
    tmp_path: Path,
    command: tuple[str, ...],
    listener: str,
    steps: Mapping[str, Mapping[str, Any]],
) -> None:
    """An API-only serve and a worker each run the retention sweep, alone on the data dir."""
    config = _merged(steps, {"retention": {"sweep_seconds": 0.2}})
    with running_service(tmp_path, config=config, command=command, listener=listener) as service:
        ended = datetime.now(UTC) - timedelta(days=31)
        job = await write_job(service, state=State.DONE, text="t", ended=ended)
        service.wait_for_log("retention.swept", "jobs=1")
        assert service.query("SELECT count(*) FROM jobs WHERE id = ?", (job.id,)) == [(0,)]
