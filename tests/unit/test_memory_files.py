"""The memory file store and converter beyond their contracts: the knobs tests rely on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from transcriber_adapters.memory.converter import ConvertCall, MemoryConverter
from transcriber_adapters.memory.files import FileCall, MemoryFileStore
from transcriber_core.errors import FileNotFound, StorageUnavailable, UnreadableMedia

NOW = datetime(2026, 1, 2, tzinfo=UTC)


def _file(tmp_path: Path, data: bytes, name: str = "in.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


async def test_converter_failures_are_queued(tmp_path: Path) -> None:
    """Each queued failure is raised by one call, in order, then conversions work again."""
    converter = MemoryConverter()
    converter.fail_next(StorageUnavailable())
    converter.fail_next(UnreadableMedia("bad"))
    source = _file(tmp_path, b"x" * 16_000)
    with pytest.raises(StorageUnavailable):
        await converter.convert(source, tmp_path / "a.ogg")
    with pytest.raises(UnreadableMedia, match="bad"):
        await converter.convert(source, tmp_path / "b.ogg")
    assert await converter.convert(source, tmp_path / "c.ogg") == 1.0
    assert [call.target.name for call in converter.calls] == ["a.ogg", "b.ogg", "c.ogg"]


async def test_converter_fixed_duration_and_deterministic_output(tmp_path: Path) -> None:
    """A set duration overrides the size rule; the same input gives the same output bytes."""
    converter = MemoryConverter(duration=42.5)
    source = _file(tmp_path, b"abc" * 2_000)  # enough bytes for 42.5 s within the limits
    assert await converter.convert(source, tmp_path / "a.ogg") == 42.5
    await converter.convert(source, tmp_path / "b.ogg")
    assert (tmp_path / "a.ogg").read_bytes() == (tmp_path / "b.ogg").read_bytes()


async def test_converter_marker_and_empty_are_unreadable(tmp_path: Path) -> None:
    """A recording starting with the configured marker, or empty, is unreadable media."""
    converter = MemoryConverter(not_audio=b"%PDF")
    with pytest.raises(UnreadableMedia):
        await converter.convert(_file(tmp_path, b"%PDF-1.7 ..."), tmp_path / "out.ogg")
    with pytest.raises(UnreadableMedia):
        await converter.convert(_file(tmp_path, b"", "empty.bin"), tmp_path / "out.ogg")


async def test_converter_reset(tmp_path: Path) -> None:
    """reset forgets calls and pending failures."""
    converter = MemoryConverter()
    converter.fail_next(StorageUnavailable())
    source = _file(tmp_path, b"abc")
    converter.calls.append(ConvertCall(source=source, target=source))
    converter.reset()
    assert converter.calls == []
    await converter.convert(source, tmp_path / "out.ogg")


async def test_store_records_calls_and_resets(tmp_path: Path) -> None:
    """names, content and calls show what the store holds and was asked; reset empties it."""
    store = MemoryFileStore()
    record = await store.put("ZmlsZS0x", ".mp3", _file(tmp_path, b"abc"), now=NOW)
    assert store.names() == ["ZmlsZS0x.mp3"]
    assert store.content(record) == b"abc"
    await store.exists(record)
    assert store.calls == [
        FileCall(method="put", name="ZmlsZS0x.mp3"),
        FileCall(method="exists", name="ZmlsZS0x.mp3"),
    ]
    store.reset()
    assert store.names() == []
    assert store.calls == []
    with pytest.raises(FileNotFound):
        store.content(record)


async def test_store_refuses_unsafe_ids(tmp_path: Path) -> None:
    """The memory store refuses the same unsafe names as the filesystem store."""
    with pytest.raises(ValueError, match="file id"):
        await MemoryFileStore().put("../x", ".mp3", _file(tmp_path, b"abc"), now=NOW)
