"""The contract every FileStore adapter passes (reference: Files, Privacy)."""

from __future__ import annotations

import asyncio
import os
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from transcriber_core.entities import FileRecord, Location
from transcriber_core.errors import FileNotFound
from transcriber_core.ports import FileStore

#: The time every test passes as ``now``.
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
#: A file id as the id source makes them: 22 URL-safe characters.
FILE_ID = "Zm9vYmFyLWZpbGUtaWQtMQ"
#: Larger than one chunk of any sensible store, so streaming is exercised.
LARGE = 2_500_000


def _payload(size: int, seed: int = 1) -> bytes:
    """Deterministic bytes that differ from one seed to the next."""
    block = bytes((seed * 31 + i) % 251 for i in range(251))
    return (block * (size // len(block) + 1))[:size]


class FileStoreContract:
    """Subclass and provide a fixture ``store`` returning a fresh, empty ``FileStore``.

    The store must stage its files in the folder the ``staging_dir`` fixture
    names (which does not exist yet: the store makes it). Every test runs
    with the system temp dir pointed at an empty folder of its own
    (``system_temp``): a store leaves nothing there, ever.

    Set ``working_copy_is_temporary`` to False for a store whose working copy
    is the stored file itself (a local folder); True means the store makes a
    copy in the temp dir and must remove it after the block.
    """

    working_copy_is_temporary: bool = True

    @pytest.fixture(autouse=True)
    def system_temp(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        """The system temp dir, empty and private to this test."""
        folder = tmp_path / "system-temp"
        folder.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(folder))
        return folder

    @pytest.fixture
    def staging_dir(self, tmp_path: Path) -> Path:
        """The folder the store under test is given for its staging files; not made yet."""
        return tmp_path / "data" / "tmp"

    @pytest.fixture
    def sources(self, tmp_path: Path) -> Path:
        """A folder for the files a test puts, outside the temp dir."""
        folder = tmp_path / "sources"
        folder.mkdir()
        return folder

    @staticmethod
    def write(folder: Path, name: str, data: bytes) -> Path:
        """A file ``name`` in ``folder`` holding ``data``."""
        path = folder / name
        path.write_bytes(data)
        return path

    async def put_bytes(
        self, store: FileStore, folder: Path, data: bytes, *, extension: str = ".mp3"
    ) -> FileRecord:
        """``data`` put into ``store`` under ``FILE_ID``, copied from a file in ``folder``."""
        source = self.write(folder, "recording.bin", data)
        return await store.put(FILE_ID, extension, source, now=NOW)

    @staticmethod
    async def read_all(store: FileStore, record: FileRecord) -> bytes:
        """Every byte ``open`` gives for ``record``."""
        return b"".join([chunk async for chunk in store.open(record)])

    @staticmethod
    def missing_record(extension: str = ".ogg") -> FileRecord:
        """A record of a file no test ever put."""
        return FileRecord(
            id="bWlzc2luZy1maWxlLWlkLTAw",
            location=Location.LOCAL,
            size=10,
            extension=extension,
            created=NOW,
        )

    async def test_put_move_takes_the_source(self, store: FileStore, sources: Path) -> None:
        """put with move removes the source and stores the same bytes."""
        data = _payload(1000)
        source = self.write(sources, "upload.bin", data)
        record = await store.put(FILE_ID, ".mp3", source, now=NOW, move=True)
        assert not source.exists()
        assert record.size == len(data)
        assert await self.read_all(store, record) == data

    async def test_put_copy_keeps_the_source(self, store: FileStore, sources: Path) -> None:
        """put without move leaves the source where and as it was."""
        data = _payload(1000)
        source = self.write(sources, "upload.bin", data)
        record = await store.put(FILE_ID, ".mp3", source, now=NOW)
        assert source.read_bytes() == data
        assert await self.read_all(store, record) == data

    async def test_record_fields(self, store: FileStore, sources: Path) -> None:
        """The record carries the id, extension, real size, the store's location and ``now``."""
        record = await self.put_bytes(store, sources, _payload(321), extension=".wav")
        assert record.id == FILE_ID
        assert record.extension == ".wav"
        assert record.name == f"{FILE_ID}.wav"
        assert record.size == 321
        assert record.location is store.location
        assert record.created == NOW
        assert (record.object_key is None) == (record.location is Location.LOCAL)

    async def test_no_sender_name_is_kept(self, store: FileStore, sources: Path) -> None:
        """Nothing of the source's file name reaches the record."""
        source = self.write(sources, "Secret Meeting.MP3", b"abc")
        record = await store.put(FILE_ID, ".mp3", source, now=NOW)
        assert "Secret" not in repr(record)
        assert record.name == f"{FILE_ID}.mp3"

    async def test_empty_extension(self, store: FileStore, sources: Path) -> None:
        """A file with no known extension is stored under its bare id."""
        record = await self.put_bytes(store, sources, b"abc", extension="")
        assert record.name == FILE_ID
        assert await self.read_all(store, record) == b"abc"

    async def test_empty_file(self, store: FileStore, sources: Path) -> None:
        """A zero-byte file is stored and read back as zero bytes."""
        record = await self.put_bytes(store, sources, b"")
        assert record.size == 0
        assert await store.exists(record)
        assert await self.read_all(store, record) == b""

    async def test_put_replaces_same_id(self, store: FileStore, sources: Path) -> None:
        """A second put under the same id replaces the bytes and the size (a retried step)."""
        await self.put_bytes(store, sources, _payload(5000, seed=1))
        second = await self.put_bytes(store, sources, _payload(700, seed=2))
        assert second.size == 700
        assert await self.read_all(store, second) == _payload(700, seed=2)

    async def test_large_file_round_trip(self, store: FileStore, sources: Path) -> None:
        """A file of several chunks comes back byte for byte, with its true size."""
        data = os.urandom(LARGE)
        record = await self.put_bytes(store, sources, data)
        assert record.size == LARGE
        assert await self.read_all(store, record) == data

    async def test_exists(self, store: FileStore, sources: Path) -> None:
        """exists is False before put, True after, False after delete."""
        record = self.missing_record(".mp3")
        assert not await store.exists(record)
        stored = await self.put_bytes(store, sources, b"abc")
        assert await store.exists(stored)
        await store.delete(stored)
        assert not await store.exists(stored)

    async def test_delete_is_idempotent(self, store: FileStore, sources: Path) -> None:
        """Deleting twice, or deleting what was never put, is not an error."""
        record = await self.put_bytes(store, sources, b"abc")
        await store.delete(record)
        await store.delete(record)
        await store.delete(self.missing_record())
        assert not await store.exists(record)

    async def test_delete_leaves_other_files(self, store: FileStore, sources: Path) -> None:
        """Deleting one record keeps a file with another id."""
        first = await self.put_bytes(store, sources, b"first")
        other_source = self.write(sources, "other.bin", b"other")
        other = await store.put("b3RoZXItZmlsZS1pZC0wMQ", ".mp3", other_source, now=NOW)
        await store.delete(first)
        assert await self.read_all(store, other) == b"other"

    async def test_delete_many_removes_each_and_leaves_the_rest(
        self, store: FileStore, sources: Path
    ) -> None:
        """delete_many takes every record given, missing ones included, and nothing else."""
        first = await self.put_bytes(store, sources, b"first")
        kept_source = self.write(sources, "kept.bin", b"kept")
        kept = await store.put("a2VwdC1maWxlLWlkLTAwMQ", ".ogg", kept_source, now=NOW)
        second_source = self.write(sources, "second.bin", b"second")
        second = await store.put("c2Vjb25kLWZpbGUtaWQtMDE", ".ogg", second_source, now=NOW)
        await store.delete_many([first, self.missing_record(), second])
        await store.delete_many([])
        await store.delete_many([first])
        assert not await store.exists(first)
        assert not await store.exists(second)
        assert await self.read_all(store, kept) == b"kept"

    async def test_open_streams_the_bytes(self, store: FileStore, sources: Path) -> None:
        """open yields non-empty chunks that join to the stored bytes."""
        data = _payload(LARGE)
        record = await self.put_bytes(store, sources, data)
        chunks = [chunk async for chunk in store.open(record)]
        assert all(chunks)
        assert b"".join(chunks) == data

    async def test_open_missing_raises(self, store: FileStore) -> None:
        """open of a file that is not there raises the core's FileNotFound."""
        with pytest.raises(FileNotFound):
            await self.read_all(store, self.missing_record())

    async def test_open_deleted_raises(self, store: FileStore, sources: Path) -> None:
        """open of a deleted file raises FileNotFound, not a vendor error."""
        record = await self.put_bytes(store, sources, b"abc")
        await store.delete(record)
        with pytest.raises(FileNotFound):
            await self.read_all(store, record)

    async def test_working_copy_has_the_bytes(self, store: FileStore, sources: Path) -> None:
        """The working copy is a local file with the stored bytes and the record's extension."""
        data = _payload(3000)
        record = await self.put_bytes(store, sources, data, extension=".m4a")
        async with store.working_copy(record) as path:
            assert path.read_bytes() == data
            assert path.suffix == ".m4a"

    async def test_working_copy_of_missing_raises(self, store: FileStore, sources: Path) -> None:
        """A working copy of a deleted or never-stored file raises FileNotFound."""
        record = await self.put_bytes(store, sources, b"abc")
        await store.delete(record)
        with pytest.raises(FileNotFound):
            async with store.working_copy(record):
                pass
        with pytest.raises(FileNotFound):
            async with store.working_copy(self.missing_record()):
                pass

    async def test_errors_name_no_file(
        self, store: FileStore, sources: Path, tmp_path: Path
    ) -> None:
        """Error texts carry neither the stored name, the id, nor a path (reference: Privacy)."""
        record = await self.put_bytes(store, sources, b"abc")
        await store.delete(record)
        errors: list[str] = []
        with pytest.raises(FileNotFound) as opened:
            await self.read_all(store, record)
        errors.append(str(opened.value))
        with pytest.raises(FileNotFound) as copied:
            async with store.working_copy(record):
                pass
        errors.append(str(copied.value))
        for text in errors:
            assert text
            assert record.id not in text
            assert str(tmp_path) not in text

    async def test_working_copy_after_normal_exit(
        self, store: FileStore, sources: Path, system_temp: Path
    ) -> None:
        """After the block ends normally, the temp dir is empty and the stored file intact."""
        record = await self.put_bytes(store, sources, b"abc")
        async with store.working_copy(record) as path:
            pass
        self.assert_working_copy_released(path, system_temp)
        assert await self.read_all(store, record) == b"abc"

    async def test_working_copy_after_error(
        self, store: FileStore, sources: Path, system_temp: Path
    ) -> None:
        """After the block raises, the temp dir is empty and the error passes through."""
        record = await self.put_bytes(store, sources, b"abc")
        with pytest.raises(LookupError):
            async with store.working_copy(record) as path:
                raise LookupError
        self.assert_working_copy_released(path, system_temp)
        assert await store.exists(record)

    async def test_working_copy_after_cancellation(
        self, store: FileStore, sources: Path, system_temp: Path
    ) -> None:
        """After the task using it is cancelled, the temp dir is empty."""
        record = await self.put_bytes(store, sources, b"abc")
        entered = asyncio.Event()
        seen: list[Path] = []

        async def use() -> None:
            async with store.working_copy(record) as path:
                seen.append(path)
                entered.set()
                await asyncio.Event().wait()

        task = asyncio.create_task(use())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        self.assert_working_copy_released(seen[0], system_temp)
        assert await store.exists(record)

    def assert_working_copy_released(self, path: Path, system_temp: Path) -> None:
        """Nothing of the store's remains in the temp dirs; a temporary copy is gone."""
        assert list(system_temp.iterdir()) == []
        if self.working_copy_is_temporary:
            assert not path.exists()
            assert list(path.parent.iterdir()) == []
        else:
            assert path.exists()

    async def test_working_copy_is_staged_privately(
        self, store: FileStore, sources: Path, staging_dir: Path
    ) -> None:
        """A temporary working copy is a 0600 file in the store's staging dir, not the temp dir."""
        record = await self.put_bytes(store, sources, b"abc")
        async with store.working_copy(record) as path:
            if self.working_copy_is_temporary:
                assert path.parent == staging_dir
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0

    async def test_staging_is_fresh_in_staging_dir(
        self, store: FileStore, staging_dir: Path, system_temp: Path
    ) -> None:
        """A staging path is a new, empty or absent file in the staging dir with the extension."""
        async with store.staging(".ogg") as first, store.staging(".ogg") as second:
            assert first != second
            for path in (first, second):
                assert path.parent == staging_dir
                assert path.name.endswith(".ogg")
                assert not path.exists() or path.stat().st_size == 0
        assert list(system_temp.iterdir()) == []

    async def test_staging_is_private(self, store: FileStore, staging_dir: Path) -> None:
        """The staging dir is made 0700 and a staging file is 0600: no other user reads uploads."""
        async with store.staging(".ogg") as path:
            assert stat.S_IMODE(staging_dir.stat().st_mode) == 0o700
            assert not path.exists() or stat.S_IMODE(path.stat().st_mode) == 0o600

    async def test_staging_folder_is_private_and_removed_with_its_contents(
        self, store: FileStore, staging_dir: Path, system_temp: Path
    ) -> None:
        """A staging folder is new, empty and 0700; on exit, even by error, it goes whole."""
        seen: list[Path] = []

        async def refused_mid_way() -> None:
            async with store.staging_folder() as first, store.staging_folder() as second:
                seen.extend((first, second))
                (first / "part").mkdir()
                (first / "part" / "media.mp3.part").write_bytes(b"half a download")
                raise RuntimeError("the fetch was refused")

        with pytest.raises(RuntimeError):
            await refused_mid_way()
        first, second = seen
        assert first != second
        assert first.parent == second.parent == staging_dir
        assert stat.S_IMODE(staging_dir.stat().st_mode) == 0o700
        assert not first.exists()
        assert not second.exists()
        assert list(system_temp.iterdir()) == []

    async def test_a_staging_folder_file_is_stored_by_move(
        self, store: FileStore, sources: Path
    ) -> None:
        """A file downloaded into a staging folder is put like an upload and leaves the folder."""
        async with store.staging_folder() as folder:
            assert list(folder.iterdir()) == []
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700
            fetched = folder / "media.mp3"
            fetched.write_bytes(b"fetched bytes")
            record = await store.put(FILE_ID, ".mp3", fetched, now=NOW, move=True)
            assert not fetched.exists()
        assert record.size == len(b"fetched bytes")
        assert await self.read_all(store, record) == b"fetched bytes"

    async def test_staging_removed_when_not_consumed(
        self, store: FileStore, system_temp: Path
    ) -> None:
        """A staging file written but never put is removed on exit, normal or by error."""
        async with store.staging(".wav") as path:
            path.write_bytes(b"data")
        assert not path.exists()

        async def fail_while_staged() -> None:
            async with store.staging(".wav") as staged:
                staged.write_bytes(b"data")
                raise LookupError

        with pytest.raises(LookupError):
            await fail_while_staged()
        assert list(path.parent.iterdir()) == []
        assert list(system_temp.iterdir()) == []

    async def test_staging_consumed_by_put_move(self, store: FileStore, system_temp: Path) -> None:
        """A staging file moved into the store ends the block cleanly, leaving nothing behind."""
        async with store.staging(".ogg") as path:
            path.write_bytes(b"converted")
            record = await store.put(FILE_ID, ".ogg", path, now=NOW, move=True)
        assert list(path.parent.iterdir()) == []
        assert list(system_temp.iterdir()) == []
        assert await self.read_all(store, record) == b"converted"

    async def test_staging_removed_after_cancellation(
        self, store: FileStore, staging_dir: Path, system_temp: Path
    ) -> None:
        """A staging file is removed when the task using it is cancelled."""
        entered = asyncio.Event()

        async def use() -> None:
            async with store.staging(".ogg") as path:
                path.write_bytes(b"partial")
                entered.set()
                await asyncio.Event().wait()

        task = asyncio.create_task(use())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert list(staging_dir.iterdir()) == []
        assert list(system_temp.iterdir()) == []

    @staticmethod
    async def read_range(store: FileStore, record: FileRecord, start: int, stop: int) -> bytes:
        """Every byte ``open_range`` gives for ``record`` from ``start`` to ``stop``."""
        return b"".join([c async for c in store.open_range(record, start=start, stop=stop)])

    async def test_open_range_gives_exactly_the_range(
        self, store: FileStore, sources: Path
    ) -> None:
        """open_range gives the range's bytes: the first, a middle across chunks, the tail."""
        data = _payload(LARGE)
        record = await self.put_bytes(store, sources, data)
        for start, stop in ((0, 100), (1_234_567, 2_345_678), (LARGE - 500, LARGE), (7, 8)):
            assert await self.read_range(store, record, start, stop) == data[start:stop]

    async def test_open_range_stops_at_the_end(self, store: FileStore, sources: Path) -> None:
        """A range past the file's end gives what is there, and none when it starts past it."""
        data = _payload(1000)
        record = await self.put_bytes(store, sources, data)
        assert await self.read_range(store, record, 900, 5000) == data[900:]
        assert await self.read_range(store, record, 1000, 2000) == b""

    async def test_open_range_streams_in_chunks(self, store: FileStore, sources: Path) -> None:
        """A large range comes in several non-empty chunks, not as one piece in memory."""
        data = _payload(LARGE)
        record = await self.put_bytes(store, sources, data)
        chunks = [c async for c in store.open_range(record, start=1, stop=LARGE)]
        assert len(chunks) > 1
        assert all(chunks)
        assert b"".join(chunks) == data[1:]

    async def test_open_range_refuses_an_empty_or_backward_range(
        self, store: FileStore, sources: Path
    ) -> None:
        """start must be at least 0 and below stop: ValueError otherwise, nothing read."""
        record = await self.put_bytes(store, sources, b"abcdef")
        for start, stop in ((3, 3), (4, 2), (-1, 2)):
            with pytest.raises(ValueError, match="range"):
                await self.read_range(store, record, start, stop)

    async def test_open_range_missing_raises(self, store: FileStore, sources: Path) -> None:
        """open_range of a deleted or never-stored file raises FileNotFound."""
        record = await self.put_bytes(store, sources, b"abc")
        await store.delete(record)
        with pytest.raises(FileNotFound):
            await self.read_range(store, record, 0, 2)
        with pytest.raises(FileNotFound):
            await self.read_range(store, self.missing_record(), 0, 2)
