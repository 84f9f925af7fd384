"""The composition root: each dependency given by keyword replaces the one built from config."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import attrs
import pytest

from transcriber_adapters.datadir import DataDirInUse
from transcriber_adapters.memory import ManualClock, MemoryNotifier, MemoryRecognizer
from transcriber_adapters.postgres import (
    Database,
    PostgresBudgetStore,
    PostgresConditionStore,
    PostgresJobRepository,
    PostgresLoginThrottle,
    PostgresPeopleStore,
    PostgresWakeupFeed,
)
from transcriber_app.bootstrap import DATABASE_NAME, build
from transcriber_app.config import (
    Config,
    DatabaseConfig,
    RecognizerConfig,
    S3Config,
    StorageConfig,
    YandexConfig,
)
from transcriber_contracts.job_repository import make_job
from transcriber_core.entities import Location, LoginFailures
from transcriber_core.policy import Settings


def yandex_config(data_dir: Path) -> Config:
    """A config whose recognizer is Yandex SpeechKit reading from an Object Storage bucket."""
    return Config(
        storage=StorageConfig(data_dir=data_dir),
        recognizer=RecognizerConfig(kind="yandex"),
        yandex=YandexConfig(api_key="key"),
        s3=S3Config(bucket="bucket", access_key_id="id", secret_access_key="secret"),
    )


async def test_a_recognizer_given_replaces_the_configs_and_its_object_storage(
    tmp_path: Path,
) -> None:
    """With a recognizer given, the config's Yandex and Object Storage clients are never made."""
    recognizer = MemoryRecognizer()
    runtime = await build(yandex_config(tmp_path / "data"), recognizer=recognizer)
    try:
        assert runtime.services.recognizer is recognizer
        assert runtime.services.recognizer_files is None
    finally:
        await runtime.close()


@pytest.mark.parametrize("files", ["local", "s3"])
async def test_files_pick_the_store_and_whether_speechkit_gets_copies(
    tmp_path: Path, files: str
) -> None:
    """files = "s3" stores on the bucket and SpeechKit reads it; "local" keeps a copy store."""
    config = attrs.evolve(
        yandex_config(tmp_path / "data"),
        storage=StorageConfig(data_dir=tmp_path / "data", files=files),
    )
    runtime = await build(config)
    try:
        services = runtime.services
        if files == "s3":
            assert services.files.location is Location.S3
            assert services.recognizer_files is None
            assert not (tmp_path / "data" / "files").exists()
        else:
            assert services.files.location is Location.LOCAL
            assert services.recognizer_files is not None
            assert services.recognizer_files.location is Location.S3
    finally:
        await runtime.close()


async def test_dependencies_given_are_the_ones_the_services_hold(tmp_path: Path) -> None:
    """Clock, settings, notifier and host given by keyword reach the services unchanged."""
    clock = ManualClock()
    settings = Settings(delivery_retry_cap=timedelta(seconds=7), retry_cap=timedelta(seconds=9))
    notifier = MemoryNotifier()
    config = Config(storage=StorageConfig(data_dir=tmp_path / "data"))
    runtime = await build(config, clock=clock, settings=settings, notifier=notifier, host="h1")
    try:
        services = runtime.services
        assert (services.clock, services.settings, services.notifier, services.host) == (
            clock,
            settings,
            notifier,
            "h1",
        )
    finally:
        await runtime.close()


async def test_an_unknown_dependency_is_refused_before_anything_opens(tmp_path: Path) -> None:
    """A misspelt keyword is a TypeError at the call, not a field silently ignored or half-set."""
    config = Config(storage=StorageConfig(data_dir=tmp_path / "data"))
    with pytest.raises(TypeError):
        await build(config, recognizor=MemoryRecognizer())  # type: ignore[call-arg]
    assert not (tmp_path / "data").exists()


def postgres_config(data_dir: Path, url: str, files: str = "local") -> Config:
    """A config on the PostgreSQL database at ``url``, files local or on a bucket."""
    return Config(
        storage=StorageConfig(data_dir=data_dir, files=files),
        database=DatabaseConfig(url=url, pool_size=2),
        s3=S3Config(bucket="bucket", access_key_id="id", secret_access_key="secret"),
    )


async def test_a_postgresql_url_puts_every_store_and_the_feed_on_it(
    tmp_path: Path, pg_database: Database, postgres_url: str
) -> None:
    """With [database] url, jobs, owner, people, conditions, budgets, wake-ups are PostgreSQL's."""
    runtime = await build(postgres_config(tmp_path / "data", postgres_url))
    try:
        services = runtime.services
        assert isinstance(services.repo, PostgresJobRepository)
        assert isinstance(services.conditions, PostgresConditionStore)
        assert isinstance(runtime.logins, PostgresLoginThrottle)
        assert isinstance(runtime.people, PostgresPeopleStore)
        assert isinstance(runtime.budgets, PostgresBudgetStore)
        assert isinstance(services.wakeup_feed, PostgresWakeupFeed)
        job, _ = await services.repo.create(make_job())
        assert await pg_database.fetchone("SELECT id FROM jobs") == (job.id,)
    finally:
        await runtime.close()
    assert not (tmp_path / "data" / DATABASE_NAME).exists()


async def test_serves_on_postgresql_and_object_storage_share_a_data_dir(
    tmp_path: Path, pg_database: Database, postgres_url: str
) -> None:
    """Nothing lives on the host with PostgreSQL and files = "s3": a second serve may start."""
    config = postgres_config(tmp_path / "data", postgres_url, files="s3")
    first = await build(config)
    try:
        second = await build(config)
        await second.close()
    finally:
        await first.close()


async def test_a_second_serve_on_postgresql_with_local_files_is_refused(
    tmp_path: Path, pg_database: Database, postgres_url: str
) -> None:
    """Local files pin the service to one host: one serve per data dir, as on SQLite."""
    config = postgres_config(tmp_path / "data", postgres_url)
    first = await build(config)
    try:
        with pytest.raises(DataDirInUse):
            await build(config)
        worker = await build(config, intake=False)
        await worker.close()
    finally:
        await first.close()


def sqlite_threads() -> set[threading.Thread]:
    """The SQLite connection threads this process runs now."""
    return {thread for thread in threading.enumerate() if thread.name == "transcriber-sqlite"}


async def test_the_sqlite_stores_share_one_connection_thread(tmp_path: Path) -> None:
    """Job, login, condition and budget stores on SQLite run on one connection, as on PostgreSQL."""
    before = sqlite_threads()
    runtime = await build(Config(storage=StorageConfig(data_dir=tmp_path / "data")))
    try:
        [thread] = sqlite_threads() - before
        # Each store works on it: a job, a login failure, a condition and a budget token.
        await runtime.services.jobs.create(make_job())
        failures = LoginFailures(client="c", count=1, last=make_job().created)
        assert await runtime.logins.save_login_failures(failures, previous=None)
        assert runtime.services.conditions is not None
        await runtime.services.conditions.report("disk_full", scope="here", message="m")
        assert runtime.budgets is not None
        assert await runtime.budgets.take("b", capacity=1, per=timedelta(seconds=1)) is None
    finally:
        await runtime.close()
    thread.join(timeout=10)
    assert not thread.is_alive(), "closing the runtime ends its connection thread"
