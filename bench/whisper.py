"""Whisper on this CPU: real-time factor, peak RSS, and the adapter's overhead over faster-whisper.

Prints its figures; the numbers in docs/benchmarks.md come from here.

English speech is espeak-ng's voice saying ``tests/support/speech.STORY``
(about 40 s of different sentences) repeated to the length asked, converted
to Ogg/Opus the way the convert step does. Each measurement runs in a fresh
child process, so its peak RSS (``ru_maxrss`` of that child) includes loading
the model and nothing of the other runs:

- ``direct``: ``WhisperModel.transcribe`` on the file, segments consumed,
  with the adapter's settings (beam 5, word timings, VAD filter);
- ``direct-novad``: the same without the VAD filter (Whisper's own decoder alone);
- ``direct-bN``: faster-whisper's ``BatchedInferencePipeline`` with ``batch_size`` N
  (its VAD on, as the pipeline needs it);
- ``adapter`` / ``adapter-bN``: ``WhisperRecognizer.start`` on the same file in a
  filesystem store (sequential / ``batch_size = N``): block-by-block decoding,
  the daemon thread, the event loop. While it runs a 10 ms ticker on the event
  loop records the worst lag, the figure that decided "a thread, not a
  process" (ADR 28).

The speech is a whole number of tellings of the story, so each run's word
error rate against the story's text is printed too (``wer``).

Real-time factor = audio seconds / wall seconds (3.0 = three times faster
than real time); ``realtime_x_cpu`` divides by the child's CPU seconds
instead (model load included), which other load on a shared box moves far
less than the wall clock. The base model is joined from its two packages into a temp
dir (the dev extra installs them); tiny.en is the test extra's package.

Usage: .venv/bin/python bench/whisper.py [--minutes 10 2.5] [--models tiny.en,base]
       [--runs direct,adapter] [--threads 0] [--language en]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/queue.py would shadow the stdlib ``queue`` that asyncio's thread pool imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import json
import os
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The language every run is told ("" on the command line: detect it).
LANGUAGE: str | None = "en"
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.support.speech import STORY, base_model, looped, story, tiny_en_model, word_error_rate


def batch_of(kind: str) -> int:
    """N of a ``...-bN`` run; 0 for the sequential decoder."""
    _, _, batch = kind.rpartition("-b")
    return int(batch) if batch.isdigit() else 0


def child_direct(kind: str, model: Path, audio: Path, threads: int) -> dict[str, Any]:
    """faster-whisper itself, as the adapter configures it (or batched, or without VAD)."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel  # noqa: PLC0415

    from transcriber_adapters.whisper import cpu_threads  # noqa: PLC0415

    began = time.monotonic()
    whisper = WhisperModel(
        str(model), device="cpu", compute_type="int8", cpu_threads=cpu_threads(threads)
    )
    loaded = time.monotonic()
    batch = batch_of(kind)
    options: dict[str, Any] = {"beam_size": 5, "word_timestamps": True, "language": LANGUAGE}
    if batch:
        segments, _ = BatchedInferencePipeline(whisper).transcribe(
            str(audio), batch_size=batch, **options
        )
    else:
        segments, _ = whisper.transcribe(str(audio), vad_filter=kind != "direct-novad", **options)
    texts = [str(segment.text).strip() for segment in segments]
    return {"load": loaded - began, "seconds": time.monotonic() - loaded, "text": " ".join(texts)}


def child_adapter(kind: str, model: Path, audio: Path, threads: int) -> dict[str, Any]:
    """The service's recognizer on the same file, with an event-loop lag probe."""
    from transcriber_adapters.filesystem import FilesystemFileStore  # noqa: PLC0415
    from transcriber_adapters.whisper import (  # noqa: PLC0415
        WhisperRecognizer,
        WhisperSettings,
        load_model,
    )
    from transcriber_core.ports import Recognized  # noqa: PLC0415

    async def run() -> dict[str, Any]:
        folder = Path(tempfile.mkdtemp(prefix="bench-whisper-"))
        store = FilesystemFileStore(folder / "files", staging_dir=folder / "staging")
        record = await store.put("audio", audio.suffix, audio, now=datetime.now(UTC))
        settings = WhisperSettings(
            model_dir=model, threads=threads, batch_size=batch_of(kind), language=LANGUAGE
        )
        began = time.monotonic()
        await asyncio.to_thread(load_model, settings, workers=1)
        loaded = time.monotonic()
        worst = 0.0
        finished = asyncio.Event()

        async def ticker() -> None:
            nonlocal worst
            loop = asyncio.get_running_loop()
            while not finished.is_set():
                before = loop.time()
                await asyncio.sleep(0.01)
                worst = max(worst, loop.time() - before - 0.01)

        probe = asyncio.create_task(ticker())
        started = await WhisperRecognizer(store, settings).start(record, duration=None)
        finished.set()
        await probe
        assert isinstance(started.outcome, Recognized)
        return {
            "load": loaded - began,
            "seconds": time.monotonic() - loaded,
            "text": started.outcome.text,
            "loop_lag_ms": worst * 1000,
        }

    return asyncio.run(run())


def measure(kind: str, model: Path, audio: Path, threads: int) -> dict[str, Any]:
    """One run in a fresh child; its figures and its peak RSS in MiB."""
    command = [sys.executable, __file__, "--child", kind, str(model), str(audio), str(threads)]
    command += ["--language", LANGUAGE]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "child failed"
    figures: dict[str, Any] = json.loads(output)
    figures["peak_rss_mib"] = usage.ru_maxrss / 1024
    # CPU time barely moves with other load on a shared box, unlike the wall clock.
    figures["cpu_s"] = usage.ru_utime + usage.ru_stime
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[10.0, 2.5])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--runs", default="direct,adapter")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--language", default="en")
    parser.add_argument("--pcm", action="store_true", help="the audio as the converter's PCM")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global LANGUAGE  # noqa: PLW0603 - one setting for the parent and each child
    LANGUAGE = args.language or None
    if args.child:
        kind, model, audio, threads = args.child
        run = child_direct if kind.startswith("direct") else child_adapter
        print(json.dumps(run(kind, Path(model), Path(audio), int(threads))))
        return
    with tempfile.TemporaryDirectory(prefix="bench-whisper-") as work:
        folder = Path(work)
        models = {"tiny.en": tiny_en_model()}
        if "base" in args.models:
            models["base"] = base_model(folder / "base")
        speech = story(folder)
        once = story_seconds(speech)
        print(f"cpus={os.cpu_count()} load_average={os.getloadavg()[0]:.2f}")
        for minutes in args.minutes:
            tellings = max(1, round(minutes * 60 / once))
            audio = looped(speech, folder / f"speech-{minutes}.ogg", tellings * once)
            if args.pcm:
                audio = as_pcm(audio, folder / f"speech-{minutes}.wav")
            reference = " ".join(STORY * tellings)
            for name in args.models.split(","):
                for kind in args.runs.split(","):
                    figures = measure(kind, models[name], audio, args.threads)
                    rtf = tellings * once / figures["seconds"]
                    extra = (
                        f" loop_lag_ms={figures['loop_lag_ms']:.1f}"
                        if "loop_lag_ms" in figures
                        else ""
                    )
                    print(
                        f"model={name} run={kind} audio_min={minutes:g}"
                        f" seconds={figures['seconds']:.1f} realtime_x={rtf:.2f}"
                        f" load_s={figures['load']:.2f}"
                        f" wer={word_error_rate(reference, figures['text']) * 100:.1f}%"
                        f" cpu_s={figures['cpu_s']:.1f}"
                        f" realtime_x_cpu={tellings * once / figures['cpu_s']:.2f}"
                        f" peak_rss_mib={figures['peak_rss_mib']:.0f}{extra}"
                        f" load_average={os.getloadavg()[0]:.2f}",
                        flush=True,
                    )


def story_seconds(path: Path) -> float:
    """The length of the story told once, as the converter measures it."""
    from transcriber_adapters.ffmpeg import FfmpegConverter  # noqa: PLC0415

    return asyncio.run(FfmpegConverter().convert(path, path.with_suffix(".measured.ogg")))


def as_pcm(source: Path, target: Path) -> Path:
    """``source`` as the converter's PCM, what the service hands a local recognizer."""
    from transcriber_adapters.ffmpeg import PCM, FfmpegConverter  # noqa: PLC0415

    asyncio.run(FfmpegConverter(output=PCM).convert(source, target))
    return target


if __name__ == "__main__":
    main()
