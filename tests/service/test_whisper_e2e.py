"""``kind = "whisper"`` through the real service: upload, transcript, shutdown, setup errors."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.service import running_service, start_failing
from tests.support.speech import SENTENCES, speak, story_repeated, tiny_en_model, word_error_rate

pytestmark = pytest.mark.slow

#: No hub: the model comes from a package on disk (reference: Recognizers).
OFFLINE = {"HF_HUB_OFFLINE": "1"}


def whisper(**keys: Any) -> dict[str, dict[str, Any]]:
    """A config running Whisper tiny.en from its package."""
    return {"recognizer": {"kind": "whisper"}, "whisper": {"model": str(tiny_en_model()), **keys}}


@pytest.mark.timeout(180)
def test_upload_is_transcribed_on_this_machine(tmp_path: Path) -> None:
    """An English recording uploaded over HTTP ends done with its words, timings and language.

    The model is the README's offline path: ``transcriber models install
    tiny.en <dir>`` into the data dir's cache, then ``[whisper] model = "tiny.en"``.
    """
    clip = speak(SENTENCES[1], tmp_path / "clip.ogg")
    data = tmp_path / "run" / "data"
    config_file = tmp_path / "models.toml"
    config_file.write_text(f'[storage]\ndata_dir = "{data}"\n', encoding="utf-8")
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "transcriber_app",
            "models",
            "-c",
            str(config_file),
            "install",
            "tiny.en",
            str(tiny_en_model()),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    config = {"recognizer": {"kind": "whisper"}, "whisper": {"model": "tiny.en"}}
    with running_service(tmp_path / "run", config=config, env=OFFLINE) as service:
        with service.client() as client:
            response = client.post(
                "/api/audio", files={"file": ("note.ogg", clip.read_bytes(), "audio/ogg")}
            )
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]
        status = service.wait_for_job(job_id, timeout=60.0)
        assert status["state"] == "done", status
        assert word_error_rate(SENTENCES[1], status["text"]) <= 0.15, status["text"]
        assert status["language"] == "en"
        [(words, language, operation_id)] = service.query(
            "SELECT words, language, operation_id FROM jobs WHERE id = ?", (job_id,)
        )
    timings = json.loads(words)
    assert len(timings) >= 8
    assert language == "en"
    assert operation_id.startswith("whisper-")


def test_a_process_that_recognizes_nothing_never_looks_for_the_model(tmp_path: Path) -> None:
    """An API-only serve (no recognize loop) on Whisper starts without any model on disk."""
    config = {
        "recognizer": {"kind": "whisper"},
        "whisper": {"model": str(tmp_path / "no-such-model")},
        "workers": {"convert": 0, "recognize": 0, "check": 0},
    }
    with (
        running_service(tmp_path / "run", config=config, env=OFFLINE) as service,
        service.client() as client,
    ):
        assert client.get("/health").status_code == 200
    code, stderr = start_failing(
        tmp_path / "again", config={**config, "workers": {"recognize": 1}}, env=OFFLINE
    )
    assert code == 2
    assert "[whisper] model" in stderr


@pytest.mark.timeout(180)
def test_shutdown_stops_a_long_recognition_within_hard_seconds(tmp_path: Path) -> None:
    """SIGTERM during a 10-minute recognition exits within hard_seconds; the job waits, unharmed."""
    long = story_repeated(600)
    # Far below the recognition itself (tiny.en: 45 s or more for 10 minutes), with room
    # for a loaded machine to close the database and the HTTP server.
    hard = 15.0
    config = {**whisper(), "shutdown": {"grace_seconds": 1, "hard_seconds": hard}}
    with running_service(tmp_path / "run", config=config, env=OFFLINE) as service:
        with service.client() as client:
            response = client.post(
                "/api/audio", files={"file": ("long.ogg", long.read_bytes(), "audio/ogg")}
            )
        assert response.status_code == 202, response.text
        job_id = response.json()["job_id"]
        service.wait_for_log("event=step.start", f"job_id={job_id}", "state=recognize", timeout=60)
        signalled = time.monotonic()
        code = service.stop(timeout=hard + 10)
        took = time.monotonic() - signalled
        [(state, attempts, text)] = service.query(
            "SELECT state, attempts, text FROM jobs WHERE id = ?", (job_id,)
        )
    assert code == 0, service.logs()
    assert took <= hard, f"exited {took:.1f} s after SIGTERM:\n{service.logs()}"
    # Nothing judged the recording: after a restart it is recognised again (reference: Recognizers).
    assert (state, text) == ("recognize", None)
    assert attempts <= 1


def _closed_port(stack: contextlib.ExitStack) -> int:
    """A port that refuses connections while ``stack`` is open: bound here, never listening.

    Closed at once, it could be taken (and answer) before the service tries it.
    """
    held = stack.enter_context(socket.socket())
    held.bind(("127.0.0.1", 0))
    return int(held.getsockname()[1])


@pytest.mark.parametrize(
    ("model", "env", "named"),
    [
        ("/nonexistent/whisper-model", OFFLINE, "[whisper] model: no such directory"),
        ("HERE-EMPTY", OFFLINE, "not a converted Whisper model (missing model.bin"),
        ("base", OFFLINE, "HF_HUB_OFFLINE is set"),
        ("base", {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "CLOSED"}, "hub cannot be reached"),
    ],
    ids=["missing-dir", "not-a-model", "name-offline", "name-no-network"],
)
def test_model_that_cannot_load_stops_startup(
    tmp_path: Path, model: str, env: dict[str, str], named: str
) -> None:
    """A model that is not on disk, or not a model, stops startup naming [whisper] model."""
    if model == "HERE-EMPTY":
        model = str(tmp_path / "empty-model")
        Path(model).mkdir()
    env = {**env, "HF_HOME": str(tmp_path / "hf-home")}  # an empty model cache
    with contextlib.ExitStack() as stack:
        if env.get("HF_ENDPOINT") == "CLOSED":
            env["HF_ENDPOINT"] = f"http://127.0.0.1:{_closed_port(stack)}"
        # A hang is start_failing's REFUSE_TIMEOUT; how fast a loaded box imports is no claim.
        code, stderr = start_failing(tmp_path / "run", config=whisper(model=model), env=env)
    assert code == 2, stderr
    assert "[whisper] model" in stderr
    assert named in stderr
    assert "Traceback" not in stderr


def test_missing_extra_names_what_to_install(tmp_path: Path) -> None:
    """Without faster-whisper installed, kind = "whisper" stops startup with the pip command."""
    stub = tmp_path / "no-extra" / "faster_whisper"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('not installed')\n")
    import os  # noqa: PLC0415 - only this test extends the child's path

    path = os.pathsep.join([str(stub.parent), os.environ.get("PYTHONPATH", "")])
    code, stderr = start_failing(
        tmp_path / "run", config=whisper(), env={**OFFLINE, "PYTHONPATH": path}
    )
    assert code == 2, stderr
    assert "[recognizer] kind" in stderr
    assert "pip install 'selfhosted-transcriber[whisper]'" in stderr
