"""Loops per step and the express lane in the real service, on real ffmpeg (ADR 27).

Two 2-hour WAVs take the general convert loops for most of a minute each;
a 5-second clip sent after them must be answered meanwhile, by the
express loop. Then SIGTERM stops a service whose loops are all busy.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.media import FFMPEG, generate
from tests.support.service import Service, running_service

pytestmark = pytest.mark.slow

#: 8 kHz mono 8-bit PCM: 8,000 bytes per second, far above ``min_bytes_per_second``.
PCM_U8 = ("-ac", "1", "-c:a", "pcm_u8")
#: How long the service may take to reach a state a test waits for.
DEADLINE = 60.0


def _wav(target: Path, seconds: int) -> Path:
    source = f"sine=frequency=440:sample_rate=8000:duration={seconds}"
    return generate(target, "-f", "lavfi", "-i", source, *PCM_U8)


@pytest.fixture(scope="module")
def two_hours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-hour WAV (57.6 MB): too big for the express lane, about a minute of ffmpeg."""
    return _wav(tmp_path_factory.mktemp("media") / "two-hours.wav", 7200)


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A 5-second WAV: small, and its header says 5 seconds."""
    return _wav(tmp_path_factory.mktemp("media") / "clip.wav", 5).read_bytes()


@contextlib.contextmanager
def _service(root: Path, *, convert: int) -> Iterator[Service]:
    """``convert`` convert loops (the first one express) and a one-second shutdown grace."""
    config = {"workers": {"convert": convert}, "shutdown": {"grace_seconds": 1, "hard_seconds": 20}}
    with running_service(root, config=config) as started:
        started.check_answers()  # queue_position included
        yield started


def _upload(client: httpx.Client, path: Path | bytes, name: str) -> str:
    data = path.read_bytes() if isinstance(path, Path) else path
    response = client.post("/api/audio", files={"file": (name, data, "audio/wav")})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["job_id"]
    return job_id


def _wait_converting(service: Service, job_ids: list[str]) -> None:
    """Until every job is leased in the convert step (its ffmpeg running)."""
    marks = ", ".join("?" * len(job_ids))
    sql = (
        f"SELECT count(*) FROM jobs WHERE id IN ({marks})"
        " AND state = 'convert' AND acquisition_id IS NOT NULL"
    )
    deadline = time.monotonic() + DEADLINE
    while service.query(sql, tuple(job_ids))[0][0] < len(job_ids):
        assert time.monotonic() < deadline, service.logs()
        time.sleep(0.05)


def test_a_clip_is_done_while_two_long_recordings_convert(
    tmp_path: Path, two_hours: Path, clip: bytes
) -> None:
    """Two convert loops: the clip sent after two 2-hour WAVs is done while both still convert.

    Without the express lane both loops would be converting the long ones,
    and the clip would wait most of a minute for one of them.
    """
    with _service(tmp_path, convert=2) as service, service.client(timeout=60) as client:
        long_ids = [_upload(client, two_hours, f"long-{n}.wav") for n in range(2)]
        _wait_converting(service, long_ids[:1])
        clip_id = _upload(client, clip, "clip.wav")
        done = service.wait_for_job(clip_id, states=frozenset({"done"}), timeout=DEADLINE)
        assert done["duration"] == pytest.approx(5.0, abs=0.1)
        running, waiting = (client.get(f"/api/status/{job_id}").json() for job_id in long_ids)
        assert (running["state"], waiting["state"]) == ("convert", "convert")
        # The first is running (no place in a queue); the second is next for a general loop.
        assert "queue_position" not in running
        assert waiting["queue_position"] == 0
        lanes = dict(service.query("SELECT id, short FROM jobs"))
    assert [lanes[job_id] for job_id in (*long_ids, clip_id)] == [0, 0, 1]


def test_sigterm_with_two_conversions_running_stops_after_the_grace(
    tmp_path: Path, two_hours: Path
) -> None:
    """Two conversions running at once: SIGTERM cancels both after the grace and exits cleanly."""
    with _service(tmp_path, convert=3) as service, service.client(timeout=60) as client:
        long_ids = [_upload(client, two_hours, f"long-{n}.wav") for n in range(2)]
        queued = _upload(client, two_hours, "long-3.wav")
        _wait_converting(service, long_ids)
        waiting = client.get(f"/api/status/{queued}").json()
        assert waiting["queue_position"] == 0
        started = time.monotonic()
        assert service.stop() == 0
        assert time.monotonic() - started < 10
        assert "service.stopped" in service.logs()
        rows = service.query("SELECT id, state, acquisition_id IS NOT NULL FROM jobs")
    # Cancelled mid-step: still in convert under a lease that will expire; the third never ran.
    assert sorted(rows) == sorted(
        [(job_id, "convert", 1) for job_id in long_ids] + [(queued, "convert", 0)]
    )


#: Stands in for ffmpeg on the service's PATH: notes when each run starts and ends, its
#: niceness and the size of its input, and runs the real ffmpeg in between.
_TIMED_FFMPEG = """#!/bin/sh
input=""
previous=""
for argument in "$@"; do
    [ "$previous" = "-i" ] && input="${{argument#file:}}"
    previous="$argument"
done
started=$(date +%s.%N)
"{ffmpeg}" "$@"
code=$?
echo "$started $(date +%s.%N) $(nice) $(stat -c %s "$input")" >> "{runs}"
exit $code
"""


def test_two_long_conversions_overlap_and_yield_to_a_clip(tmp_path: Path, clip: bytes) -> None:
    """Two long recordings' ffmpegs run at the same time, niced by 10; the clip's is not (ADR 63).

    Overlap is read from the times each ffmpeg noted itself: a lock, one
    shared thread or a database lock held across a conversion would make
    the second start only after the first ended.
    """
    long_wav = _wav(tmp_path / "three-minutes.wav", 180)
    runs = tmp_path / "ffmpeg-runs"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ffmpeg"
    wrapper.write_text(_TIMED_FFMPEG.format(ffmpeg=FFMPEG, runs=runs))
    wrapper.chmod(0o755)
    config = {
        # Explicit, so that a one-CPU machine runs two general loops too.
        "workers": {"convert": 3, "express_seconds": 60},
        "shutdown": {"grace_seconds": 0, "hard_seconds": 10},
    }
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    with (
        running_service(tmp_path / "service", config=config, env=env) as service,
        service.client(timeout=60) as client,
    ):
        job_ids = [_upload(client, long_wav, f"long-{n}.wav") for n in range(2)]
        job_ids.append(_upload(client, clip, "clip.wav"))
        for job_id in job_ids:
            service.wait_for_job(job_id, states=frozenset({"done"}), timeout=DEADLINE)
    rows = [line.split() for line in runs.read_text().splitlines()]
    by_size: dict[int, list[tuple[float, float, int]]] = {}
    for started, ended, niceness, size in rows:
        by_size.setdefault(int(size), []).append((float(started), float(ended), int(niceness)))
    own = os.getpriority(os.PRIO_PROCESS, 0)
    longs, clips = by_size[long_wav.stat().st_size], by_size[len(clip)]
    assert max(started for started, _, _ in longs) < min(ended for _, ended, _ in longs), longs
    assert [niceness for _, _, niceness in longs] == [min(own + 10, 19)] * 2
    assert [niceness for _, _, niceness in clips] == [own]
