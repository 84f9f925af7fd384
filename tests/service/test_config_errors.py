"""A config the service cannot use stops ``transcriber serve`` at once: exit 2, the key named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.service import start_failing

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
    ],
    ids=[
        "unknown-key",
        "unknown-section",
        "bad-type",
        "bad-value",
        "bad-timeout",
        "bad-env",
        "toml",
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
