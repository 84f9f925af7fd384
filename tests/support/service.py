"""The real service in a subprocess on 127.0.0.1, for tests that go through its port.

``running_service(tmp_path, ...)`` writes a TOML config (data dir and temp
dir inside ``tmp_path``, a free port), starts ``python -m transcriber_app
serve -c <config>`` with its stderr captured to a file, waits until
``GET /health`` answers 200, and always stops the process (and any ffmpeg it
started) on the way out. ``start_failing`` runs a config that must not start
and returns its exit code and stderr.

Config sections are plain dicts; ``storage.data_dir`` and the ``http`` host
and port are filled in unless given::

    with running_service(tmp_path, config={"queue": {"lease_seconds": 3}}) as service:
        httpx.get(f"{service.base_url}/health")
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.support import processes
from tests.support.openapi import Conformance

#: How long a service may take to answer /health after its start: a hang detector, not a
#: pace (1.4 s idle here; a module's service wrote no line in 20 s once at load 8 with two
#: busy loops, and every test of the module failed).
READY_TIMEOUT = 60.0
#: How long a service refusing its config may take to exit: importing aiogram on a
#: loaded machine took over 20 s once; a wrong start costs only this wait.
REFUSE_TIMEOUT = 60.0
#: How long ``stop`` waits for the process to exit after the signal.
STOP_TIMEOUT = 20.0
#: Pause between two looks at a separate process (health, log lines, a job's state).
POLL_INTERVAL = 0.02
#: How the service is started, before ``-c <config>``.
SERVE_COMMAND = (sys.executable, "-m", "transcriber_app", "serve")
#: How a worker process is started (step loops, /health and /metrics on ``[worker]``).
WORKER_COMMAND = (sys.executable, "-m", "transcriber_app", "worker")
#: States a job never leaves by itself.
TERMINAL_STATES = frozenset({"done", "failed", "dead"})


#: Launches of a service whose port another program took between ``free_port``'s probe and
#: the server's bind (other test runs share the box), each on another port.
BIND_ATTEMPTS = 5


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now (it may be taken by then)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        text = str(value).replace("\\", "\\\\").replace('"', '\\"')
        return f'"{text}"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def to_toml(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """A TOML document of flat ``[section] key = value`` tables."""
    lines: list[str] = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
        lines.append("")
    return "\n".join(lines)


class Service:
    """One started service process and the files it writes."""

    def __init__(
        self,
        *,
        process: subprocess.Popen[bytes],
        port: int,
        root: Path,
        data_dir: Path,
        temp_dir: Path,
        config_path: Path,
        stderr_path: Path,
        stdout_path: Path,
    ) -> None:
        self.process = process
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.root = root
        self.data_dir = data_dir
        self.temp_dir = temp_dir
        self.config_path = config_path
        self.stderr_path = stderr_path
        self.stdout_path = stdout_path
        #: Set by ``check_answers``: what holds this service's answers to its document.
        self.conformance: Conformance | None = None

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def logs(self) -> str:
        """Everything the process wrote to stderr so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def log_lines(self) -> list[str]:
        """The stderr lines written so far."""
        return self.logs().splitlines()

    def stdout(self) -> str:
        """Everything the process wrote to stdout so far."""
        return self.stdout_path.read_text(encoding="utf-8", errors="replace")

    def wait_for_log(self, *fragments: str, timeout: float = 20.0) -> str:
        """The first stderr line holding every fragment; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_lines():
                if all(fragment in line for fragment in fragments):
                    return line
            if self.process.poll() is not None:
                raise AssertionError(
                    f"service exited ({self.process.returncode}) before logging {fragments}:\n"
                    + self.logs()
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line with {fragments} in {timeout} s:\n{self.logs()}")
            time.sleep(POLL_INTERVAL)

    def wait_for_job(
        self,
        job_id: str,
        *,
        states: frozenset[str] = TERMINAL_STATES,
        headers: Mapping[str, str] | None = None,
        timeout: float = 20.0,
    ) -> dict[str, Any]:
        """``GET /api/status/{job_id}`` until its state is one of ``states``; the last answer."""
        deadline = time.monotonic() + timeout
        with self.client(headers=headers) as client:
            while True:
                response = client.get(f"/api/status/{job_id}")
                assert response.status_code == 200, response.text
                body: dict[str, Any] = response.json()
                if body["state"] in states:
                    return body
                if time.monotonic() > deadline:
                    raise AssertionError(f"job still {body['state']} after {timeout} s")
                time.sleep(POLL_INTERVAL)

    def stored_names(self) -> list[str]:
        """Names of the files in the local store (``<data_dir>/files``)."""
        folder = self.data_dir / "files"
        return sorted(path.name for path in folder.iterdir()) if folder.exists() else []

    def staging_files(self) -> list[str]:
        """Names of staging files in the data dir's staging folders or the system temp dir.

        The staging dir holds one folder per running process (ADR 38): only
        files count.
        """
        staging = self.data_dir / "tmp"
        found = [path for path in staging.rglob("*") if not path.is_dir()]
        found.extend(self.temp_dir.glob("transcriber-*"))
        return sorted(path.name for path in found)

    def query(self, sql: str, parameters: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only query on the service's database (it may be running)."""
        uri = f"file:{self.data_dir / 'transcriber.db'}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5.0)) as conn:
            return conn.execute(sql, parameters).fetchall()

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client on the service's base URL; answers checked after ``check_answers``."""
        kwargs.setdefault("timeout", 10.0)
        if self.conformance is not None:
            kwargs.setdefault("event_hooks", {"response": [self.conformance]})
        return httpx.Client(base_url=self.base_url, **kwargs)

    def check_answers(self) -> Conformance:
        """From now on, every client's answers to documented routes must match the document."""
        document = httpx.get(f"{self.base_url}/api/openapi.json", timeout=10.0).json()
        self.conformance = Conformance(document)
        return self.conformance

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int:
        """Send ``sig`` and wait for the exit; the exit code (negative: killed by a signal)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"service did not exit within {timeout} s of signal {sig}"
            ) from None

    def kill(self) -> int:
        """SIGKILL the server like a crash, then any child it left running; the exit code.

        ffmpeg dies with the server by itself (``setpriv --pdeathsig``); this
        sweep is for hosts without setpriv and for other children. It runs
        after the server is killed so the server cannot notice and react.
        """
        children = processes.children(parent=self.process.pid)
        if self.process.poll() is None:
            self.process.kill()
        code = self.process.wait(STOP_TIMEOUT)
        for pid in children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        return code

    def cleanup(self) -> None:
        """Kill the server and whatever it started, if still running."""
        self.kill()


def write_config(
    root: Path,
    *,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    data_dir: Path | None = None,
    port: int | None = None,
    raw: str = "",
    listener: str = "http",
) -> tuple[Path, Path, int]:
    """Write ``root/config.toml``; return its path, the data dir and the port.

    ``listener`` is the section whose host and port are filled in and
    returned: ``http`` for ``serve``, ``worker`` for ``transcriber worker``.
    """
    sections: dict[str, dict[str, Any]] = {
        name: dict(values) for name, values in (config or {}).items()
    }
    storage = sections.setdefault("storage", {})
    storage.setdefault("data_dir", str(data_dir or root / "data"))
    listening = sections.setdefault(listener, {})
    listening.setdefault("host", "127.0.0.1")
    listening.setdefault("port", port or free_port())
    sections.setdefault("shutdown", {}).setdefault("grace_seconds", 5.0)
    sections["shutdown"].setdefault("hard_seconds", 10.0)
    path = root / "config.toml"
    path.write_text(to_toml(sections) + raw, encoding="utf-8")
    # A test of a broken config may give a port that is not a number.
    port_value = listening["port"]
    return path, Path(storage["data_dir"]), port_value if isinstance(port_value, int) else 0


def _environment(temp_dir: Path, env: Mapping[str, str] | None) -> dict[str, str]:
    merged = {key: value for key, value in os.environ.items() if not key.startswith("TRANSCRIBER_")}
    merged["TMPDIR"] = str(temp_dir)
    merged["PYTHONUNBUFFERED"] = "1"
    merged.update(env or {})
    return merged


def _launch(
    root: Path,
    config_path: Path,
    temp_dir: Path,
    env: Mapping[str, str] | None,
    command: Sequence[str] = SERVE_COMMAND,
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    run = 1
    while (root / f"stderr-{run}.log").exists():
        run += 1
    stderr_path = root / f"stderr-{run}.log"
    stdout_path = root / f"stdout-{run}.log"
    with stderr_path.open("wb") as stderr, stdout_path.open("wb") as stdout:
        process = subprocess.Popen(
            [*command, "-c", str(config_path)],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=_environment(temp_dir, env),
            cwd=root,
        )
    return process, stderr_path, stdout_path


class PortTakenError(AssertionError):
    """The service could not listen: another program took its port after ``free_port``."""


def _wait_ready(service: Service, timeout: float, statuses: Collection[int] = (200,)) -> None:
    """Until the service answers /health with one of ``statuses`` and it is this process's.

    Its ``service.start`` line (written once it listens) tells its own answer from that of
    another program holding the port; ``PortTakenError`` when it could not listen.
    """
    deadline = time.monotonic() + timeout
    answered = False
    with httpx.Client(base_url=service.base_url, timeout=2.0) as client:
        while True:
            if service.process.poll() is not None:
                failure = PortTakenError if _lost_its_port(service) else AssertionError
                raise failure(
                    f"service exited with {service.process.returncode} before it was ready:\n"
                    + service.logs()
                )
            if not answered:
                with contextlib.suppress(httpx.TransportError):
                    answered = client.get("/health").status_code in statuses
            if answered and "event=service.start " in service.logs():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"service not ready in {timeout} s:\n{service.logs()}")
            time.sleep(POLL_INTERVAL)


def _lost_its_port(service: Service) -> bool:
    """Whether the service's log says its port was in use when it tried to listen."""
    return any(
        "event=service.bind_failed" in line and f"errno={errno.EADDRINUSE}" in line
        for line in service.log_lines()
    )


@contextlib.contextmanager
def running_service(
    root: Path,
    *,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    data_dir: Path | None = None,
    raw: str = "",
    ready_timeout: float = READY_TIMEOUT,
    command: Sequence[str] = SERVE_COMMAND,
    listener: str = "http",
    ready_statuses: Collection[int] = (200,),
) -> Iterator[Service]:
    """A started service whose /health answered 200; killed on exit if still running.

    ``root`` holds the config, the captured output and, unless ``data_dir``
    is given (a restart on an earlier service's data), the data dir. The
    process gets ``TMPDIR=root/tmp`` so a test can see what staging leaves
    behind, and no ``TRANSCRIBER_*`` variables but those in ``env``.
    Calling it again with the same ``root`` keeps earlier runs' logs.
    ``command`` replaces ``python -m transcriber_app serve`` (a wrapper such
    as ``prlimit``, or a benchmark's variant of the server); it must exec
    the server, so the process is the server. A worker is started with
    ``command=WORKER_COMMAND, listener="worker"``: its port is ``[worker]``'s.
    ``ready_statuses`` are the /health answers that count as started (a
    chaos run takes a 503: the service is up, a dependency is not).
    """
    root.mkdir(parents=True, exist_ok=True)
    temp_dir = root / "tmp"
    temp_dir.mkdir(exist_ok=True)
    # A port the test chose is its own business; one picked here is picked again if taken.
    attempts = 1 if "port" in (config or {}).get(listener, {}) else BIND_ATTEMPTS
    for attempt in range(1, attempts + 1):
        config_path, data, port = write_config(
            root, config=config, data_dir=data_dir, raw=raw, listener=listener
        )
        process, stderr_path, stdout_path = _launch(root, config_path, temp_dir, env, command)
        service = Service(
            process=process,
            port=port,
            root=root,
            data_dir=data,
            temp_dir=temp_dir,
            config_path=config_path,
            stderr_path=stderr_path,
            stdout_path=stdout_path,
        )
        try:
            _wait_ready(service, ready_timeout, ready_statuses)
        except PortTakenError:
            service.cleanup()
            if attempt == attempts:
                raise
            continue
        except BaseException:
            service.cleanup()
            raise
        break
    try:
        yield service
    finally:
        service.cleanup()


def start_failing(
    root: Path,
    *,
    config: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    raw: str = "",
    timeout: float = REFUSE_TIMEOUT,
    command: Sequence[str] = SERVE_COMMAND,
) -> tuple[int, str]:
    """Start the service (or ``command``) on a config that must be refused; exit code, stderr."""
    root.mkdir(parents=True, exist_ok=True)
    temp_dir = root / "tmp"
    temp_dir.mkdir(exist_ok=True)
    config_path, _, _ = write_config(root, config=config, raw=raw)
    process, stderr_path, _ = _launch(root, config_path, temp_dir, env, command)
    try:
        code = process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError("the service started on a config it should refuse") from None
    return code, stderr_path.read_text(encoding="utf-8", errors="replace")
