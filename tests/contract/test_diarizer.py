"""The diarizer contract, run over the memory twin and the offline adapter."""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.support.dialogue import conversation
from tests.support.speech import silence
from transcriber_adapters.diarization import OfflineDiarizer
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_contracts.diarizer import DiarizerCase, DiarizerContract, Recording
from transcriber_core.entities import Turn


@functools.cache
def _made() -> tuple[Recording, Recording, Path]:
    """The dialogues and the silence, made once per run (espeak-ng, ffmpeg)."""
    folder = Path(tempfile.mkdtemp(prefix="transcriber-dialogues-"))
    import atexit  # noqa: PLC0415

    atexit.register(shutil.rmtree, folder, ignore_errors=True)

    two = conversation(folder / "two.ogg", voices=2, turns=6, seed=1)
    three = conversation(folder / "three.ogg", voices=3, turns=6, seed=2)
    return two, three, silence(folder / "silence.ogg", 5.0)


class _Tells:
    """The memory twin's driver: it is told each recording's turns, and a print per voice."""

    def __init__(self, diarizer: MemoryDiarizer) -> None:
        self.diarizer = diarizer

    def tell(self, audio: Path, turns: Sequence[Turn]) -> None:
        labels = sorted({turn.speaker for turn in turns})
        prints = {
            label: tuple(1.0 if i == index else 0.0 for i in range(len(labels)))
            for index, label in enumerate(labels)
        }
        self.diarizer.answer(audio, turns, prints)


class _Listens:
    """The offline adapter's driver: it hears the answer itself."""

    def tell(self, audio: Path, turns: Sequence[Turn]) -> None:
        pass


class TestMemoryDiarizer(DiarizerContract):
    """The twin keeps the contract."""

    @pytest.fixture
    def case(self) -> DiarizerCase:
        two, three, quiet = _made()
        twin = MemoryDiarizer()
        return DiarizerCase(
            diarizer=twin, driver=_Tells(twin), two_voices=two, three_voices=three, silence=quiet
        )


class TestOfflineDiarizer(DiarizerContract):
    """The offline adapter keeps the contract on espeak-ng dialogues, with models from wheels."""

    @pytest.fixture
    def case(self) -> DiarizerCase:
        two, three, quiet = _made()
        return DiarizerCase(
            diarizer=OfflineDiarizer(),
            driver=_Listens(),
            two_voices=two,
            three_voices=three,
            silence=quiet,
        )
