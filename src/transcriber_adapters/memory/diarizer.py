"""A diarizer that listens to nothing: it answers the turns (and prints) it was told, for tests."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from transcriber_core.entities import Diarization, Print, Turn
from transcriber_core.errors import TranscriberError


class MemoryDiarizer:
    """Answers the turns it was scripted with; passes the Diarizer contract.

    ``answer(path, turns, prints)`` tells it who speaks when in the file at
    ``path``, and each label's print (none: a diarizer without an encoder);
    a file it was told nothing about has the ``turns`` and ``prints`` it was
    made with (none: no speech). Asked for ``speakers``, it folds the voices
    past that count onto the first ones, as a real diarizer told the count
    would merge them, keeping the first ones' prints. ``fail_next`` makes the
    next call raise; ``calls`` records each call's ``(path, speakers)``.
    """

    def __init__(
        self, turns: Sequence[Turn] = (), prints: Mapping[str, Print] | None = None
    ) -> None:
        self._default = (tuple(turns), dict(prints or {}))
        self._answers: dict[Path, tuple[tuple[Turn, ...], dict[str, Print]]] = {}
        self._failures: list[TranscriberError] = []
        #: Every call's path and count, in order.
        self.calls: list[tuple[Path, int | None]] = []

    def answer(
        self, path: Path, turns: Sequence[Turn], prints: Mapping[str, Print] | None = None
    ) -> None:
        """Who speaks when in the file at ``path`` (its bytes: a copy of it gets the same)."""
        self._answers[_key(path)] = (tuple(turns), dict(prints or {}))

    def fail_next(self, error: TranscriberError) -> None:
        """Make the next ``diarize`` raise ``error``."""
        self._failures.append(error)

    async def diarize(self, audio: Path, *, speakers: int | None) -> Diarization:
        """The turns told for ``audio``, folded to ``speakers`` voices when a count is given."""
        self.calls.append((audio, speakers))
        await asyncio.sleep(0)  # a checkpoint: a cancelled caller stops here
        if self._failures:
            raise self._failures.pop(0)
        turns, prints = self._answers.get(_key(audio), self._default)
        if speakers is None:
            return Diarization(turns=turns, prints=prints)
        order: list[str] = []
        for turn in sorted(turns, key=lambda t: t.start):
            if turn.speaker not in order:
                order.append(turn.speaker)
        fold = {label: order[index % speakers] for index, label in enumerate(order)}
        kept = {label: prints[label] for label in order[:speakers] if label in prints}
        return Diarization(
            turns=tuple(Turn(speaker=fold[t.speaker], start=t.start, end=t.end) for t in turns),
            prints=kept,
        )


def _key(path: Path) -> Path:
    """What an answer is filed under: the file's bytes' digest as a path-like key."""
    import hashlib  # noqa: PLC0415

    return Path(hashlib.sha256(path.read_bytes()).hexdigest())
