"""A config the service cannot use stops ``transcriber serve`` at once: exit 2, the key named."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.support import service as service_support
from tests.support.service import running_service, start_failing

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("config", "env", "raw", "named"),
    [
        ({"http": {"colour": "blue"}}, {}, "", "[http] colour: unknown key"),
        ({}, {}, "[nonsense]\nx = 1\n", "unknown section [nonsense]"),
        ({"http": {"port": "eighty"}}, {}, "", "[http] port"),
        ({"queue": {"max_attempts": 0}}, {}, "", "[queue] max_attempts"),
        ({"http": {"upload_inactivity_seconds": 0}}, {}, "", "[http] upload_inactivity_seconds"),
        (
            {},
            {"TRANSCRIBER_QUEUE_MAX_ATTEMPTS": "many"},
            "",
            "[queue] max_attempts (from TRANSCRIBER_QUEUE_MAX_ATTEMPTS)",
        ),
        ({}, {}, "[http\n", "not valid TOML"),
        ({"workers": {"convert": -1}}, {}, "", "[workers] convert: must not be negative"),
        ({}, {"TRANSCRIBER_WORKERS_EXPRESS_BYTES": "0"}, "", "[workers] express_bytes"),
        (
            {},
            {"TRANSCRIBER_WHISPER_MODLE": "base"},
            "",
            "TRANSCRIBER_WHISPER_MODLE: unknown environment variable (it names no config key); "
            "did you mean TRANSCRIBER_WHISPER_MODEL?",
        ),
    ],
    ids=[
        "unknown-key",
        "unknown-section",
        "bad-type",
        "bad-value",
        "bad-timeout",
        "bad-env",
        "toml",
        "negative-loops",
        "express-bytes",
        "unknown-env",
    ],
)
def test_broken_config_exits_2_naming_the_key(
    tmp_path: Path, config: dict[str, Any], env: dict[str, str], raw: str, named: str
) -> None:
    """Startup refuses a broken config with exit code 2 and a message naming the culprit."""
    code, stderr = start_failing(tmp_path, config=config, env=env, raw=raw)
    assert code == 2, stderr
    assert "config error" in stderr
    assert named in stderr
    assert not (tmp_path / "data").exists()


def test_malformed_bot_token_is_a_config_error(tmp_path: Path) -> None:
    """A token that cannot be a bot token stops startup naming [telegram] token, not echoing it."""
    code, stderr = start_failing(tmp_path, config={"telegram": {"token": "not-a-token-Zq9"}})
    assert code == 2
    assert "[telegram] token" in stderr
    assert "not-a-token-Zq9" not in stderr


def test_taken_port_fails_before_anything_starts(tmp_path: Path) -> None:
    """A port someone else holds stops startup with status 1, before any setup link is made."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, stderr = start_failing(tmp_path, config={"http": {"port": port}})
    assert code == 1
    assert "event=service.bind_failed" in stderr
    assert (
        f'note="port {port} on 127.0.0.1 is already in use by another program: stop it, '
        'or set [http] port (TRANSCRIBER_HTTP_PORT) to a free port"'
    ) in stderr
    assert "setup_link" not in stderr
    assert "Traceback" not in stderr


def test_a_port_taken_after_it_was_picked_is_picked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port another program takes between the tests' probe and the bind: started on another."""
    real = service_support.free_port
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        picks = iter([taken])
        monkeypatch.setattr(service_support, "free_port", lambda: next(picks, None) or real())
        with running_service(tmp_path) as service, service.client() as client:
            assert service.port != taken
            assert client.get("/health").status_code == 200
    first = (tmp_path / "stderr-1.log").read_text(encoding="utf-8")
    assert "event=service.bind_failed" in first
    assert f"port={taken}" in first
