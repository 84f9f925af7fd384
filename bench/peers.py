"""Bare faster-whisper, this service and a peer on the same files in one run, alternating.

Prints each system's median time per file, its ratio to bare faster-whisper,
its word error rate against the text said and its difference from bare's
words; for this service also where its time went (upload and queue,
convert, recognize: the ``step.end`` lines of its log).

- ``bare``: ``WhisperModel.transcribe(path)`` in a child process that loaded
  the model once, segments consumed; it decodes the file itself (PyAV).
- ``service``: the real service (``python -m transcriber_app serve``,
  ``kind = "whisper"``, one recognize loop), from the upload's start to the
  job's ``updated`` stamp at ``done`` (``/api/status`` polled every 0.2 s).
- ``peer``: whisper-asr-webservice (``--peer DIR``: its ``app`` folder and a
  ``venv`` of its own; see docs/benchmarks.md for what had to be patched to
  run it offline), its faster-whisper engine, ``POST /asr`` to the answer.

All on Whisper base (joined from its two packages), int8, beam 5, word
timings, VAD on, ``--threads`` CPU threads, language ``--language``. The
files are espeak-ng saying the test story (Ogg/Opus, as a voice note is
sent): a 10-second clip and a whole number of tellings near ``--minutes``.
The box is shared and noisy: read the ratios, measured in the same rounds,
and the CPU seconds each system's process (and its reaped children, ffmpeg)
spent on a run (``cpu_vs_bare``), which other load moves far less.

Usage: PYTHONPATH=src .venv/bin/python -P bench/peers.py [--rounds 3] [--minutes 5]
       [--systems bare,service,peer] [--peer /tmp/peer] [--batch-size 0] [--threads 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

import httpx  # noqa: E402 - after the path
from tests.support.media import FFMPEG  # noqa: E402
from tests.support.service import Service, free_port, running_service  # noqa: E402
from tests.support.speech import (  # noqa: E402
    STORY,
    base_model,
    looped,
    speak,
    story,
    word_error_rate,
)

from transcriber_adapters.ffmpeg import FfmpegConverter  # noqa: E402

#: The 10-second clip: the first sentences of the story.
CLIP_TEXT = " ".join(STORY[:3])
#: How often the service's status is polled; the time is the job's own ``updated``.
POLL = 0.2
#: Clock ticks per second of /proc/<pid>/stat.
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and its reaped children (ffmpeg) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    # utime, stime, cutime, cstime: fields 14-17, counted from the state (field 3).
    return sum(int(value) for value in fields[11:15]) / TICKS


def timed(system: Any, path: Path) -> tuple[float, str, dict[str, float]]:
    """One run of ``system`` on ``path``, its CPU seconds added to the figures."""
    before = cpu_seconds(system.pid)
    took, text, figures = system.run(path)
    return took, text, {**figures, "cpu": cpu_seconds(system.pid) - before}


def bare_child(model: str, threads: int, batch: int, language: str) -> None:
    """Load the model once, then transcribe each path read from stdin; JSON lines out."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel  # noqa: PLC0415

    whisper = WhisperModel(model, device="cpu", compute_type="int8", cpu_threads=threads)
    options: dict[str, Any] = {
        "beam_size": 5,
        "word_timestamps": True,
        "language": language or None,
        "vad_filter": True,
    }
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        began = time.monotonic()
        if batch:
            engine = BatchedInferencePipeline(whisper)
            segments, _ = engine.transcribe(line.strip(), batch_size=batch, **options)
        else:
            segments, _ = whisper.transcribe(line.strip(), **options)
        text = " ".join(str(segment.text).strip() for segment in segments)
        print(json.dumps({"seconds": time.monotonic() - began, "text": text}), flush=True)


class Bare:
    """The child that holds faster-whisper's model."""

    def __init__(self, model: Path, args: argparse.Namespace) -> None:
        command = [sys.executable, "-P", __file__, "--bare-child", str(model)]
        command += [str(args.threads), str(args.batch_size), args.language]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        assert json.loads(self._process.stdout.readline())["ready"]
        self.pid = self._process.pid

    def run(self, path: Path) -> tuple[float, str, dict[str, float]]:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(f"{path}\n")
        self._process.stdin.flush()
        answer = json.loads(self._process.stdout.readline())
        return answer["seconds"], answer["text"], {}

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


class ThisService:
    """The service, uploaded to over HTTP; its step times read from its log."""

    def __init__(self, service: Service) -> None:
        self._service = service
        self.pid = service.pid

    def run(self, path: Path) -> tuple[float, str, dict[str, float]]:
        body = path.read_bytes()
        with httpx.Client(base_url=self._service.base_url, timeout=120) as client:
            began = time.time()
            answer = client.post("/api/audio", files={"file": (path.name, body, "audio/ogg")})
            answer.raise_for_status()
            job_id = answer.json()["job_id"]
            while True:
                status = client.get(f"/api/status/{job_id}").json()
                if status["state"] in ("done", "failed", "dead"):
                    break
                time.sleep(POLL)
        # The job's end as the service stamped it (same machine, same clock): no
        # polling granularity, and few polls to spend the service's CPU on.
        took = datetime.fromisoformat(status["updated"]).timestamp() - began
        assert status["state"] == "done", status
        return took, status["text"], self._steps(job_id, took)

    def _steps(self, job_id: str, total: float) -> dict[str, float]:
        steps: dict[str, float] = {}
        for line in self._service.log_lines():
            if "event=step.end" in line and f"job_id={job_id}" in line:
                state = re.search(r" state=(\w+)", line)
                seconds = re.search(r" seconds=([0-9.]+)", line)
                if state and seconds:
                    steps[state.group(1)] = float(seconds.group(1))
        steps["queue_and_http"] = total - sum(steps.values())
        return steps


class Peer:
    """whisper-asr-webservice from its own venv, on the same model."""

    def __init__(self, folder: Path, model: Path, args: argparse.Namespace, log: Path) -> None:
        self.port = free_port()
        stubs = folder / "offline-stubs"
        env = {
            **os.environ,
            "ASR_ENGINE": "faster_whisper",
            "ASR_MODEL": str(model),
            "ASR_QUANTIZATION": "int8",
            "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": f"{stubs}:{folder}",
            "PATH": f"{stubs}:{os.environ['PATH']}",
            "OMP_NUM_THREADS": str(args.threads),
        }
        env.pop("VIRTUAL_ENV", None)
        self._log = log.open("wb")
        self._process = subprocess.Popen(
            [
                str(folder / "venv" / "bin" / "python"),
                *("-m", "uvicorn", "app.webservice:app", "--host", "127.0.0.1"),
                *("--port", str(self.port)),
            ],
            cwd=folder,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/docs", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise RuntimeError("the peer did not start: see its log")
        self._language = args.language
        self.pid = self._process.pid

    def run(self, path: Path) -> tuple[float, str, dict[str, float]]:
        params = {
            "task": "transcribe",
            "output": "txt",
            "encode": "true",
            "vad_filter": "true",
            "word_timestamps": "true",
        }
        if self._language:
            params["language"] = self._language
        body = path.read_bytes()
        began = time.monotonic()
        answer = httpx.post(
            f"http://127.0.0.1:{self.port}/asr",
            params=params,
            files={"audio_file": (path.name, body, "audio/ogg")},
            timeout=600,
        )
        took = time.monotonic() - began
        answer.raise_for_status()
        return took, answer.text, {}

    def close(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=30)
        self._log.close()


def stub_peer(folder: Path) -> None:
    """What the peer imports but its faster-whisper engine never uses, made importable offline.

    torch (only ``cuda.is_available``) and openai-whisper (its tokenizer's
    language table and ``pad_or_trim``) are stand-ins, and the package
    metadata it reads its title from is written; the engine factory
    imports only the faster-whisper engine (the other two need torch and
    whisperx); ``ffmpeg`` on the PATH is the same binary the service uses.
    """
    factory = folder / "app" / "factory" / "asr_model_factory.py"
    factory.write_text(
        "\n".join(
            line
            for line in factory.read_text().splitlines()
            if "mbain_whisperx_engine" not in line and "openai_whisper_engine" not in line
        )
        + "\n"
    )
    stubs = folder / "offline-stubs"
    (stubs / "torch").mkdir(parents=True, exist_ok=True)
    (stubs / "torch" / "__init__.py").write_text(
        "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n"
    )
    (stubs / "whisper").mkdir(exist_ok=True)
    (stubs / "whisper" / "__init__.py").write_text(
        "from faster_whisper.tokenizer import _LANGUAGE_CODES\n"
        "class tokenizer:\n"
        "    LANGUAGES = {code: code for code in _LANGUAGE_CODES}\n"
        "    TO_LANGUAGE_CODE = {code: code for code in _LANGUAGE_CODES}\n"
        "def pad_or_trim(audio, length=480000):\n"
        "    import numpy\n"
        "    return numpy.pad(audio, (0, max(0, length - len(audio))))[:length]\n"
    )
    # Its title and version come from its installed package's metadata.
    metadata = stubs / "whisper_asr_webservice-1.10.0.dist-info"
    metadata.mkdir(exist_ok=True)
    (metadata / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: whisper-asr-webservice\nVersion: 1.10.0\n"
        "Summary: peer under test\nHome-page: https://github.com/ahmetoner/whisper-asr-webservice\n"
    )
    link = stubs / "ffmpeg"
    if not link.exists():
        link.symlink_to(FFMPEG)


def seconds_of(path: Path) -> float:
    """The file's length as the converter measures it."""
    measured = path.with_suffix(".measured.ogg")
    return asyncio.run(FfmpegConverter().convert(path, measured))


@contextmanager
def systems(
    names: list[str], model: Path, work: Path, args: argparse.Namespace
) -> Iterator[dict[str, Any]]:
    """Each system asked for, started and warmed up; stopped on the way out."""
    with ExitStack() as stack:
        started: dict[str, Any] = {}
        if "bare" in names:
            bare = Bare(model, args)
            stack.callback(bare.close)
            started["bare"] = bare
        if "service" in names:
            config = {
                "recognizer": {"kind": "whisper"},
                "whisper": {
                    "model": str(model),
                    "language": args.language,
                    "threads": args.threads,
                    "beam_size": 5,
                    "batch_size": args.batch_size,
                },
                "workers": {"recognize": 1},
            }
            service = stack.enter_context(
                running_service(work / "service", config=config, env={"HF_HUB_OFFLINE": "1"})
            )
            started["service"] = ThisService(service)
        if "peer" in names:
            stub_peer(args.peer)
            peer = Peer(args.peer, model, args, work / "peer.log")
            stack.callback(peer.close)
            started["peer"] = peer
        yield started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--files", default="clip,long")
    parser.add_argument("--systems", default="bare,service,peer")
    parser.add_argument("--peer", type=Path, default=Path(tempfile.gettempdir()) / "peer")
    parser.add_argument("--batch-size", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--language", default="en")
    parser.add_argument("--bare-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_child:
        model, threads, batch, language = args.bare_child
        bare_child(model, int(threads), int(batch), language)
        return
    names = args.systems.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as temp:
        work = Path(temp)
        model = base_model(work / "base")
        told = story(work / "story")
        once = seconds_of(told)
        tellings = max(1, round(args.minutes * 60 / once))
        files = {
            "clip": (speak(CLIP_TEXT, work / "clip.ogg"), CLIP_TEXT),
            "long": (
                looped(told, work / "long.ogg", tellings * once),
                " ".join(STORY * tellings),
            ),
        }
        files = {name: files[name] for name in args.files.split(",")}
        print(
            f"cpus={os.cpu_count()} load_average={os.getloadavg()[0]:.2f} model=base int8"
            f" beam=5 threads={args.threads} batch_size={args.batch_size}"
            f" language={args.language or 'detect'} long_seconds={tellings * once:.0f}",
            flush=True,
        )
        with systems(names, model, work, args) as running:
            # One warm-up each: the model loaded, caches filled.
            for system in running.values():
                system.run(files["clip"][0] if "clip" in files else next(iter(files.values()))[0])
            results: dict[tuple[str, str], list[tuple[float, str, dict[str, float]]]] = {}
            for index in range(args.rounds):
                order = names[index % len(names) :] + names[: index % len(names)]
                for file_name, (path, _) in files.items():
                    for name in order:
                        outcome = timed(running[name], path)
                        results.setdefault((file_name, name), []).append(outcome)
                        print(
                            f"round={index} file={file_name} system={name}"
                            f" seconds={outcome[0]:.2f} cpu_s={outcome[2]['cpu']:.2f}",
                            flush=True,
                        )
        report(files, names, results)


def report(
    files: dict[str, tuple[Path, str]],
    names: list[str],
    results: dict[tuple[str, str], list[tuple[float, str, dict[str, float]]]],
) -> None:
    """Medians, ratios to bare, word error rates and where the service's time went."""
    for file_name, (_, said) in files.items():
        bare_runs = results.get((file_name, "bare"))
        bare_median = statistics.median(run[0] for run in bare_runs) if bare_runs else None
        bare_cpu = statistics.median(run[2]["cpu"] for run in bare_runs) if bare_runs else None
        bare_text = bare_runs[-1][1] if bare_runs else None
        for name in names:
            runs = results[(file_name, name)]
            median = statistics.median(run[0] for run in runs)
            text = runs[-1][1]
            line = (
                f"file={file_name} system={name} median_s={median:.2f}"
                f" wer={word_error_rate(said, text) * 100:.1f}%"
            )
            if bare_median is not None and bare_text is not None and bare_cpu:
                worse = word_error_rate(said, text) - word_error_rate(said, bare_text)
                cpu = statistics.median(run[2]["cpu"] for run in runs)
                line += (
                    f" vs_bare={median / bare_median:.3f} cpu_vs_bare={cpu / bare_cpu:.3f}"
                    f" wer_minus_bare={worse * 100:+.1f}pt"
                    f" differs_from_bare={word_error_rate(bare_text, text) * 100:.1f}%"
                )
                if name == "service":
                    line += f" overhead_s={median - bare_median:+.2f}"
            steps = [run[2] for run in runs if run[2]]
            if steps:
                for key in sorted(steps[0]):
                    line += (
                        f" {key}_s={statistics.median(step.get(key, 0.0) for step in steps):.2f}"
                    )
            print(line, flush=True)


if __name__ == "__main__":
    main()
