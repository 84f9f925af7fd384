"""A diarizer that listens to nothing: it answers the turns it was told, for demos and tests."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from transcriber_core.entities import Turn
from transcriber_core.errors import TranscriberError


class MemoryDiarizer:
    """Answers the turns it was scripted with; passes the Diarizer contract.

    ``answer(path, turns)`` tells it who speaks when in the file at ``path``;
    a file it was told nothing about has the ``turns`` it was made with (none:
    no speech). Asked for ``speakers``,
    it folds the voices past that count onto the first ones, as a real
    diarizer told the count would merge them. ``fail_next`` makes the next
    call raise; ``calls`` records each call's ``(path, speakers)``.
    """

    def __init__(self, turns: Sequence[Turn] = ()) -> None:
        self._default = tuple(turns)
        self._answers: dict[Path, tuple[Turn, ...]] = {}
        self._failures: list[TranscriberError] = []
        #: Every call's path and count, in order.
        self.calls: list[tuple[Path, int | None]] = []

    def answer(self, path: Path, turns: Sequence[Turn]) -> None:
        """Who speaks when in the file at ``path`` (its bytes: a copy of it gets the same)."""
        self._answers[_key(path)] = tuple(turns)

    def fail_next(self, error: TranscriberError) -> None:
        """Make the next ``diarize`` raise ``error``."""
        self._failures.append(error)

    async def diarize(self, audio: Path, *, speakers: int | None) -> Sequence[Turn]:
        """The turns told for ``audio``, folded to ``speakers`` voices when a count is given."""
        self.calls.append((audio, speakers))
        await asyncio.sleep(0)  # a checkpoint: a cancelled caller stops here
        if self._failures:
            raise self._failures.pop(0)
        turns = self._answers.get(_key(audio), self._default)
        if speakers is None:
            return turns
        order: list[str] = []
        for turn in sorted(turns, key=lambda t: t.start):
            if turn.speaker not in order:
                order.append(turn.speaker)
        fold = {label: order[index % speakers] for index, label in enumerate(order)}
        return tuple(Turn(speaker=fold[t.speaker], start=t.start, end=t.end) for t in turns)


def _key(path: Path) -> Path:
    """What an answer is filed under: the file's bytes' digest as a path-like key."""
    import hashlib  # noqa: PLC0415

    return Path(hashlib.sha256(path.read_bytes()).hexdigest())
