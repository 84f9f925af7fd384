"""Whisper on this machine's CPU with faster-whisper: a recognizer that works in ``start``.

A local engine has no remote operation to poll, and a result kept in a
process's memory would die with it, so ``start`` does the recognition and
returns the outcome with ``Started``; the recognize step then ends the job at
once, under the same lease, fencing and attempts as any step (ADR 28). A
restart mid-recognition loses only time: the lease expires and the job is
recognised again.

The work runs in a thread (CTranslate2 and the decoder release the GIL), at
most ``max_concurrent`` recordings at once. The recording (the converter's
16 kHz PCM: the source's samples, ADR 42) is read and transcribed block by
block, each cut in a pause, so memory does not grow with its duration and no
word is split; the thread looks at a stop flag between segments, so a
cancellation (the step ceiling, shutdown) ends it within one 30-second
window of audio (one batch of them with ``batch_size``).

The model is loaded lazily, once per process, and shared by every loop and
every instance with the same settings. ``resolve_model`` finds it on disk at
startup and refuses, naming the setting, what would otherwise fail or hang
later: the extra not installed, a directory that holds no converted model, a
model name that is not on disk when the model hub cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import itertools
import os
import secrets
import socket
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar
from urllib.parse import urlsplit

import attrs

from transcriber_adapters.ffmpeg import wav_data
from transcriber_adapters.whisper_models import cached, missing_files
from transcriber_core.entities import FileRecord, Word
from transcriber_core.errors import (
    FileNotFound,
    MissingFile,
    RecognitionFailed,
    RecognizerUnavailable,
)
from transcriber_core.languages import DEFAULT_REQUEST, Abilities, RecognitionRequest
from transcriber_core.ports import (
    NO_LIMITS,
    CheckResult,
    FileStore,
    ProgressCallback,
    Recognized,
    RecognizerLimits,
    Rejected,
    Started,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Samples = npt.NDArray[np.float32]

#: Whisper hears 16 kHz mono.
SAMPLE_RATE = 16_000
#: Audio handed to the model at once: memory is bounded by this, not by the recording
#: (its spectrogram is computed at once). Each cut costs a part-filled window and the
#: text before it as context, so blocks are long (bench/whisper.py, ADR 42).
BLOCK_SECONDS = 300.0
#: A block ends in a pause the VAD hears within its last seconds (at most a third of
#: it), so no word is cut.
CUT_SEARCH_SECONDS = 15.0
#: The shortest block: a search of 2 seconds.
MIN_BLOCK_SECONDS = 6.0
#: The shortest pause a block may end in: longer than the stops inside a word.
MIN_PAUSE_SECONDS = 0.3
#: Times the search looks further on when it hears no pause, before it settles for the
#: quietest moment (a minute of speech without a breath).
CUT_EXTENSIONS = 4
#: The length of the moments compared when looking for the quietest.
_CUT_FRAME = SAMPLE_RATE // 10
#: How long startup waits for the model hub before saying it cannot be reached.
HUB_PROBE_TIMEOUT = 5.0
#: How long a cancelled recognition waits for its thread to stop before leaving it behind.
STOP_PATIENCE = 2.0
#: The install command named when the extra is missing.
INSTALL_HINT = "pip install 'selfhosted-transcriber[whisper]'"


class WhisperSetupError(Exception):
    """Whisper cannot run with these settings; ``key`` names the ``[whisper]`` setting at fault."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        #: The setting to change (``model``), or ``kind`` when the extra is missing.
        self.key = key


@attrs.frozen(kw_only=True)
class WhisperSettings:
    """How the model is loaded and run; the ``[whisper]`` keys of reference: Recognizers."""

    #: A directory holding a converted model (``resolve_model`` finds it).
    model_dir: Path
    #: ISO 639-1 code, or "" to detect the language of each recording.
    language: str = ""
    #: CTranslate2's weight type: "int8" is the fastest on a CPU.
    compute_type: str = "int8"
    #: CPU threads of one recognition; 0 = the CPUs shared among the recognitions at once.
    threads: int = 0
    #: Beam search width; 1 is greedy and faster, 5 is Whisper's own default.
    beam_size: int = 5
    #: 0: the sequential decoder (each window knows the text before it); N: faster-whisper's
    #: batched pipeline, N windows of speech the VAD found per model call (ADR 42).
    batch_size: int = 0
    #: A recording longer than this many seconds is cut at silences into parts of about
    #: this length, which any worker takes (SPEC §22, ADR 52); 0: never split.
    part_seconds: float = 600.0
    #: The temperatures a window is decoded at, in turn, until one passes Whisper's checks
    #: (repetition, confidence); None: faster-whisper's own fallback, 0 to 1. Above 0 it
    #: samples at random, so a window that falls back reads differently from run to run;
    #: ``(0.0,)`` decodes every window once, deterministically (the tests do).
    temperatures: tuple[float, ...] | None = None

    def __attrs_post_init__(self) -> None:
        if not self.part_seconds >= 0:  # NaN too
            raise ValueError("part_seconds must not be negative")
        if self.temperatures is not None and (
            not self.temperatures or not all(0 <= t <= 1 for t in self.temperatures)
        ):
            raise ValueError("temperatures must be one or more numbers from 0 to 1")


def quiet_openmp() -> None:
    """Make CTranslate2's OpenMP threads sleep between tasks instead of spinning (ADR 42).

    Read once, when CTranslate2 is first imported. Spinning costs bare
    faster-whisper little, but in the service, with the event loop's thread
    beside it on a busy host, a 10-second clip took 4.9 times the CPU time
    and 5.8 times the wall time of bare faster-whisper (75 % of it in
    libgomp's wait loop); sleeping brought it to 1.0-1.1 times. An operator's
    own ``OMP_WAIT_POLICY`` wins.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def require_engine() -> None:
    """Import faster-whisper, or say what to install."""
    quiet_openmp()
    try:
        import faster_whisper  # noqa: F401, PLC0415 - an optional extra, imported on demand
    except ImportError:
        raise WhisperSetupError(
            "kind", f'"whisper" needs the optional extra: {INSTALL_HINT}'
        ) from None


def resolve_model(model: str, *, offline: bool | None = None, cache: Path | None = None) -> Path:
    """The directory of ``model``: itself, or a known name's download; raises ``WhisperSetupError``.

    A name installed in ``cache`` (``transcriber models install``) is that
    folder, whatever the name. A known name (``tiny``, ``base``,
    ``large-v3``...) is then looked up in faster-whisper's hub cache. When
    it is not there it is downloaded, unless the hub is out of reach
    (``HF_HUB_OFFLINE``, or no answer): then the error says so instead of
    letting the first recording hang on a download.
    """
    require_engine()
    from faster_whisper.utils import available_models, download_model  # noqa: PLC0415

    installed = cached(cache, model) if cache is not None else None
    if installed is not None:
        return check_model_dir(installed)
    if model not in available_models():
        return check_model_dir(Path(model).expanduser())
    try:
        return check_model_dir(Path(download_model(model, local_files_only=True)))
    except (WhisperSetupError, OSError, ValueError):
        pass  # not in the cache (huggingface_hub says so with OSError or ValueError subclasses)
    if offline is None:
        offline = _hub_offline()
    where = (
        "install it with `transcriber models install` (docs/whisper-models.md) "
        "or set [whisper] model to a directory holding a converted model"
    )
    if offline:
        raise WhisperSetupError(
            "model",
            f'"{model}" is not on this machine and HF_HUB_OFFLINE is set: {where}, '
            "or download it once with network",
        )
    if not _hub_reachable():
        raise WhisperSetupError(
            "model",
            f'"{model}" is not on this machine and the model hub cannot be reached: {where}, '
            "or download it once with network",
        )
    try:
        return check_model_dir(Path(download_model(model)))
    except (OSError, ValueError) as exc:
        raise WhisperSetupError(
            "model", f'"{model}" could not be downloaded ({type(exc).__name__}): {where}'
        ) from None


def check_model_dir(path: Path) -> Path:
    """``path`` if it holds a converted model; else ``WhisperSetupError`` naming what is missing."""
    if not path.is_dir():
        raise WhisperSetupError(
            "model", "no such directory, and not a model name faster-whisper knows"
        )
    missing = missing_files(path)
    if missing:
        raise WhisperSetupError(
            "model",
            f"the directory is not a converted Whisper model (missing {', '.join(missing)})",
        )
    return path


def _hub_offline() -> bool:
    value = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    return value in {"1", "true", "yes", "on"}


def _hub_reachable() -> bool:
    """True when a TCP connection to the model hub opens within the probe timeout."""
    from huggingface_hub import constants  # noqa: PLC0415 - comes with faster-whisper

    parts = urlsplit(constants.ENDPOINT)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "", port), timeout=HUB_PROBE_TIMEOUT):
            return True
    except OSError:
        return False


#: A converted model's vocabulary has at least this many entries when it is multilingual
#: (CTranslate2's own test); an English-only one (tiny.en) has one fewer.
MULTILINGUAL_VOCABULARY = 51865


def model_abilities(model_dir: Path) -> Abilities:
    """What the model in ``model_dir`` can be asked for, read from its files without loading it.

    A multilingual model knows Whisper's languages (their ISO 639-1 codes),
    translates and reads a prompt; an English-only one knows English only.
    """
    from faster_whisper.tokenizer import _LANGUAGE_CODES  # noqa: PLC0415 - optional extra

    size = 0
    if (model_dir / "vocabulary.json").is_file():
        import json  # noqa: PLC0415

        size = len(json.loads((model_dir / "vocabulary.json").read_text(encoding="utf-8")))
    elif (model_dir / "vocabulary.txt").is_file():
        with (model_dir / "vocabulary.txt").open(encoding="utf-8") as lines:
            size = sum(1 for _ in lines)
    if size >= MULTILINGUAL_VOCABULARY:
        codes = frozenset(code for code in _LANGUAGE_CODES if len(code) == 2)
        return Abilities(languages=codes, translate=True, prompt=True, name="this Whisper model")
    return Abilities(
        languages=frozenset({"en"}),
        prompt=True,
        name="this Whisper model (English-only)",
    )


#: Loaded models, one per settings, shared by every recognizer of the process.
_MODELS: dict[tuple[Path, str, int, int], Any] = {}
_MODELS_LOCK = threading.Lock()


def cpu_threads(threads: int, at_once: int = 1) -> int:
    """The threads one recognition uses: ``threads``, or for 0 its share of the CPUs.

    The share is the CPUs divided among ``at_once`` recognitions, so that
    recognitions x threads never oversubscribes the machine (ADR 49).
    """
    if threads > 0:
        return threads
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, cpus // max(1, at_once))


def load_model(settings: WhisperSettings, *, workers: int) -> Any:  # faster-whisper ships no types
    """The process's model for these settings, loaded on first use."""
    key = (
        settings.model_dir,
        settings.compute_type,
        cpu_threads(settings.threads, workers),
        workers,
    )
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            quiet_openmp()
            from faster_whisper import WhisperModel  # noqa: PLC0415 - optional extra

            try:
                model = WhisperModel(
                    str(settings.model_dir),
                    device="cpu",
                    compute_type=settings.compute_type,
                    cpu_threads=key[2],
                    num_workers=workers,
                    local_files_only=True,
                )
            except (RuntimeError, ValueError, OSError) as exc:
                # CTranslate2 says "unable to open file" or an unsupported type: ours to fix.
                raise RecognizerUnavailable(
                    f"the Whisper model could not be loaded ({type(exc).__name__})"
                ) from None
            _MODELS[key] = model
        return model


T = TypeVar("T")

#: The name of every transcription thread.
THREAD_NAME = "transcriber-whisper"
#: How long one look of ``wait_for_threads`` blocks a worker thread.
_JOIN_POLL = 0.1
#: Transcription threads alive in this process, and the event set while there are none.
_live = 0
_live_lock = threading.Lock()
_idle = threading.Event()
_idle.set()


def _thread_started() -> None:
    global _live  # noqa: PLW0603 - one count per process, like the threads it counts
    with _live_lock:
        _live += 1
        _idle.clear()


def _thread_ended() -> None:
    global _live  # noqa: PLW0603
    with _live_lock:
        _live -= 1
        if _live == 0:
            _idle.set()


def threads_running() -> bool:
    """True while a transcription thread is alive, in any recognizer of this process.

    One left inside CTranslate2 when the interpreter exits aborts the process
    (``std::terminate``); the CLI then leaves with ``os._exit`` instead.
    """
    return not _idle.is_set()


async def wait_for_threads() -> None:
    """Return once every transcription thread has ended; the caller bounds the wait."""
    # Short waits in a worker thread, so a cancelled caller leaves none blocked for long.
    while not await asyncio.to_thread(_idle.wait, _JOIN_POLL):
        pass


async def _stoppable(
    function: Callable[[Path, threading.Event], T], path: Path, *, patience: float
) -> T:
    """Run ``function(path, stop)`` in a daemon thread; on cancellation set ``stop``.

    The thread looks at ``stop`` between segments, but one segment is one
    model call that nothing interrupts (seconds; more when Whisper retries a
    window at higher temperatures). So the caller waits ``patience`` for it,
    then leaves it to stop by itself: cancellation (the step ceiling,
    shutdown) never waits for a window, and a daemon thread never holds up
    the process's exit. Left behind, it only reads its open file and burns
    CPU until its window ends; it writes nothing.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()
    stop = threading.Event()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.done():
            outcome()

    def run() -> None:
        try:
            result = function(path, stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task as it is
            error = exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(settle, lambda: done.set_exception(error))
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, lambda: done.set_result(result))

    def counted() -> None:
        try:
            run()
        finally:
            _thread_ended()

    _thread_started()
    try:
        threading.Thread(target=counted, name=THREAD_NAME, daemon=True).start()
    except BaseException:
        _thread_ended()
        raise
    try:
        return await asyncio.shield(done)
    except asyncio.CancelledError:
        stop.set()
        with contextlib.suppress(TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(done), patience)
        if done.done() and not done.cancelled():
            done.exception()  # retrieved: the caller is cancelled, the outcome is dropped
        raise


class _Stopped(Exception):  # noqa: N818 - a signal between our own functions, never raised out
    """The caller was cancelled; the thread stops between segments."""


class WhisperRecognizer:
    """Transcribes in ``start`` with faster-whisper; at most ``max_concurrent`` recordings at once.

    ``files`` is the store the converted audio lives in: the recognizer reads
    it through a working copy, like the converter.
    """

    def __init__(
        self,
        files: FileStore,
        settings: WhisperSettings,
        *,
        max_concurrent: int = 1,
        block_seconds: float = BLOCK_SECONDS,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        if block_seconds < MIN_BLOCK_SECONDS:
            raise ValueError(f"block_seconds must be at least {MIN_BLOCK_SECONDS:g}")
        self._files = files
        self.settings = settings
        self.max_concurrent = max_concurrent
        self._block_seconds = block_seconds
        self._slots = asyncio.Semaphore(max_concurrent)
        #: What the model can be asked for (SPEC §18).
        self.abilities = model_abilities(settings.model_dir)
        #: Recordings being transcribed now; for tests and the bench.
        self.running = 0

    @property
    def limits(self) -> RecognizerLimits:
        """Parts of ``part_seconds`` at most, so workers share a long recording; 0: no limit.

        Whisper itself takes any length block by block: the limit is there to
        split for parallelism (ADR 52), never to refuse.
        """
        part_seconds = self.settings.part_seconds
        return NO_LIMITS if part_seconds == 0 else RecognizerLimits(max_seconds=part_seconds)

    async def start(
        self,
        audio: FileRecord,
        *,
        duration: float | None,
        request: RecognitionRequest = DEFAULT_REQUEST,
        on_progress: ProgressCallback | None = None,
    ) -> Started:
        """Transcribe ``audio`` now as ``request`` asks; the outcome comes with the operation id.

        ``on_progress`` hears the end of each segment recognised, in seconds
        from the start, on the event loop's thread (ADR 51).
        """
        operation_id = "whisper-" + secrets.token_urlsafe(16)
        report = None if on_progress is None else _on_loop(on_progress)
        async with self._slots:
            self.running += 1
            try:
                async with self._files.working_copy(audio) as path:
                    transcribe = functools.partial(self._transcribe, request=request, report=report)
                    outcome = await _stoppable(transcribe, path, patience=STOP_PATIENCE)
            except FileNotFound:
                raise MissingFile("the converted audio is missing from storage") from None
            finally:
                self.running -= 1
        return Started(operation_id=operation_id, advised_delay=timedelta(0), outcome=outcome)

    async def close(self) -> None:
        """Wait for threads a cancelled step left to reach their stop (seconds: one segment).

        Shutdown bounds the wait with its hard timeout; the model stays cached.
        """
        await wait_for_threads()

    async def check(self, operation_id: str) -> CheckResult:
        """Nothing to check: every operation ended in its ``start``; a job here is not ours."""
        return Rejected(reason="the local recognizer has no such operation to check")

    def _transcribe(
        self,
        path: Path,
        stop: threading.Event,
        *,
        request: RecognitionRequest = DEFAULT_REQUEST,
        report: ProgressCallback | None = None,
    ) -> Recognized | Rejected:
        """Decode and transcribe block by block; runs in a thread, stops when ``stop`` is set."""
        model = load_model(self.settings, workers=self.max_concurrent)
        language = request.language or self.settings.language or None
        texts: list[str] = []
        words: list[Word] = []
        try:
            for offset, samples in blocks(path, stop, self._block_seconds):
                if offset:
                    # The last block's decoder and feature buffers go before the next
                    # block's come, not whenever: without it the peak grows with the
                    # number of blocks. A recording of one block needs no collection.
                    gc.collect()
                heard = self._transcribe_block(
                    model, samples, offset, language, request, stop, report
                )
                del samples
                if heard.text:
                    texts.append(heard.text)
                    words.extend(heard.words)
                    # The first block with speech decides the language for the rest.
                    language = language or heard.language
        except _Stopped:
            return Rejected(reason="stopped")  # nobody receives it: the caller was cancelled
        if not texts:
            return Rejected(reason="no speech recognised")
        return Recognized(text=" ".join(texts), words=tuple(words), language=language)

    def _transcribe_block(  # noqa: PLR0917 - one private call site
        self,
        model: Any,  # faster-whisper ships no types
        samples: Samples,
        offset: float,
        language: str | None,
        request: RecognitionRequest,
        stop: threading.Event,
        report: ProgressCallback | None = None,
    ) -> Recognized:
        settings = self.settings
        try:
            segments, info = _engine(model, settings.batch_size).transcribe(
                samples,
                language=language,
                task=request.task.value,
                initial_prompt=request.prompt,
                beam_size=settings.beam_size,
                word_timestamps=True,
                # Silence yields no segment instead of Whisper's invented "you".
                vad_filter=True,
                **({"batch_size": settings.batch_size} if settings.batch_size else {}),
                **({"temperature": list(t)} if (t := settings.temperatures) else {}),
            )
            texts: list[str] = []
            words: list[Word] = []
            for segment in segments:
                if stop.is_set():
                    raise _Stopped
                text = str(segment.text).strip()
                if text:
                    texts.append(text)
                for word in segment.words or ():
                    start = round(offset + float(word.start), 3)
                    end = max(start, round(offset + float(word.end), 3))
                    words.append(Word(text=str(word.word).strip(), start=start, end=end))
                if report is not None:
                    # Progress is the end of the last segment heard (ADR 51).
                    report(offset + float(segment.end))
        except (RuntimeError, MemoryError) as exc:
            raise RecognizerUnavailable(
                f"the Whisper model failed on this block ({type(exc).__name__})"
            ) from None
        return Recognized(text=" ".join(texts), words=tuple(words), language=str(info.language))


def _on_loop(callback: ProgressCallback) -> ProgressCallback:
    """``callback`` made callable from a transcription thread: it runs on the caller's loop.

    Called once the loop has closed (a step left behind), it does nothing.
    """
    loop = asyncio.get_running_loop()

    def report(seconds: float) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(callback, seconds)

    return report


def _engine(model: Any, batch_size: int) -> Any:  # faster-whisper ships no types
    """The sequential model, or a batched pipeline over it (one per recording: it has state)."""
    if not batch_size:
        return model
    from faster_whisper import BatchedInferencePipeline  # noqa: PLC0415 - optional extra

    return BatchedInferencePipeline(model)


def blocks(
    path: Path, stop: threading.Event, block_seconds: float = BLOCK_SECONDS
) -> Iterator[tuple[float, Samples]]:
    """``(offset seconds, 16 kHz mono float32)`` blocks of the file, each ending in a pause.

    A block is cut only when more audio follows it, in the longest pause the
    VAD hears in its last ``CUT_SEARCH_SECONDS`` (looking further on when it
    hears none), so no word is split between two blocks; the last block may
    be up to a search longer than the others.
    """
    import numpy as np  # noqa: PLC0415 - comes with the optional extra

    block = int(block_seconds * SAMPLE_RATE)
    search = int(min(CUT_SEARCH_SECONDS, block_seconds / 3) * SAMPLE_RATE)
    pending: list[Samples] = []
    size = offset = attempt = 0
    for chunk in _decode(path, stop):
        pending.append(chunk)
        size += len(chunk)
        if size < block + (attempt + 1) * search:
            continue
        buffer = np.concatenate(pending)
        start = block - search + attempt * search
        window = buffer[start : start + search]
        pause = _longest_pause(window) if attempt < CUT_EXTENSIONS else _quiet_cut(window)
        if pause is None:
            # Speech through the whole search: look at the next stretch once it is here.
            pending, attempt = [buffer], attempt + 1
            continue
        cut = start + pause
        yield offset / SAMPLE_RATE, buffer[:cut]
        rest = buffer[cut:].copy()
        del buffer, window
        pending, size, offset, attempt = [rest], len(rest), offset + cut, 0
    if size:
        yield offset / SAMPLE_RATE, np.concatenate(pending)


def _longest_pause(window: Samples) -> int | None:
    """The middle of the longest pause between two stretches of speech in ``window``.

    Only pauses with speech heard on both sides count: at the window's edges
    the VAD may not yet hear a word that has begun. A window with no speech
    at all is cut in its middle.
    """
    from faster_whisper.vad import VadOptions, get_speech_timestamps  # noqa: PLC0415

    options = VadOptions(min_silence_duration_ms=int(MIN_PAUSE_SECONDS * 1000), speech_pad_ms=0)
    speech = get_speech_timestamps(window, options)
    if not speech:
        return len(window) // 2
    best: tuple[int, int] | None = None
    for before, after in itertools.pairwise(speech):
        gap = int(after["start"]) - int(before["end"])
        if gap >= MIN_PAUSE_SECONDS * SAMPLE_RATE and (best is None or gap > best[1]):
            best = (int(before["end"]) + gap // 2, gap)
    return None if best is None else best[0]


def _quiet_cut(window: Samples) -> int:
    """The middle of the quietest tenth of a second in ``window``."""
    import numpy as np  # noqa: PLC0415

    frames = len(window) // _CUT_FRAME
    if frames == 0:
        return len(window)
    energy = np.square(window[: frames * _CUT_FRAME].reshape(frames, _CUT_FRAME)).sum(axis=1)
    return int(np.argmin(energy)) * _CUT_FRAME + _CUT_FRAME // 2


#: Samples read from a WAV file at once: a second of audio.
_WAV_CHUNK = SAMPLE_RATE


def _decode(path: Path, stop: threading.Event) -> Iterator[Samples]:
    """The file's audio as 16 kHz mono float32 chunks, read as they are needed.

    The converter's PCM output (ADR 42) is read as it is, samples and all;
    anything else (Opus audio converted before a change of recognizer) is
    decoded and resampled with PyAV.
    """
    try:
        reader = path.open("rb")
    except OSError:
        raise RecognitionFailed("the converted audio could not be read") from None
    with reader:
        found = wav_data(reader)
        if found is not None and found[2:] == (2, SAMPLE_RATE):
            yield from _read_pcm(reader, found[1], stop)
            return
    yield from _decode_any(path, stop)


def _read_pcm(reader: BinaryIO, declared: int, stop: threading.Event) -> Iterator[Samples]:
    """16-bit mono samples from ``reader``'s position, at most ``declared`` bytes of them."""
    import numpy as np  # noqa: PLC0415

    left = declared
    while left > 0:
        if stop.is_set():
            raise _Stopped
        data = reader.read(min(left, _WAV_CHUNK * 2))
        if len(data) < 2:
            return
        left -= len(data)
        yield np.frombuffer(data[: len(data) // 2 * 2], dtype="<i2").astype(np.float32) / 32768.0


def _decode_any(path: Path, stop: threading.Event) -> Iterator[Samples]:
    """The file's first audio stream as 16 kHz mono float32 chunks, decoded as they are read."""
    import av  # noqa: PLC0415 - comes with faster-whisper
    import numpy as np  # noqa: PLC0415

    try:
        with av.open(str(path), mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise RecognitionFailed("the converted audio has no audio stream")
            resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
            for frame in container.decode(audio=0):
                if stop.is_set():
                    raise _Stopped
                for out in resampler.resample(frame):
                    yield out.to_ndarray().reshape(-1).astype(np.float32) / 32768.0
            for out in resampler.resample(None):
                yield out.to_ndarray().reshape(-1).astype(np.float32) / 32768.0
    except av.error.FFmpegError:
        # The library's text may carry the path: our own words only (reference: Privacy).
        raise RecognitionFailed("the converted audio could not be decoded") from None
