"""Kaldi's 80-bin log mel filterbank in numpy, as ``torchaudio.compliance.kaldi.fbank`` makes it.

The defaults CAM++ was trained with (3D-Speaker's ``FBank(80, 16000)``):
25 ms frames every 10 ms with no padding at the edges (``snip_edges``), DC
removed per frame, pre-emphasis 0.97, Povey's window, a 512-point FFT of
the power spectrum, triangular filters on Kaldi's mel scale from 20 Hz to
Nyquist, the log floored at float32's epsilon; no dither.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SAMPLE_RATE = 16000
#: Samples between frame starts (10 ms).
HOP = 160
#: Samples per frame (25 ms).
FRAME = 400
BINS = 80
_FFT = 512
_LOW_HZ = 20.0
_PREEMPHASIS = 0.97


@functools.cache
def _povey() -> npt.NDArray[np.float64]:
    """Kaldi's Povey window: a symmetric Hann window to the power 0.85."""
    import numpy as np  # noqa: PLC0415

    return np.power(np.hanning(FRAME), 0.85)


@functools.cache
def _mel_banks() -> npt.NDArray[np.float64]:
    """The triangular filters, ``BINS`` by ``_FFT // 2 + 1`` (the Nyquist bin's weight 0)."""
    import numpy as np  # noqa: PLC0415

    def mel(hz: npt.NDArray[np.floating[Any]]) -> npt.NDArray[np.float64]:
        return 1127.0 * np.log(1.0 + hz.astype(np.float64) / 700.0)

    low, high = mel(np.array(_LOW_HZ)), mel(np.array(SAMPLE_RATE / 2))
    delta = (high - low) / (BINS + 1)
    left = low + np.arange(BINS)[:, None] * delta
    centre, right = left + delta, left + 2 * delta
    freqs = mel(SAMPLE_RATE / _FFT * np.arange(_FFT // 2))[None, :]
    up = (freqs - left) / (centre - left)
    down = (right - freqs) / (right - centre)
    banks = np.maximum(0.0, np.minimum(up, down))
    return np.pad(banks, ((0, 0), (0, 1)))


def fbank(samples: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Log mel energies (frames, ``BINS``) of 16 kHz ``samples`` in [-1, 1]; none under 25 ms."""
    import numpy as np  # noqa: PLC0415

    if len(samples) < FRAME:
        return np.zeros((0, BINS), dtype=np.float32)
    count = 1 + (len(samples) - FRAME) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(samples.astype(np.float64), FRAME)[::HOP][
        :count
    ]
    frames = frames - frames.mean(axis=1, keepdims=True)
    previous = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    frames = (frames - _PREEMPHASIS * previous) * _povey()
    power = np.abs(np.fft.rfft(frames, n=_FFT, axis=1)) ** 2
    energies = power @ _mel_banks().T
    floor = float(np.finfo(np.float32).eps)
    return np.log(np.maximum(energies, floor)).astype(np.float32)
