"""Whisper on this CPU: real-time factor, peak RSS, and the adapter's overhead over faster-whisper.

Prints its figures; the numbers in docs/benchmarks.md come from here.

English speech is espeak-ng's voice saying ``tests/support/speech.STORY``
(about 40 s of different sentences) repeated to the length asked, converted
to Ogg/Opus the way the convert step does. Each measurement runs in a fresh
child process, so its peak RSS (``ru_maxrss`` of that child) includes loading
the model and nothing of the other runs:

- ``direct``: ``WhisperModel.transcribe`` on the file, segments consumed,
  with the adapter's settings (beam 5, word timings, VAD filter);
- ``adapter``: ``WhisperRecognizer.start`` on the same file in a filesystem
  store: block-by-block decoding, the daemon thread, the event loop. While it
  runs a 10 ms ticker on the event loop records the worst lag, the figure
  that decided "a thread, not a process" (ADR 28).

Real-time factor = audio seconds / wall seconds (3.0 = three times faster
than real time). The base model is joined from its two packages into a temp
dir (the dev extra installs them); tiny.en is the test extra's package.

Usage: .venv/bin/python bench/whisper.py [--minutes 10 2.5] [--models tiny.en,base]
       [--runs direct,adapter] [--threads 0]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.support.speech import base_model, looped, story, tiny_en_model


def child_direct(model: Path, audio: Path, threads: int) -> dict[str, float]:
    """faster-whisper itself, as the adapter configures it."""
    from faster_whisper import WhisperModel  # noqa: PLC0415

    from transcriber_adapters.whisper import cpu_threads  # noqa: PLC0415

    began = time.monotonic()
    whisper = WhisperModel(
        str(model), device="cpu", compute_type="int8", cpu_threads=cpu_threads(threads)
    )
    loaded = time.monotonic()
    segments, _ = whisper.transcribe(str(audio), beam_size=5, word_timestamps=True, vad_filter=True)
    words = sum(len(segment.words or ()) for segment in segments)
    return {"load": loaded - began, "seconds": time.monotonic() - loaded, "words": words}


def child_adapter(model: Path, audio: Path, threads: int) -> dict[str, float]:
    """The service's recognizer on the same file, with an event-loop lag probe."""
    from transcriber_adapters.filesystem import FilesystemFileStore  # noqa: PLC0415
    from transcriber_adapters.whisper import (  # noqa: PLC0415
        WhisperRecognizer,
        WhisperSettings,
        load_model,
    )
    from transcriber_core.ports import Recognized  # noqa: PLC0415

    async def run() -> dict[str, float]:
        folder = Path(tempfile.mkdtemp(prefix="bench-whisper-"))
        store = FilesystemFileStore(folder / "files", staging_dir=folder / "staging")
        record = await store.put("audio", ".ogg", audio, now=datetime.now(UTC))
        settings = WhisperSettings(model_dir=model, threads=threads)
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
            "words": len(started.outcome.words),
            "loop_lag_ms": worst * 1000,
        }

    return asyncio.run(run())


def measure(kind: str, model: Path, audio: Path, threads: int) -> dict[str, float]:
    """One run in a fresh child; its figures and its peak RSS in MiB."""
    command = [sys.executable, __file__, "--child", kind, str(model), str(audio), str(threads)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "child failed"
    figures: dict[str, float] = json.loads(output)
    figures["peak_rss_mib"] = usage.ru_maxrss / 1024
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[10.0, 2.5])
    parser.add_argument("--models", default="tiny.en,base")
    parser.add_argument("--runs", default="direct,adapter")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, model, audio, threads = args.child
        run = child_direct if kind == "direct" else child_adapter
        print(json.dumps(run(Path(model), Path(audio), int(threads))))
        return
    with tempfile.TemporaryDirectory(prefix="bench-whisper-") as work:
        folder = Path(work)
        models = {"tiny.en": tiny_en_model()}
        if "base" in args.models:
            models["base"] = base_model(folder / "base")
        speech = story(folder)
        print(f"cpus={os.cpu_count()} load_average={os.getloadavg()[0]:.2f}")
        for minutes in args.minutes:
            audio = looped(speech, folder / f"speech-{minutes}.ogg", minutes * 60)
            for name in args.models.split(","):
                for kind in args.runs.split(","):
                    figures = measure(kind, models[name], audio, args.threads)
                    rtf = minutes * 60 / figures["seconds"]
                    extra = (
                        f" loop_lag_ms={figures['loop_lag_ms']:.1f}"
                        if "loop_lag_ms" in figures
                        else ""
                    )
                    print(
                        f"model={name} run={kind} audio_min={minutes:g}"
                        f" seconds={figures['seconds']:.1f} realtime_x={rtf:.2f}"
                        f" load_s={figures['load']:.2f} words={figures['words']:.0f}"
                        f" peak_rss_mib={figures['peak_rss_mib']:.0f}{extra}"
                        f" load_average={os.getloadavg()[0]:.2f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
