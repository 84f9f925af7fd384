"""Speaker clustering: the eigengap's count, near centroids merged, exactly N when told (ADR 70)."""

from __future__ import annotations

import numpy as np
import pytest

from transcriber_adapters import clustering


def _voices(centres: list[np.ndarray], per: int, spread: float, seed: int = 0) -> np.ndarray:
    """``per`` unit vectors around each centre, ``spread`` of noise: windows of each voice."""
    rng = np.random.default_rng(seed)
    found = []
    for centre in centres:
        noisy = centre[None] + spread * rng.standard_normal((per, len(centre)))
        found.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
    return np.concatenate(found).astype(np.float32)


def _apart(count: int, size: int = 192, seed: int = 1) -> list[np.ndarray]:
    """``count`` random directions: in 192 dimensions, nearly orthogonal."""
    rng = np.random.default_rng(seed)
    return [v / np.linalg.norm(v) for v in rng.standard_normal((count, size))]


def test_auto_counts_distinct_voices() -> None:
    """Three voices far apart, 20 windows each: three labels, one per voice."""
    vectors = _voices(_apart(3), 20, 0.05)
    labels = clustering.cluster(vectors, None)
    assert labels.max() + 1 == 3
    assert [len(set(labels[i * 20 : (i + 1) * 20])) for i in range(3)] == [1, 1, 1]


def test_auto_merges_one_voice_split_in_two() -> None:
    """Two groups whose centroids are 0.8 alike are one voice under auto, two when told two."""
    first = _apart(1)[0]
    other = _apart(1, seed=7)[0]
    near = 0.8 * first + 0.6 * (other - (other @ first) * first) / np.linalg.norm(
        other - (other @ first) * first
    )
    vectors = _voices([first, near], 20, 0.02)
    assert set(clustering.cluster(vectors, None).tolist()) == {0}
    assert set(clustering.cluster(vectors, 2).tolist()) == {0, 1}


@pytest.mark.parametrize("told", [1, 2, 3, 4, 6])
def test_told_the_count_gives_exactly_that_many(told: int) -> None:
    """Told N, there are N labels, whether the voices are fewer or more than N."""
    vectors = _voices(_apart(3), 15, 0.05)
    assert clustering.cluster(vectors, told).max() + 1 == told


def test_the_same_recording_gets_the_same_labels() -> None:
    """k-means is seeded: two runs label every window alike."""
    vectors = _voices(_apart(4), 12, 0.3)
    assert clustering.cluster(vectors, None).tolist() == clustering.cluster(vectors, None).tolist()


def test_too_few_windows_are_one_voice() -> None:
    """Under MIN_EMBEDDINGS windows, auto does not guess a count: one voice."""
    vectors = _voices(_apart(2), 2, 0.05)
    assert clustering.cluster(vectors, None).tolist() == [0, 0, 0, 0]


def test_centroids_are_unit_length() -> None:
    """Each label's centroid, the print, has length 1."""
    vectors = _voices(_apart(2), 10, 0.1)
    means = clustering.centroids(vectors, clustering.cluster(vectors, None))
    assert np.allclose(np.linalg.norm(means, axis=1), 1.0, atol=1e-5)
