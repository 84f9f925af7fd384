"""The chaos run (issue 26): a real deployment under seeded faults, then what must still hold.

``serve`` and three ``transcriber worker`` processes share a private
PostgreSQL server the run starts (so it can restart it), a moto S3 server on
a fixed port (so it can go down and come back), the fake SpeechKit and the
fake Bot API; a webhook receiver checks every call's signature. Uploads come
over HTTP (with a ``callback_url`` and an ``Idempotency-Key``, retried like
a careful client) and over Telegram for a bounded time, while a schedule
drawn from the seed SIGKILLs workers and the API process (restarting them),
restarts PostgreSQL with ``-m immediate``, stops S3, storms SpeechKit with
500s and 429s and fills the workers' disk (a tmpfs). Then the faults stop,
the run waits for the deployment to go quiet (polling its state, with a
deadline) and checks the invariants. ``run`` returns a ``Report``; the same
seed draws the same schedule and the same uploads.

Used by ``tests/chaos`` (short, in CI) and ``bench/chaos.py`` (long, with
recovery times). The processes are the service-test harness's
(``tests.support.service.running_service``), the fakes tests/support's own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import hashlib
import hmac
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs
import httpx
import psycopg
from aiohttp import web

from tests.support.fake_bot_api import TOKEN, FakeBotApi
from tests.support.fake_speechkit import API_KEY, FakeSpeechKit
from tests.support.media import tone
from tests.support.postgres import PrivateServer
from tests.support.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, StoppableS3
from tests.support.service import SERVE_COMMAND, WORKER_COMMAND, Service, running_service

_T = TypeVar("_T")

#: Signs the webhooks; the receiver checks every call with it.
WEBHOOK_SECRET = "chaos-webhook-secret"
#: The Telegram chats the recordings come from, in turn, as from ten people: one chat's
#: status messages are edited at most once every 3 s (ADR 51), which a single chat
#: sending a recording every 3 s would fill with its transcripts alone.
CHATS = tuple(range(777, 787))
#: Size of the tmpfs the workers' data dirs live on (their staging).
DISK_BYTES = 48 * 1024 * 1024
#: Seconds a process may take to start (and answer /health at all) on a loaded machine.
START_TIMEOUT = 300.0
#: What the transcript of every recognition says (the fake's default).
TRANSCRIPT = "fake transcript"
#: Every fault kind a schedule draws.
KINDS = (
    "kill_worker",
    "kill_api",
    "restart_postgres",
    "stop_s3",
    "speechkit_500",
    "speechkit_429",
    "disk_full",
)


@attrs.frozen
class Fault:
    """One injected fault: what, when (seconds into the run) and for how long."""

    kind: str
    at: float
    seconds: float = 0.0
    #: Which process, for a kill (``worker-1``, ``serve``).
    target: str = ""

    def describe(self) -> str:
        """One line for the report."""
        target = f" {self.target}" if self.target else ""
        length = f" for {self.seconds:g} s" if self.seconds else ""
        return f"{self.at:6.1f} s  {self.kind}{target}{length}"


@attrs.frozen(kw_only=True)
class Plan:
    """What a run does: drawn from ``seed`` (``plan``), so a seed replays the same run."""

    seed: int
    #: Seconds uploads go on (faults fall within them).
    duration: float
    #: Uploads per second.
    rate: float
    faults: tuple[Fault, ...]
    #: Per upload: "http" or "telegram", and "short" (1 s) or "long" (split into parts).
    uploads: tuple[tuple[str, str], ...]


def plan(
    seed: int,
    *,
    duration: float = 60.0,
    rate: float = 0.5,
    rounds: int = 1,
    outage_seconds: float = 20.0,
    storm_seconds: float = 15.0,
    disk_seconds: float = 10.0,
    workers: int = 3,
) -> Plan:
    """The run of ``seed``: every fault kind ``rounds`` times (kills twice as often) at random.

    Faults start within the first 80 % of the uploads' time, so each ends
    while uploads still come in or soon after.
    """
    rng = random.Random(seed)
    lengths = {
        "stop_s3": outage_seconds,
        "speechkit_500": storm_seconds,
        "speechkit_429": storm_seconds,
        "disk_full": disk_seconds,
    }
    faults: list[Fault] = []
    for _ in range(rounds):
        for kind in (*KINDS, "kill_worker"):
            seconds = lengths.get(kind, 0.0)
            latest = max(duration * 0.8 - seconds, duration * 0.1)
            at = round(rng.uniform(duration * 0.05, latest), 1)
            target = ""
            if kind == "kill_worker":
                target = f"worker-{rng.randrange(workers)}"
            elif kind == "kill_api":
                target = "serve"
            faults.append(Fault(kind, at, seconds, target))
    count = max(1, round(duration * rate))
    uploads = tuple(
        (rng.choice(("http", "http", "telegram")), "long" if rng.random() < 0.2 else "short")
        for _ in range(count)
    )
    return Plan(
        seed=seed,
        duration=duration,
        rate=rate,
        faults=tuple(sorted(faults, key=lambda fault: fault.at)),
        uploads=uploads,
    )


@attrs.frozen
class Invariant:
    """One check of the end state: its name, whether it held, and its figure."""

    name: str
    held: bool
    figure: str


@attrs.define
class Report:
    """What a run injected and found; ``ok`` when every invariant held."""

    plan: Plan
    invariants: list[Invariant] = attrs.field(factory=list)
    #: Per fault: seconds from its end until every process answered 200 and work went on.
    recoveries: list[tuple[Fault, float | None]] = attrs.field(factory=list)
    jobs: int = 0
    seconds: float = 0.0
    notes: list[str] = attrs.field(factory=list)

    @property
    def ok(self) -> bool:
        """True when every invariant held."""
        return bool(self.invariants) and all(check.held for check in self.invariants)

    def text(self) -> str:
        """The report as printed: the seed, what was injected, each invariant's figure."""
        lines = [
            f"chaos: seed {self.plan.seed}, {len(self.plan.uploads)} uploads over"
            f" {self.plan.duration:g} s, {self.jobs} jobs, {self.seconds:.0f} s in all"
            f" (replay: --seed {self.plan.seed})",
            "injected:",
        ]
        for fault, recovery in self.recoveries:
            took = "not recovered" if recovery is None else f"recovered in {recovery:.1f} s"
            lines.append(f"  {fault.describe()}  ({took})")
        lines.append("invariants:")
        lines.extend(
            f"  {'ok  ' if check.held else 'FAIL'} {check.name}: {check.figure}"
            for check in self.invariants
        )
        lines.extend(f"note: {note}" for note in self.notes)
        lines.append(f"chaos: {'PASS' if self.ok else 'FAIL'} (seed {self.plan.seed})")
        return "\n".join(lines)


class LoopThread:
    """An event loop on a thread of its own, for the fakes; ``call`` runs a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="chaos-fakes", daemon=True
        )
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, _T], timeout: float = 30.0) -> _T:
        """Run ``coroutine`` on the loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the loop and its thread."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(30)
        self.loop.close()


class Receiver:
    """A webhook receiver: checks each call's signature and notes it by the body's job id."""

    def __init__(self) -> None:
        #: Per job id: the states of the calls whose signature held.
        self.calls: dict[str, list[str]] = {}
        #: Calls whose signature or body did not hold.
        self.bad = 0
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        app = web.Application()
        app.router.add_post("/hook", self._hook)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/hook"

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()

    async def _hook(self, request: web.Request) -> web.Response:
        body = await request.read()
        if not valid_signature(request.headers.get("Transcriber-Signature", ""), body):
            self.bad += 1
            return web.Response(status=400)
        try:
            payload = json.loads(body)
            job_id, state = str(payload["job_id"]), str(payload["state"])
        except (ValueError, KeyError, TypeError):
            self.bad += 1
            return web.Response(status=400)
        self.calls.setdefault(job_id, []).append(state)
        return web.Response(status=204)


def valid_signature(header: str, body: bytes) -> bool:
    """True when ``header`` is ``t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">`` with the secret."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    stamp, given = fields.get("t", ""), fields.get("v1", "")
    if not stamp.isdigit():
        return False
    mac = hmac.new(WEBHOOK_SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256)
    return hmac.compare_digest(mac.hexdigest(), given)


class Process:
    """One service process of the deployment, which the run may kill and start again."""

    def __init__(
        self,
        name: str,
        root: Path,
        config: Mapping[str, Mapping[str, Any]],
        *,
        worker: bool,
        data_dir: Path | None = None,
    ) -> None:
        self.name = name
        self.root = root
        self.config = config
        self.worker = worker
        self.data_dir = data_dir
        self.service: Service | None = None
        self.starts = 0
        self._stack = contextlib.ExitStack()
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start it and wait until its /health answers at all (a 503 is an up process)."""
        with self._lock:
            stack = contextlib.ExitStack()
            options: dict[str, Any] = {}
            if self.worker:
                options = {"command": WORKER_COMMAND, "listener": "worker"}
            else:
                options = {"command": SERVE_COMMAND}
            self.service = stack.enter_context(
                running_service(
                    self.root,
                    config=self.config,
                    env={"AWS_EC2_METADATA_DISABLED": "true"},
                    data_dir=self.data_dir,
                    ready_timeout=START_TIMEOUT,
                    ready_statuses=(200, 503),
                    **options,
                )
            )
            self._stack = stack
            self.starts += 1

    def kill(self) -> None:
        """SIGKILL it, like a crash."""
        with self._lock:
            if self.service is not None:
                self.service.kill()
            self._stack.close()
            self.service = None

    def restart(self) -> None:
        """Kill it and start it again."""
        self.kill()
        self.start()

    def stop(self, timeout: float) -> int | None:
        """SIGTERM it and wait; its exit code, None when it did not exit in time."""
        with self._lock:
            service = self.service
            if service is None:
                return None
            service.process.send_signal(signal.SIGTERM)
            try:
                return service.process.wait(timeout)
            except subprocess.TimeoutExpired:
                return None
            finally:
                self._stack.close()
                self.service = None

    def health(self) -> int | None:
        """Its /health status now; None when it does not answer (down, or starting)."""
        service = self.service
        if service is None:
            return None
        try:
            return httpx.get(service.base_url + "/health", timeout=2.0).status_code
        except httpx.HTTPError:
            return None


class Disk:
    """The tmpfs the workers' data dirs live on, and a ballast file that fills it."""

    def __init__(self, mount_point: Path) -> None:
        self.mount_point = mount_point
        self.ballast = mount_point / "ballast"

    @classmethod
    @contextlib.contextmanager
    def mounted(cls, mount_point: Path) -> Iterator[Disk]:
        """Mount a tmpfs of ``DISK_BYTES`` at ``mount_point``; unmounted at the end, always."""
        mount_point.mkdir(parents=True)
        done = subprocess.run(
            [shutil.which("mount") or "/bin/mount", "-t", "tmpfs", "-o",
             f"size={DISK_BYTES},mode=0700", "tmpfs", str(mount_point)],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"the chaos run needs root to mount a tmpfs: {done.stderr.strip()}")
        try:
            yield cls(mount_point)
        finally:
            subprocess.run(
                [shutil.which("umount") or "/bin/umount", "-l", str(mount_point)], check=False
            )

    def fill(self) -> None:
        """Write the ballast until the disk has no byte left (unbuffered: nothing left to flush)."""
        descriptor = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1024 * 1024, 4096, 1):
                chunk = b"\0" * size
                try:
                    while True:
                        os.write(descriptor, chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
        finally:
            os.close(descriptor)

    def free(self) -> None:
        """Remove the ballast."""
        with contextlib.suppress(FileNotFoundError):
            self.ballast.unlink()


@attrs.frozen(kw_only=True)
class Deployment:
    """What the processes run against: every peer the run controls."""

    fakes: LoopThread
    postgres: PrivateServer
    s3: StoppableS3
    bucket: str
    speechkit: FakeSpeechKit
    bot: FakeBotApi
    receiver: Receiver
    disk: Disk


@attrs.define
class Upload:
    """One upload as the client saw it: which channel, and the job it made (once accepted)."""

    index: int
    channel: str
    length: str
    job_id: str | None = None
    #: The Telegram message id, for a recording sent by Telegram.
    message_id: int | None = None
    #: Tries the client needed (503 while S3 was down, 507 while the disk was full, ...).
    tries: int = 0
    #: Seconds into the run when it was sent.
    sent_at: float = 0.0


class Run:
    """A chaos run in ``root``: the deployment, the uploads, the schedule, the checks."""

    def __init__(
        self, the_plan: Plan, root: Path, *, quiet_timeout: float, starts_per_hour: int = 500
    ) -> None:
        self.plan = the_plan
        self.root = root
        self.quiet_timeout = quiet_timeout
        #: SpeechKit's async starts per hour the deployment paces itself to (checks: 5 per start).
        self.starts_per_hour = starts_per_hour
        self.report = Report(plan=the_plan)
        self.uploads: list[Upload] = []
        self.processes: dict[str, Process] = {}
        self.fault_ends: list[tuple[Fault, float]] = []
        self.samples: list[tuple[float, bool, int]] = []
        #: Seconds into the run when serve was killed, and when it answered again.
        self.serve_kills: list[float] = []
        self.serve_back = 0.0
        self._started = time.monotonic()
        #: When uploads began: the plan's times count from here.
        self._t0 = self._started
        self._sampling = threading.Event()

    # -- the deployment -------------------------------------------------------------

    def execute(self) -> Report:
        """Start everything, drive uploads and faults, wait for quiet, check; always clean up."""
        media = self.root / "media"
        media.mkdir(parents=True)
        recordings = {
            "short": tone(media / "short.mp3", 1).read_bytes(),
            "long": tone(media / "long.mp3", 5).read_bytes(),
        }
        fakes = LoopThread()
        postgres = PrivateServer.start()
        if postgres is None:
            fakes.close()
            raise RuntimeError("the chaos run needs initdb and pg_ctl (and, as root, runuser)")
        try:
            with (
                StoppableS3() as s3,
                Disk.mounted(self.root / "disk") as disk,
                self._fakes(fakes, s3) as (speechkit, bot, receiver),
            ):
                bucket = f"chaos-{self.plan.seed}"
                s3.moto.admin().create_bucket(Bucket=bucket)
                peers = Deployment(
                    fakes=fakes,
                    postgres=postgres,
                    s3=s3,
                    bucket=bucket,
                    speechkit=speechkit,
                    bot=bot,
                    receiver=receiver,
                    disk=disk,
                )
                self._start_processes(self._config(peers), disk)
                monitor = threading.Thread(target=self._sample, name="chaos-monitor")
                self._sampling.set()
                monitor.start()
                try:
                    self._drive(recordings, peers)
                    self._wait_quiet(postgres.url)
                    self._check(peers)
                finally:
                    self._sampling.clear()
                    monitor.join()
                    self._stop_processes()
        finally:
            postgres.stop()
            fakes.close()
        self.report.recoveries = self._recoveries()
        self.report.seconds = time.monotonic() - self._started
        return self.report

    @contextlib.contextmanager
    def _fakes(
        self, fakes: LoopThread, s3: StoppableS3
    ) -> Iterator[tuple[FakeSpeechKit, FakeBotApi, Receiver]]:
        speechkit = FakeSpeechKit(storage_url=s3.moto.endpoint_url)
        bot = FakeBotApi()
        receiver = Receiver()
        fakes.call(speechkit.__aenter__())
        fakes.call(bot.__aenter__())
        fakes.call(receiver.start())
        try:
            yield speechkit, bot, receiver
        finally:
            speechkit.storm = None
            with contextlib.suppress(Exception):
                fakes.call(receiver.stop())
            with contextlib.suppress(Exception):
                fakes.call(bot.close())
            with contextlib.suppress(Exception):
                fakes.call(speechkit.__aexit__(None, None, None))

    def _config(self, peers: Deployment) -> dict[str, dict[str, Any]]:
        speechkit, s3, bucket, bot = peers.speechkit, peers.s3, peers.bucket, peers.bot
        url = peers.postgres.url
        return {
            "database": {"url": url, "pool_size": 4},
            "storage": {"files": "s3"},
            "recognizer": {"kind": "yandex"},
            "yandex": {
                "api_key": API_KEY,
                "stt_url": speechkit.stt_url,
                "operation_url": speechkit.operation_url,
                "v3_url": speechkit.v3_url,
                "sync_url": speechkit.sync_url,
                "sync_max_seconds": 0,
                # A 5 s recording goes in parts: each part is recognised on its own.
                "max_seconds": 2,
                "starts_per_hour": self.starts_per_hour,
                "checks_per_hour": self.starts_per_hour * 5,
            },
            "s3": {
                "endpoint_url": s3.moto.endpoint_url,
                "region": REGION,
                "bucket": bucket,
                "access_key_id": ACCESS_KEY_ID,
                "secret_access_key": SECRET_ACCESS_KEY,
                "path_style": True,
            },
            "telegram": {"token": TOKEN, "api_base": bot.url},
            "webhooks": {"secret": WEBHOOK_SECRET, "allow_private": True, "timeout_seconds": 5},
            "queue": {
                "lease_seconds": 10,
                "lease_renewal_seconds": 2,
                "condition_pause_seconds": 5,
                "idle_poll_seconds": 0.5,
            },
            "shutdown": {"grace_seconds": 3.0, "hard_seconds": 10.0},
        }

    def _start_processes(self, shared: dict[str, dict[str, Any]], disk: Disk) -> None:
        serve = {**shared, "workers": {"convert": 0, "recognize": 0, "check": 0}}
        self.processes["serve"] = Process("serve", self.root / "serve", serve, worker=False)
        for number in range(3):
            name = f"worker-{number}"
            config = {
                **shared,
                "workers": {"convert": 2, "recognize": 1, "check": 1, "deliver": 2},
                "storage": {**shared["storage"], "min_free_bytes": 1024 * 1024},
            }
            self.processes[name] = Process(
                name, self.root / name, config, worker=True, data_dir=disk.mount_point / name
            )
        with concurrent.futures.ThreadPoolExecutor(len(self.processes)) as pool:
            for started in [pool.submit(p.start) for p in self.processes.values()]:
                started.result()

    def _stop_processes(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(Exception):
                process.kill()

    # -- uploads and faults ---------------------------------------------------------

    def _now(self) -> float:
        return time.monotonic() - self._t0

    def _drive(self, recordings: Mapping[str, bytes], peers: Deployment) -> None:
        """Upload at the plan's rate while the schedule injects its faults; then end them all."""
        self._t0 = time.monotonic()
        events: list[tuple[float, int, Callable[[], None]]] = []
        restarts = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="chaos-restart")
        pending: list[concurrent.futures.Future[None]] = []
        for order, fault in enumerate(self.plan.faults):
            start, end = self._actions(fault, peers, restarts, pending)
            events.append((fault.at, order * 2, start))
            if end is not None:
                events.append((fault.at + fault.seconds, order * 2 + 1, end))
        uploads = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="chaos-upload")
        sent: list[concurrent.futures.Future[None]] = []
        for index, (channel, length) in enumerate(self.plan.uploads):
            upload = Upload(index, channel, length)
            self.uploads.append(upload)
            at = index / self.plan.rate
            data = recordings[length]
            if channel == "http":
                job = lambda u=upload, d=data: self._post(u, d, peers.receiver.url)  # noqa: E731
            else:
                job = lambda u=upload, d=data: self._telegram(u, d, peers)  # noqa: E731
            events.append((at, -1, lambda j=job: sent.append(uploads.submit(j))))
        events.sort(key=lambda event: (event[0], event[1]))
        try:
            for at, _, action in events:
                wait = at - self._now()
                if wait > 0:
                    # The schedule itself: the next fault or upload is due then.
                    time.sleep(wait)
                action()
        finally:
            # Whatever happened: no fault outlives the schedule.
            peers.speechkit.storm = None
            peers.s3.start()
            peers.disk.free()
            for future in concurrent.futures.as_completed(pending):
                future.result()
            restarts.shutdown()
            for future in concurrent.futures.as_completed(sent):
                future.result()
            uploads.shutdown()

    def _actions(
        self,
        fault: Fault,
        peers: Deployment,
        restarts: concurrent.futures.ThreadPoolExecutor,
        pending: list[concurrent.futures.Future[None]],
    ) -> tuple[Callable[[], None], Callable[[], None] | None]:
        """What starts ``fault`` and what ends it (None: it ends by itself)."""

        postgres, s3, speechkit, disk = peers.postgres, peers.s3, peers.speechkit, peers.disk

        def ended() -> None:
            self.fault_ends.append((fault, self._now()))

        if fault.kind in {"kill_worker", "kill_api"}:
            process = self.processes[fault.target]

            def kill_and_restart() -> None:
                process.kill()
                if process.name == "serve":
                    self.serve_kills.append(self._now())
                ended()
                process.start()
                if process.name == "serve":
                    self.serve_back = self._now()

            return (lambda: pending.append(restarts.submit(kill_and_restart))), None
        if fault.kind == "restart_postgres":

            def restart() -> None:
                postgres.restart()
                ended()

            return (lambda: pending.append(restarts.submit(restart))), None
        if fault.kind == "stop_s3":

            def s3_back() -> None:
                s3.start()
                ended()

            return s3.stop, s3_back
        if fault.kind in {"speechkit_500", "speechkit_429"}:
            status = 500 if fault.kind == "speechkit_500" else 429

            def storm() -> None:
                speechkit.storm = status

            def calm() -> None:
                if speechkit.storm == status:
                    speechkit.storm = None
                ended()

            return storm, calm
        if fault.kind == "disk_full":

            def space_back() -> None:
                disk.free()
                ended()

            return disk.fill, space_back
        raise ValueError(f"no such fault: {fault.kind}")

    def _post(self, upload: Upload, data: bytes, callback: str) -> None:
        """POST the recording like a careful client: the same key until it is accepted."""
        key = f"chaos-{self.plan.seed}-{upload.index}"
        # Long enough for serve to be restarted on a loaded machine, and to come back.
        deadline = time.monotonic() + START_TIMEOUT + self.quiet_timeout
        serve = self.processes["serve"]
        while time.monotonic() < deadline:
            upload.tries += 1
            service = serve.service
            if service is not None:
                with contextlib.suppress(httpx.HTTPError):
                    response = httpx.post(
                        service.base_url + "/api/audio",
                        files={"file": (f"chaos-{upload.index}.mp3", data)},
                        data={"callback_url": callback},
                        headers={"Idempotency-Key": key},
                        timeout=30.0,
                    )
                    if response.status_code in {200, 202}:
                        upload.job_id = response.json()["job_id"]
                        return
            # The client's own back-off: the service is restarting or short of a dependency.
            time.sleep(0.5)
        self.report.notes.append(f"upload {upload.index} was never accepted")

    def _telegram(self, upload: Upload, data: bytes, peers: Deployment) -> None:
        """Send the recording as a voice message; Telegram keeps it until the bot takes it."""
        upload.tries = 1
        upload.sent_at = self._now()
        voice = peers.bot.add_file(data)
        chat = CHATS[upload.index % len(CHATS)]
        upload.message_id = peers.fakes.call(peers.bot.push_media(chat, "voice", voice))

    # -- watching and checking ------------------------------------------------------

    def _sample(self) -> None:
        """Every quarter second: is every process healthy, and how many jobs are done."""
        url = self.processes["serve"].config["database"]["url"]
        while self._sampling.is_set():
            healthy = all(p.health() == 200 for p in self.processes.values())
            done = -1
            with (
                contextlib.suppress(psycopg.Error),
                psycopg.connect(url, autocommit=True, connect_timeout=2) as conn,
            ):
                row = conn.execute("SELECT count(*) FROM jobs WHERE state = 'done'").fetchone()
                done = int(row[0]) if row else -1
            self.samples.append((self._now(), healthy, done))
            time.sleep(0.25)

    def _recoveries(self) -> list[tuple[Fault, float | None]]:
        """Per fault: from its end until all processes answer 200 and a job got done (or all)."""
        total = sum(1 for upload in self.uploads if upload.job_id or upload.message_id)
        result: list[tuple[Fault, float | None]] = []
        for fault, end in sorted(self.fault_ends, key=lambda item: item[1]):
            before = max((done for t, _, done in self.samples if t <= end), default=-1)
            recovered = None
            for t, healthy, done in self.samples:
                if t >= end and healthy and (done > before or done >= total):
                    recovered = t - end
                    break
            result.append((fault, recovered))
        return result

    def _wait_quiet(self, url: str) -> None:
        """Poll until every job ended and every delivery went, or nothing moved for a while.

        Every Telegram recording is waited for: one being received when serve
        was killed is taken again by the next serve (ADR 53). The timeout is
        for a stall, not a pace: it restarts whenever a job ends, a delivery
        goes or a job arrives, so a loaded machine that is slow but working
        is waited for, and a run where nothing moves for ``quiet_timeout``
        seconds is reported (CI, 2026-12-03: a fixed deadline cut off a run
        that had recognised 41 of 50 and was still going).
        """
        deadline = time.monotonic() + self.quiet_timeout
        last: tuple[int, int, int] | None = None
        while time.monotonic() < deadline:
            expected = len(self.uploads)
            with contextlib.suppress(psycopg.Error):
                with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
                    jobs, running = conn.execute(
                        "SELECT count(*), count(*) FILTER (WHERE state NOT IN"
                        " ('done', 'failed', 'dead')) FROM jobs"
                    ).fetchone() or (0, 0)
                    [(deliveries,)] = conn.execute("SELECT count(*) FROM deliveries").fetchall()
                if jobs >= expected and running == 0 and deliveries == 0:
                    return
                if (jobs, running, deliveries) != last:
                    last = (jobs, running, deliveries)
                    deadline = time.monotonic() + self.quiet_timeout
            time.sleep(0.5)
        self.report.notes.append(f"nothing moved for {self.quiet_timeout:g} s: not quiet")

    def _check(self, peers: Deployment) -> None:
        """Every invariant of the end state, each with its figure."""
        url, s3, bucket = peers.postgres.url, peers.s3, peers.bucket
        speechkit, bot, receiver = peers.speechkit, peers.bot, peers.receiver
        checks = self.report.invariants
        with psycopg.connect(url, autocommit=True) as conn:
            jobs = conn.execute(
                "SELECT id, state, origin_kind, origin_message_id, acquisition_id FROM jobs"
            ).fetchall()
            parts = conn.execute(
                "SELECT job_id, count(*) FROM job_parts GROUP BY job_id"
            ).fetchall()
            keys = {
                key
                for (key,) in conn.execute(
                    "SELECT object_key FROM files WHERE location = 's3'"
                ).fetchall()
            }
            [(deliveries,)] = conn.execute("SELECT count(*) FROM deliveries").fetchall()
            [(delivery_leases,)] = conn.execute(
                "SELECT count(*) FROM deliveries WHERE acquisition_id IS NOT NULL"
            ).fetchall()
        self.report.jobs = len(jobs)
        states = Counter(state for _, state, _, _, _ in jobs)
        http_ids = {u.job_id for u in self.uploads if u.channel == "http" and u.job_id}
        messages = {u.message_id for u in self.uploads if u.channel == "telegram"}
        by_message = Counter(message for _, _, kind, message, _ in jobs if kind == "telegram")
        accepted = len(http_ids) + len(messages)
        checks.append(
            Invariant(
                "every upload accepted and every job done",
                accepted == len(self.uploads)
                and states == Counter({"done": accepted})
                and {job_id for job_id, _, kind, _, _ in jobs if kind == "http"} == http_ids
                and set(by_message) == messages
                and all(count == 1 for count in by_message.values()),
                f"{accepted}/{len(self.uploads)} accepted, jobs {dict(states)},"
                f" {len(http_ids)} over HTTP, {len(by_message)} by Telegram"
                f" (retried uploads: {sum(1 for u in self.uploads if u.tries > 1)})",
            )
        )
        split = dict(parts)
        units = sum(split.get(job_id, 1) for job_id, *_ in jobs)
        started = speechkit.started
        most = max(started.values(), default=0)
        # A start whose operation id was not saved yet (the worker killed, or the database
        # restarted, between SpeechKit's answer and the commit) is started again: SpeechKit
        # has no idempotency key. One such start can be in flight per worker's recognize loop.
        kinds = Counter(fault.kind for fault in self.plan.faults)
        workers = sum(1 for process in self.processes.values() if process.worker)
        crashes = kinds["kill_worker"] + kinds["restart_postgres"] * workers
        again = sum(count - 1 for count in started.values())
        checks.append(
            Invariant(
                "each recording and each part recognised once (again only after a crash)",
                len(started) == units and again <= crashes,
                f"{len(started)} recognised of {units} ({sum(split.values())} parts of"
                f" {len(split)} split jobs), started again: {again} (at most {crashes},"
                f" one per worker a crash could catch mid-start), most starts for one: {most}",
            )
        )
        answers = Counter(
            sent.reply_to
            for chat in CHATS
            for sent in bot.sent_to(chat)
            if sent.reply_to in messages and TRANSCRIPT in sent.body
        )
        checks.append(
            Invariant(
                "each Telegram recording answered exactly once",
                set(answers) == messages and set(answers.values()) <= {1},
                f"{len(answers)}/{len(messages)} answered, most answers to one:"
                f" {max(answers.values(), default=0)}",
            )
        )
        calls = receiver.calls
        checks.append(
            Invariant(
                "each webhook delivered at least once, signed, with its job's id",
                receiver.bad == 0
                and set(calls) == http_ids
                and all(set(states_) == {"done"} for states_ in calls.values()),
                f"{sum(len(v) for v in calls.values())} calls for {len(calls)}/{len(http_ids)}"
                f" jobs, {receiver.bad} bad, most calls for one:"
                f" {max((len(v) for v in calls.values()), default=0)}",
            )
        )
        objects = set(s3.moto.keys(bucket))
        pending_uploads = s3.moto.pending_uploads(bucket)
        staging = [
            str(path)
            for process in self.processes.values()
            if process.service is not None
            for path in (process.service.data_dir / "tmp").rglob("*")
            if path.is_file()
        ]
        checks.append(
            Invariant(
                "no orphan file or object",
                objects == keys and not pending_uploads and not staging,
                f"{len(objects)} objects, {len(keys)} file records,"
                f" {len(objects - keys)} objects without a record,"
                f" {len(keys - objects)} records without an object,"
                f" {len(pending_uploads)} open multipart uploads, {len(staging)} staging files",
            )
        )
        leases = sum(1 for *_, lease in jobs if lease is not None)
        checks.append(
            Invariant(
                "no lease still held, no delivery left",
                leases == 0 and delivery_leases == 0 and deliveries == 0,
                f"{leases} job leases, {delivery_leases} delivery leases, {deliveries} deliveries",
            )
        )
        health = {name: process.health() for name, process in self.processes.items()}
        exits = {name: process.stop(timeout=20.0) for name, process in self.processes.items()}
        checks.append(
            Invariant(
                "no process stuck",
                set(health.values()) == {200} and set(exits.values()) == {0},
                f"/health {health}, exit on SIGTERM {exits},"
                f" starts {{{', '.join(f'{n}: {p.starts}' for n, p in self.processes.items())}}}",
            )
        )


def run(
    seed: int,
    root: Path,
    *,
    duration: float = 60.0,
    rate: float = 0.5,
    rounds: int = 1,
    quiet_timeout: float = 90.0,
    starts_per_hour: int = 500,
    **lengths: float,
) -> Report:
    """One chaos run of ``seed`` in ``root`` (which it fills); the report.

    ``starts_per_hour`` is the SpeechKit quota the deployment paces itself to:
    SpeechKit's default (500) admits ~0.1 uploads per second, so a faster run
    raises it, as an operator with a raised quota would.
    """
    the_plan = plan(seed, duration=duration, rate=rate, rounds=rounds, **lengths)
    run = Run(the_plan, root, quiet_timeout=quiet_timeout, starts_per_hour=starts_per_hour)
    return run.execute()
