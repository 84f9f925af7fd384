"""The one composition root: reads the config once and builds every part of the service."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import secrets
import wave
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from transcriber_adapters.datadir import STAGING_NAME, DataDirLock, sweep_staging
from transcriber_adapters.datadir import claim as claim_data_dir
from transcriber_adapters.ffmpeg import OPUS, PCM, FfmpegConverter
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.media_header import HeaderProbe
from transcriber_adapters.memory import MemoryFetcher, MemoryRecognizer, Served
from transcriber_adapters.sqlite import (
    SqliteBudgetStore,
    SqliteChatStore,
    SqliteConditionStore,
    SqliteDatabase,
    SqliteJobRepository,
    SqliteLoginThrottle,
    SqlitePeopleStore,
    SqliteSummaryStore,
    SqliteUsageStore,
    SqliteVoiceStore,
)
from transcriber_adapters.system import RandomIds, SystemClock, free_bytes, host_name
from transcriber_app.conditions import DiskSpace
from transcriber_app.config import Config, ConfigError, usable_cpus
from transcriber_app.extras import is_installed, require_for
from transcriber_core.entities import Job, Location, State
from transcriber_core.policy import DecodeLimits, Settings, general_loops
from transcriber_core.ports import (
    BudgetStore,
    ChatLinks,
    ChatStore,
    Clock,
    ConditionStore,
    Converter,
    Diarizer,
    Event,
    FetchLimits,
    FileStore,
    IdSource,
    JobRepository,
    LanguageModel,
    LoginThrottle,
    MediaFetcher,
    Notifier,
    PeopleStore,
    Recognizer,
    Standing,
    SummaryStore,
    UsageStore,
    VoiceStore,
    WakeupFeed,
    WebhookSender,
)
from transcriber_core.services import Services
from transcriber_core.summaries import Summary
from transcriber_core.worker import Workers

if TYPE_CHECKING:
    from aiogram import Bot

    from transcriber_adapters.s3 import S3FileStore
    from transcriber_adapters.whisper import WhisperRecognizer
    from transcriber_app.bot import BotPolling, BotWebhook

log = logging.getLogger("transcriber.app")

#: The SQLite file inside the data dir.
DATABASE_NAME = "transcriber.db"
#: The folder of local files inside the data dir.
FILES_DIR = "files"
#: The staging folder inside the data dir: one folder per process for uploads, downloads
#: and converter output (ADR 21, 38).
STAGING_DIR = STAGING_NAME
#: Half-written files untouched this long were left by a killed process (ADR 5), when this
#: process is alone on the data dir: any age will do, nobody else is writing one (ADR 21).
STALE_PARTIAL_AGE = timedelta(0)
#: ... and when other processes share the data dir (ADR 38): theirs are written to now.
SHARED_STALE_PARTIAL_AGE = timedelta(hours=1)


class SilentNotifier:
    """The notifier when no bot is configured: no origin can be reached."""

    async def notify(
        self, job: Job, event: Event, *, standing: Standing | None = None
    ) -> int | None:
        """Tell nobody."""
        return None

    async def send_summary(self, job: Job, summary: Summary) -> None:
        """Send nobody a summary."""


@attrs.define
class Runtime:
    """Everything a running service holds, built by ``build`` and closed by ``close``."""

    config: Config
    services: Services
    workers: Workers
    #: The sign-in's back-off per client (ADR 17).
    logins: LoginThrottle
    #: The people and the owner, their invites, tokens and sessions (ADR 55, ADR 76).
    people: PeopleStore
    #: The data dir's free space, which uploads and ``/health`` look at.
    space: DiskSpace
    #: The Telegram intake (polling, or webhook mode's ``POST /telegram/webhook``); None when
    #: no token is configured, and in a worker (notices only).
    bot: BotPolling | BotWebhook | None = None
    #: Request budgets shared through the database (ADR 29), for ``/metrics``.
    budgets: BudgetStore | None = None
    _closers: list[Callable[[], Awaitable[None]]] = attrs.field(factory=list)

    async def close(self) -> None:
        """Close what ``build`` opened, newest first."""
        while self._closers:
            closer = self._closers.pop()
            try:
                await closer()
            except Exception as exc:  # noqa: BLE001 - close the rest regardless
                log.warning("close.error", extra={"error_type": type(exc).__name__})


def settings_from(config: Config) -> Settings:
    """The core's settings table with the values the config may change."""
    queue = config.queue
    return Settings(
        max_record_bytes=config.storage.max_record_bytes,
        upload_inactivity_timeout=timedelta(seconds=config.http.upload_inactivity_seconds),
        upload_deadline=timedelta(seconds=config.http.upload_deadline_seconds),
        max_attempts=queue.max_attempts,
        lease=timedelta(seconds=queue.lease_seconds),
        lease_renewal=timedelta(seconds=queue.lease_renewal_seconds),
        idle_poll_interval=timedelta(seconds=queue.idle_poll_seconds),
        condition_pause=timedelta(seconds=queue.condition_pause_seconds),
        # A condition still holding is seen again at every pause: age out well after it.
        condition_max_age=max(
            Settings().condition_max_age, 4 * timedelta(seconds=queue.condition_pause_seconds)
        ),
        express_bytes=config.workers.express_bytes,
        express_duration=timedelta(seconds=config.workers.express_seconds),
        recordings_kept=timedelta(days=config.retention.recordings_days),
        seconds_per_day=config.quotas.seconds_per_day,
        voice_match=config.diarization.voice_match,
        jobs_kept=timedelta(days=config.retention.jobs_days),
        sweep_interval=timedelta(seconds=config.retention.sweep_seconds),
        auto_summary=config.llm is not None and config.llm.auto_summary,
    )


def concurrency_from(config: Config) -> dict[State, int]:
    """Loops per step state from ``[workers]`` (ADR 27); 0 runs none of that step here."""
    workers = config.workers
    return {
        State.FETCH: workers.fetch,
        State.CONVERT: workers.convert,
        State.RECOGNIZE: workers.recognize,
        State.CHECK: workers.check,
    }


def decode_limits_from(config: Config) -> DecodeLimits:
    """How much audio one recording may decode to, from ``[storage]``."""
    storage = config.storage
    try:
        longest = timedelta(seconds=storage.max_duration_seconds)
    except OverflowError:
        raise ConfigError("[storage] max_duration_seconds: too large") from None
    return DecodeLimits(max_duration=longest, min_bytes_per_second=storage.min_bytes_per_second)


async def build(
    config: Config,
    *,
    clock: Clock | None = None,
    ids: IdSource | None = None,
    settings: Settings | None = None,
    converter: Converter | None = None,
    recognizer: Recognizer | None = None,
    recognizer_files: FileStore | None = None,
    diarizer: Diarizer | None = None,
    notifier: Notifier | None = None,
    fetcher: MediaFetcher | None = None,
    host: str | None = None,
    wakeup_feed: WakeupFeed | None = None,
    intake: bool = True,
    language_model: LanguageModel | None = None,
) -> Runtime:
    """Open the database, stores and clients the config names; a dependency given replaces its own.

    Raises ``MissingExtra`` when the config turns on a feature whose extra
    is not installed, before it touches the data dir.

    ``intake`` is ``serve``: it holds the data dir's one intake lock and
    polls the bot. Without it (``transcriber worker``) the data dir is
    shared with ``serve`` and other workers, and a configured bot only
    sends notices (ADR 38).

    Each keyword left at None is built from ``config``. ``recognizer_files``
    goes with ``recognizer``: with a recognizer given, the config's Object
    Storage is not opened, and None means the recognizer reads the file
    store itself. Tests pass e.g. ``recognizer=MemoryRecognizer(...)`` or
    ``settings=Settings(...)``. ``wakeup_feed`` (None: none) carries other
    processes' wake-ups to this one's workers (ADR 31; on PostgreSQL, the
    database's ``LISTEN`` feed). ``clock`` stamps what the app stamps; on
    SQLite it is also the stores' own clock, by which they judge leases and
    delays (ADR 30), while on PostgreSQL they judge by the database server's
    clock, the one every host shares (ADR 39). ``language_model`` replaces the
    ``[llm]`` server's client (summaries and questions are on with either).
    """
    # Before anything is opened: a feature whose extra is missing stops here.
    require_for(config)
    lock = _claim(config, intake=intake)
    closers: list[Callable[[], Awaitable[None]]] = [_releaser(lock)]
    try:
        await _clear_staging(lock)
        clock = clock or SystemClock()
        settings = settings or settings_from(config)
        stores = await _stores(config, settings=settings, clock=clock, closers=closers)
        files = await _file_store(config, closers, lock)
        # Every leftover a lone start may remove is gone: other processes may join (ADR 38).
        lock.share()
        if recognizer is None:
            recognizer, recognizer_files = await _recognizer(
                config, closers, files, stores.budgets, staging_dir=lock.staging
            )
        bot = _bot(config, closers)
        if language_model is None:
            language_model = _language_model(config, closers)
        this_host = host_name() if host is None else host
        services = Services(
            repo=stores.repo,
            files=files,
            converter=converter
            or FfmpegConverter(
                limits=decode_limits_from(config),
                # A local recognizer hears the source's samples, not a lossy copy (ADR 42).
                output=PCM if config.recognizer.kind == "whisper" else OPUS,
            ),
            recognizer=recognizer,
            recognizer_files=recognizer_files,
            diarizer=diarizer or _diarizer(config),
            conditions=stores.conditions,
            usage=stores.usage,
            voices=stores.voices,
            language_model=language_model,
            summaries=stores.summaries if language_model is not None else None,
            probe=HeaderProbe(),
            # Counts what a quota charges in decoded samples, whatever the container (ADR 67).
            meter=FfmpegConverter(limits=decode_limits_from(config)),
            host=this_host,
            # Two worker processes on one host are told apart by their process id.
            worker=f"{this_host}:{os.getpid()}",
            notifier=(
                _notifier(bot, stores.budgets, summaries=language_model is not None)
                if notifier is None
                else notifier
            ),
            webhooks=_webhooks(config, clock, closers),
            fetcher=_fetcher(config) if fetcher is None else fetcher,
            fetch_limits=fetch_limits_from(config),
            clock=clock,
            ids=ids or RandomIds(),
            settings=settings,
            wakeup_feed=wakeup_feed or stores.wakeup_feed,
        )
    except BaseException:
        for closer in reversed(closers):
            await closer()
        raise
    space = disk_space(config)
    return Runtime(
        config=config,
        services=services,
        workers=Workers(services, concurrency_from(config), deliveries=config.workers.deliver),
        logins=stores.logins,
        people=stores.people,
        space=space,
        bot=(
            _polling(config, services, bot, space=space, chats=stores.chats, links=stores.people)
            if intake
            else None
        ),
        budgets=stores.budgets,
        closers=closers,
    )


def disk_space(config: Config) -> DiskSpace:
    """The data dir's free space against ``[storage] min_free_bytes``, by one ``statvfs``."""
    storage = config.storage
    return DiskSpace(
        data_dir=storage.data_dir, min_free_bytes=storage.min_free_bytes, free_bytes=free_bytes
    )


def _claim(config: Config, *, intake: bool) -> DataDirLock:
    """Lock the data dir: a second serve on it stops here, having touched nothing.

    On PostgreSQL with Object Storage nothing is shared through the data dir:
    it only holds this process's staging folder, so serve takes no intake
    lock (ADR 39).
    """
    lock = claim_data_dir(
        config.storage.data_dir, intake=intake and not _shares_nothing_locally(config)
    )
    if lock.tightened:
        log.warning("data_dir.tightened", extra={"mode": f"{lock.previous_mode:o}"})
    return lock


async def _clear_staging(lock: DataDirLock) -> None:
    """Remove what killed processes left in the staging folder."""
    cleared = await asyncio.to_thread(sweep_staging, lock)
    if cleared:
        log.info("files.staging_removed", extra={"count": cleared})


async def _stores(
    config: Config,
    *,
    settings: Settings,
    clock: Clock,
    closers: list[Callable[[], Awaitable[None]]],
) -> _Stores:
    """The stores on the configured database: PostgreSQL's, or SQLite's in the data dir."""
    if config.database.is_postgres:
        return await _postgres_stores(config, settings, closers)
    return await _sqlite_stores(config.storage.data_dir / DATABASE_NAME, clock, closers)


def _notifier(bot: Bot | None, budgets: BudgetStore, *, summaries: bool) -> Notifier:
    """Telegram's notifier with a bot; without one, nobody can be told."""
    return SilentNotifier() if bot is None else _telegram_notifier(bot, budgets, summaries)


def _polling(
    config: Config,
    services: Services,
    bot: Bot | None,
    *,
    space: DiskSpace,
    chats: ChatStore,
    links: ChatLinks,
) -> BotPolling | BotWebhook | None:
    """The Telegram intake of ``serve`` in the configured mode; None without a bot."""
    if bot is None:
        return None
    from transcriber_adapters.telegram import download_limit  # noqa: PLC0415 - see _bot
    from transcriber_app.bot import BotPolling, BotWebhook, make_dispatcher  # noqa: PLC0415

    telegram = config.telegram
    dispatcher = make_dispatcher(
        services,
        chats=chats,
        max_file_bytes=download_limit(telegram.api_base),
        allowed_chat_ids=telegram.allowed_chat_ids,
        short_of_space=space.is_short,
        links=links,
    )
    if telegram.mode == "webhook":
        return BotWebhook(bot, dispatcher, url=telegram.webhook_url, secret=telegram.webhook_secret)
    if not _shares_nothing_locally(config):
        # The data dir's intake lock already lets one serve run: it polls, no lease needed,
        # and a restart after a crash polls at once.
        return BotPolling(bot, dispatcher)
    # Unique to this process: the lease tells pollers apart, never trusts a name twice.
    holder = f"{services.host}:{os.getpid()}:{secrets.token_hex(4)}"
    return BotPolling(bot, dispatcher, chats=chats, holder=holder)


@attrs.frozen(kw_only=True)
class _Stores:
    """The stores on the configured database, one object per port."""

    repo: JobRepository
    logins: LoginThrottle
    people: PeopleStore
    conditions: ConditionStore
    budgets: BudgetStore
    #: Seconds sent per payer per day (ADR 59).
    usage: UsageStore
    #: Each owner's remembered voices (ADR 72).
    voices: VoiceStore
    #: The Telegram poller's lease and each chat's settings (ADR 53).
    chats: ChatStore
    #: Each recording's summary as a unit of work (ADR 83).
    summaries: SummaryStore
    #: Other processes' wake-ups: the database's LISTEN feed, or None on SQLite.
    wakeup_feed: WakeupFeed | None = None


async def _sqlite_stores(
    path: Path, clock: Clock, closers: list[Callable[[], Awaitable[None]]]
) -> _Stores:
    """Every store on one connection to the SQLite file ``path``, judging by ``clock``."""
    database = await SqliteDatabase.open(path, clock=clock)
    closers.append(database.close)
    return _Stores(
        repo=SqliteJobRepository(database, clock=clock),
        logins=SqliteLoginThrottle(database, clock=clock),
        people=SqlitePeopleStore(database, clock=clock),
        conditions=SqliteConditionStore(database, clock=clock),
        budgets=SqliteBudgetStore(database, clock=clock),
        usage=SqliteUsageStore(database, clock=clock),
        voices=SqliteVoiceStore(database, clock=clock),
        chats=SqliteChatStore(database, clock=clock),
        summaries=SqliteSummaryStore(database, clock=clock),
    )


async def _postgres_stores(
    config: Config, settings: Settings, closers: list[Callable[[], Awaitable[None]]]
) -> _Stores:
    """Every store on one pool to ``[database] url``, on the database's clock (ADR 39)."""
    from transcriber_adapters import postgres  # noqa: PLC0415 - an optional extra

    url = config.database.url
    database = await postgres.Database.open(url, pool_size=config.database.pool_size)
    closers.append(database.close)
    if database.applied_migrations:
        log.info(
            "database.migrated", extra={"versions": ",".join(map(str, database.applied_migrations))}
        )
    return _Stores(
        repo=postgres.PostgresJobRepository(database),
        logins=postgres.PostgresLoginThrottle(database),
        people=postgres.PostgresPeopleStore(database),
        conditions=postgres.PostgresConditionStore(database),
        budgets=postgres.PostgresBudgetStore(database),
        usage=postgres.PostgresUsageStore(database),
        voices=postgres.PostgresVoiceStore(database),
        chats=postgres.PostgresChatStore(database),
        summaries=postgres.PostgresSummaryStore(database),
        wakeup_feed=postgres.PostgresWakeupFeed(url, settings=settings),
    )


def _language_model(
    config: Config, closers: list[Callable[[], Awaitable[None]]]
) -> LanguageModel | None:
    """The ``[llm]`` server's client; None without ``[llm]`` (summaries and questions off)."""
    llm = config.llm
    if llm is None:
        return None
    from transcriber_adapters.chat_model import OpenAIChatModel  # noqa: PLC0415 - the llm extra

    model = OpenAIChatModel(
        base_url=llm.base_url,
        model=llm.model,
        api_key=llm.api_key,
        max_input_tokens=llm.max_input_tokens,
        timeout_seconds=llm.timeout_seconds,
    )
    closers.append(model.close)
    return model


def _shares_nothing_locally(config: Config) -> bool:
    """True when jobs and files live off this host: PostgreSQL and Object Storage (ADR 39).

    Then any number of ``serve`` and ``worker`` processes may run, on any
    hosts; the data dir holds only each process's own staging folder.
    """
    return config.database.is_postgres and config.storage.files == "s3"


async def _file_store(
    config: Config, closers: list[Callable[[], Awaitable[None]]], lock: DataDirLock
) -> FileStore:
    """The store of recordings and derived files that ``[storage] files`` names (ADR 33).

    Both stage in this process's own folder in ``<data_dir>/tmp`` (ADR 38).
    The local one first removes half-written files a killed process left:
    of any age when this process is alone on the data dir, else only those
    untouched for ``SHARED_STALE_PARTIAL_AGE``.
    """
    if config.storage.files == "s3":
        store = _s3_store(config, lock.staging)
        closers.append(store.close)
        return store
    local = FilesystemFileStore(config.storage.data_dir / FILES_DIR, staging_dir=lock.staging)
    age = STALE_PARTIAL_AGE if lock.alone else SHARED_STALE_PARTIAL_AGE
    stale = await local.remove_stale_partials(older_than=age)
    if stale:
        log.info("files.stale_partials_removed", extra={"count": stale})
    return local


def _s3_store(config: Config, staging_dir: Path) -> S3FileStore:
    """A store on the bucket of ``[s3]``, staging in ``staging_dir``."""
    # aioboto3 costs ~40 MiB to import: only a service that uses Object Storage pays for it.
    from transcriber_adapters.s3 import S3FileStore  # noqa: PLC0415

    s3 = config.s3
    return S3FileStore(
        endpoint_url=s3.endpoint_url,
        region=s3.region,
        bucket=s3.bucket,
        access_key_id=s3.access_key_id,
        secret_access_key=s3.secret_access_key,
        path_style=s3.path_style,
        staging_dir=staging_dir,
    )


def _releaser(lock: DataDirLock) -> Callable[[], Awaitable[None]]:
    """A closer that releases the data dir's locks and staging folder (the last thing closed)."""

    async def release() -> None:
        lock.release()

    return release


def _bot(config: Config, closers: list[Callable[[], Awaitable[None]]]) -> Bot | None:
    """The Telegram bot the config names, or None without a token."""
    telegram = config.telegram
    if not telegram.token:
        return None
    # aiogram costs ~150 MiB and 3 s to import: only a service with a bot pays for it.
    from transcriber_adapters.telegram import make_bot  # noqa: PLC0415

    try:
        bot = make_bot(telegram.token, telegram.api_base)
    except ValueError:
        raise ConfigError("[telegram] token: not a bot token (expected <id>:<secret>)") from None
    closers.append(bot.session.close)
    return bot


def _webhooks(
    config: Config, clock: Clock, closers: list[Callable[[], Awaitable[None]]]
) -> WebhookSender | None:
    """The webhook sender when ``[webhooks] secret`` is set (ADR 35); None refuses callbacks."""
    settings = config.webhooks
    if not settings.secret:
        return None
    from transcriber_adapters.webhooks import AiohttpWebhookSender  # noqa: PLC0415 - server extra

    sender = AiohttpWebhookSender(
        secret=settings.secret,
        clock=clock,
        allow_private=settings.allow_private,
        timeout=settings.timeout_seconds,
    )
    closers.append(sender.close)
    return sender


def fetch_limits_from(config: Config) -> FetchLimits:
    """What one link may bring in: ``[import] max_bytes`` and §17's duration limit."""
    return FetchLimits(
        max_bytes=config.import_.max_bytes, max_seconds=config.storage.max_duration_seconds
    )


def _silence_wav(seconds: int) -> bytes:
    """A WAV file of ``seconds`` of 16 kHz mono silence: real audio for ffmpeg, made here."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16_000)
        out.writeframes(b"\0\0" * 16_000 * seconds)
    return buffer.getvalue()


#: What the demo's fetcher brings in for any link: 3 s of silence (no network is reached).
DEMO_LINK = Served(data=_silence_wav(3), title="A recording from a link", extension=".wav")


def _fetcher(config: Config) -> MediaFetcher | None:
    """The fetcher of links (SPEC §28): yt-dlp behind the address guard, when installed.

    Without the ``links`` extra, the memory recognizer's demo serves every
    link a stand-in recording (no network); any other service refuses links
    at intake (``links_disabled``).
    """
    if is_installed("links"):
        from transcriber_adapters.fetching import YtDlpFetcher  # noqa: PLC0415 - the extra's

        return YtDlpFetcher(allow_private=config.import_.allow_private)
    if config.recognizer.kind == "memory":
        return MemoryFetcher(default=DEMO_LINK)
    return None


def _telegram_notifier(bot: Bot, budgets: BudgetStore, summaries: bool) -> Notifier:
    from transcriber_adapters.telegram import TelegramNotifier  # noqa: PLC0415 - see _bot

    # Each chat's status edits are paced through the database's budgets (ADR 51); a Summary
    # button goes under each transcript with ``[llm]`` (ADR 92).
    return TelegramNotifier(bot, budgets=budgets, summaries=summaries)


def _diarizer(config: Config) -> Diarizer | None:
    """The offline diarizer when its extra is installed; None: speakers are refused (ADR 45).

    Its speaker encoder is converted once into the model cache (ADR 69).
    """
    if not is_installed("diarization"):
        return None
    from transcriber_adapters.diarization import OfflineDiarizer  # noqa: PLC0415 - the extra's

    return OfflineDiarizer(models=models_dir(config))


async def _recognizer(
    config: Config,
    closers: list[Callable[[], Awaitable[None]]],
    files: FileStore,
    budgets: BudgetStore,
    *,
    staging_dir: Path,
) -> tuple[Recognizer, FileStore | None]:
    """The recognizer the config names, and the Object Storage it reads copies from.

    None for the second: the recognizer reads ``files`` itself (a local
    recognizer, or files already on the bucket it reads).
    """
    if config.recognizer.kind == "whisper":
        local = await _whisper(config, files)
        closers.append(local.close)
        return local, None
    if config.recognizer.kind == "memory":
        memory = config.memory
        demo = MemoryRecognizer(
            checks_before_done=memory.checks_before_done,
            text=memory.text or None,
            fail_with=memory.fail_with or None,
            max_seconds=memory.max_seconds or None,
            work_seconds=memory.work_seconds,
            speakers=memory.speakers,
        )
        return demo, None
    from transcriber_adapters.yandex import YandexRecognizer  # noqa: PLC0415

    copies: FileStore | None = None
    if files.location is not Location.S3:
        store = _s3_store(config, staging_dir)
        closers.append(store.close)
        copies = store
    # Otherwise the files already live on the [s3] bucket SpeechKit reads: it is handed
    # the stored object itself, and no copy is made or deleted (ADR 33).
    yandex = config.yandex
    recognizer = YandexRecognizer(
        api_key=yandex.api_key,
        bucket=config.s3.bucket,
        storage_url=config.s3.endpoint_url,
        async_api=yandex.async_api,
        v3_url=yandex.v3_url,
        stt_url=yandex.stt_url,
        operation_url=yandex.operation_url,
        language=yandex.language,
        model=yandex.model,
        checks_per_hour=yandex.checks_per_hour,
        max_seconds=yandex.max_seconds,
        # Short clips go to the sync API straight from the file store (ADR 29).
        sync_url=yandex.sync_url,
        sync_max_seconds=yandex.sync_max_seconds,
        files=files,
        starts_per_hour=yandex.starts_per_hour,
        sync_per_second=yandex.sync_per_second,
        budgets=budgets,
    )
    closers.append(recognizer.close)
    return recognizer, copies


@contextlib.asynccontextmanager
async def people_store(config: Config) -> AsyncIterator[PeopleStore]:
    """The people store alone, for a command beside a running service (``owner reset-password``).

    Nothing else is built: no lock, no recognizer, no files. A database that
    does not exist yet stops with a ``ConfigError`` saying so.
    """
    closers: list[Callable[[], Awaitable[None]]] = []
    try:
        if config.database.is_postgres:
            stores = await _postgres_stores(config, settings_from(config), closers)
            people = stores.people
        else:
            path = config.storage.data_dir / DATABASE_NAME
            if not path.is_file():
                raise ConfigError(
                    f"[storage] data_dir: no database in {config.storage.data_dir}; "
                    "start the service once first"
                )
            people = await SqlitePeopleStore.open(path, clock=SystemClock())
            closers.append(people.close)
        yield people
    finally:
        for close in reversed(closers):
            await close()


def models_dir(config: Config) -> Path:
    """The model cache ``transcriber models`` installs into and ``[whisper] model`` names read."""
    return Path(config.storage.data_dir) / "models"


async def _whisper(config: Config, files: FileStore) -> WhisperRecognizer:
    """Whisper on this machine (ADR 28): the model found on disk now, loaded at first use.

    A process that runs no recognize loop never loads it, so it does not
    look for it either (an API-only ``serve``, a convert-only worker).
    """
    from transcriber_adapters import whisper  # noqa: PLC0415 - an optional extra

    settings = config.whisper
    model_dir = Path(settings.model)
    try:
        if config.workers.recognize > 0:
            # May download a known model name once (blocking I/O): off the event loop.
            model_dir = await asyncio.to_thread(
                whisper.resolve_model, settings.model, cache=models_dir(config)
            )
        else:
            whisper.require_engine()
    except whisper.WhisperSetupError as exc:
        section = "recognizer" if exc.key == "kind" else "whisper"
        raise ConfigError(f"[{section}] {exc.key}: {exc}") from None
    at_once = max(1, config.workers.recognize)
    # The CPUs are shared among the loops that take any job; the express loop's voice
    # notes borrow one for seconds (ADR 89).
    sharing = max(1, general_loops(at_once))
    threads, cpus = whisper.cpu_threads(settings.threads, sharing), usable_cpus()
    log.info(
        "whisper.model",
        extra={"compute_type": settings.compute_type, "at_once": at_once, "threads": threads},
    )
    if sharing * threads > cpus:
        log.warning(
            "whisper.oversubscribed",
            extra={
                "note": f"[workers] recognize = {at_once} x [whisper] threads = {threads} "
                f"is more than the {cpus} CPUs here: recognitions slow each other down "
                "(ADR 49); lower one of them, or leave [whisper] threads = 0"
            },
        )
    return whisper.WhisperRecognizer(
        files,
        whisper.WhisperSettings(
            model_dir=model_dir,
            language=settings.language,
            compute_type=settings.compute_type,
            threads=threads,
            beam_size=settings.beam_size,
            batch_size=settings.batch_size,
            part_seconds=settings.part_seconds,
        ),
        # As many as this process runs recognize loops, sharing the CPUs (ADR 49).
        max_concurrent=at_once,
    )
