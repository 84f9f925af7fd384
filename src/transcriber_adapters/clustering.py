"""Speaker embeddings into speakers: spectral clustering, the eigengap to count, near ones merged.

ADR 70. The affinity is the cosine similarity of unit-length embeddings,
each row pruned to its ``NEIGHBOURS`` share of nearest (at least
``MIN_NEIGHBOURS``) and made symmetric; the count is where the unnormalised
Laplacian's eigenvalues jump most (the eigengap), up to ``MAX_SPEAKERS``;
k-means (seeded, so a recording always gets the same labels) splits the
first eigenvectors; clusters of fewer than ``MIN_CLUSTER`` embeddings join
the nearest other. The eigengap over-counts a voice whose windows form
groups (a raised voice, a change of line), so for ``auto`` the clusters
whose centroids are at least ``MERGE`` alike become one, the nearest pair
first: one cut on the centroids' cosine, the same for every kind of voice,
chosen on real voices (docs/benchmarks.md prints how the count depends on
it). Told the count, the nearest clusters merge down to it, or k-means
splits the eigenvectors into it when fewer were found: exactly that many
(when there are at least that many embeddings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Share of each row's neighbours kept in the affinity.
NEIGHBOURS = 0.04
#: Neighbours kept at least, however few embeddings there are.
MIN_NEIGHBOURS = 6
#: The most speakers ``auto`` finds.
MAX_SPEAKERS = 10
#: Clusters smaller than this many embeddings join the nearest other.
MIN_CLUSTER = 5
#: Clusters whose centroids are at least this alike (cosine) are one voice, for ``auto``.
MERGE = 0.5
#: Fewer embeddings than this are one voice, for ``auto``: too few to count from.
MIN_EMBEDDINGS = 6


def cluster(
    vectors: npt.NDArray[np.float32], speakers: int | None, *, merge: float = MERGE
) -> npt.NDArray[np.int_]:
    """A label 0…k-1 per unit-length embedding: ``speakers`` of them, or as many as found."""
    import numpy as np  # noqa: PLC0415

    count = len(vectors)
    if count == 0:
        return np.zeros(0, dtype=np.int_)
    if speakers == 1 or (speakers is None and count < MIN_EMBEDDINGS):
        return np.zeros(count, dtype=np.int_)
    if speakers is not None and count <= speakers:
        return np.arange(count, dtype=np.int_)
    eigenvalues, eigenvectors = _spectrum(vectors)
    top = min(MAX_SPEAKERS, count - 1)
    found = int(np.argmax(np.diff(eigenvalues[: top + 1])) + 1)
    labels = _absorb_small(vectors, _kmeans(eigenvectors[:, :found], found))
    if speakers is None:
        labels = _merge_near(vectors, labels, merge)
    elif len(np.unique(labels)) >= speakers:
        # Told fewer than found: the nearest merge first, as many times as it takes.
        labels = _merge_near(vectors, labels, -np.inf, until=speakers)
    else:
        labels = _exactly(vectors, _kmeans(eigenvectors[:, :speakers], speakers), speakers)
    return _renumbered(labels)


def centroids(
    vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int_]
) -> npt.NDArray[np.float32]:
    """The unit-length mean embedding of each label 0…max, row by row."""
    import numpy as np  # noqa: PLC0415

    found = np.stack([vectors[labels == label].mean(axis=0) for label in range(labels.max() + 1)])
    result: npt.NDArray[np.float32] = (
        found / (np.linalg.norm(found, axis=1, keepdims=True) + 1e-12)
    ).astype(np.float32)
    return result


def _spectrum(
    vectors: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Eigenvalues (ascending) and eigenvectors of the pruned affinity's Laplacian."""
    import numpy as np  # noqa: PLC0415

    count = len(vectors)
    # In place where it can be: at CLUSTER_SAMPLE embeddings each copy is 11 MB.
    affinity = (vectors @ vectors.T).astype(np.float64)
    keep = min(count, max(MIN_NEIGHBOURS, round(NEIGHBOURS * count)))
    # Every entry below the row's ``keep``-th largest becomes 0, and so does every negative.
    threshold = np.partition(affinity, count - keep, axis=1)[:, count - keep]
    affinity[affinity < threshold[:, None]] = 0.0
    np.maximum(affinity, 0.0, out=affinity)
    laplacian = affinity + affinity.T
    del affinity
    laplacian *= -0.5
    np.fill_diagonal(laplacian, 0.0)
    laplacian[np.diag_indices(count)] = -laplacian.sum(axis=1)
    values, vecs = np.linalg.eigh(laplacian)
    return values, vecs


def _kmeans(points: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.int_]:
    """k-means from a seeded k-means++ start, the best of a few tries."""
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(0)
    best, best_cost = np.zeros(len(points), dtype=np.int_), np.inf
    for _ in range(4):
        centres = [points[rng.integers(len(points))]]
        for _ in range(1, k):
            near = np.min(((points[:, None, :] - np.array(centres)[None]) ** 2).sum(-1), axis=1)
            total = near.sum()
            pick = (
                rng.choice(len(points), p=near / total) if total > 0 else rng.integers(len(points))
            )
            centres.append(points[pick])
        centre = np.array(centres)
        labels = np.zeros(len(points), dtype=np.int_)
        for _ in range(100):
            distances = ((points[:, None, :] - centre[None]) ** 2).sum(-1)
            new = np.argmin(distances, axis=1)
            if np.array_equal(new, labels) and _ > 0:
                break
            labels = new
            for label in range(k):
                if np.any(labels == label):
                    centre[label] = points[labels == label].mean(axis=0)
        cost = float(((points - centre[labels]) ** 2).sum())
        if cost < best_cost:
            best, best_cost = labels, cost
    return best


def _absorb_small(
    vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int_]
) -> npt.NDArray[np.int_]:
    """Clusters under ``MIN_CLUSTER`` embeddings: each embedding joins the nearest big one."""
    import numpy as np  # noqa: PLC0415

    names, sizes = np.unique(labels, return_counts=True)
    big = names[sizes >= MIN_CLUSTER]
    if len(big) == 0 or len(big) == len(names):
        return labels
    means = np.stack([vectors[labels == name].mean(axis=0) for name in big])
    means /= np.linalg.norm(means, axis=1, keepdims=True) + 1e-12
    result = labels.copy()
    small = ~np.isin(labels, big)
    result[small] = big[np.argmax(vectors[small] @ means.T, axis=1)]
    return result


def _merge_near(
    vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int_], merge: float, until: int = 1
) -> npt.NDArray[np.int_]:
    """The two clusters with the most alike centroids merge, while they are ``merge`` or more."""
    import numpy as np  # noqa: PLC0415

    result = labels.copy()
    while True:
        names = np.unique(result)
        if len(names) <= until:
            return result
        means = np.stack([vectors[result == name].mean(axis=0) for name in names])
        means /= np.linalg.norm(means, axis=1, keepdims=True) + 1e-12
        alike = np.triu(means @ means.T, 1) - np.tril(np.full((len(names),) * 2, np.inf))
        first, second = np.unravel_index(int(np.argmax(alike)), alike.shape)
        if alike[first, second] < merge:
            return result
        result[result == names[second]] = names[first]


def _exactly(
    vectors: npt.NDArray[np.float32], labels: npt.NDArray[np.int_], k: int
) -> npt.NDArray[np.int_]:
    """``labels`` with ``k`` clusters: an empty one takes the embedding furthest from its own."""
    import numpy as np  # noqa: PLC0415

    result = labels.copy()
    for label in range(k):
        if np.any(result == label):
            continue
        means = centroids(vectors, _renumbered(result))
        own = np.einsum("ij,ij->i", vectors, means[_renumbered(result)])
        sizes = np.bincount(result, minlength=k)
        own[sizes[result] <= 1] = np.inf  # never empty another cluster
        result[int(np.argmin(own))] = label
    return result


def _renumbered(labels: npt.NDArray[np.int_]) -> npt.NDArray[np.int_]:
    """Labels 0…k-1 in order of first appearance."""
    import numpy as np  # noqa: PLC0415

    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    result: npt.NDArray[np.int_] = order[inverse].astype(np.int_)
    return result
