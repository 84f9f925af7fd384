"""Static conformance: each adapter assigned to its port, checked by mypy in CI (ADR 2)."""

from __future__ import annotations

from pathlib import Path

from transcriber_adapters.chat_model import OpenAIChatModel
from transcriber_adapters.diarization import OfflineDiarizer
from transcriber_adapters.fetching import YtDlpFetcher
from transcriber_adapters.ffmpeg import FfmpegConverter
from transcriber_adapters.filesystem import FilesystemFileStore
from transcriber_adapters.media_header import HeaderProbe
from transcriber_adapters.memory import (
    ManualClock,
    MemoryBudgetStore,
    MemoryChatStore,
    MemoryConditionStore,
    MemoryConverter,
    MemoryFetcher,
    MemoryFileStore,
    MemoryJobRepository,
    MemoryLanguageModel,
    MemoryLoginThrottle,
    MemoryNotifier,
    MemoryPeopleStore,
    MemoryRecognizer,
    MemorySummaryStore,
    MemoryUsageStore,
    MemoryVoiceStore,
    MemoryWakeupFeed,
)
from transcriber_adapters.memory.diarizer import MemoryDiarizer
from transcriber_adapters.postgres import (
    Database,
    PostgresBudgetStore,
    PostgresChatStore,
    PostgresConditionStore,
    PostgresJobRepository,
    PostgresLoginThrottle,
    PostgresPeopleStore,
    PostgresSummaryStore,
    PostgresUsageStore,
    PostgresVoiceStore,
    PostgresWakeupFeed,
)
from transcriber_adapters.s3 import S3FileStore
from transcriber_adapters.sqlite import (
    SqliteBudgetStore,
    SqliteChatStore,
    SqliteConditionStore,
    SqliteJobRepository,
    SqliteLoginThrottle,
    SqlitePeopleStore,
    SqliteSummaryStore,
    SqliteUsageStore,
    SqliteVoiceStore,
)
from transcriber_adapters.system import RandomIds, SystemClock
from transcriber_adapters.telegram import TelegramNotifier, make_bot
from transcriber_adapters.webhooks import AiohttpWebhookSender
from transcriber_adapters.whisper import WhisperRecognizer, WhisperSettings
from transcriber_adapters.yandex import YandexRecognizer
from transcriber_app.bot.intake import ChatDoor
from transcriber_app.web.intake import FormDoor
from transcriber_app.web.openai_api import OpenAIDoor
from transcriber_core.ports import (
    Accounts,
    BudgetStore,
    ChatStore,
    Clock,
    ConditionStore,
    Converter,
    Diarizer,
    Door,
    DurationMeter,
    DurationProbe,
    FileRecords,
    FileStore,
    IdSource,
    Invitations,
    JobQueue,
    JobRepository,
    Jobs,
    LanguageModel,
    Listings,
    LoginThrottle,
    MediaFetcher,
    Notifier,
    Outbox,
    PartQueue,
    PeopleStore,
    PersonSessions,
    PersonTokens,
    Recognizer,
    Removals,
    SummaryStore,
    TranscriptSearch,
    UsageStore,
    VoiceStore,
    WakeupFeed,
    WebhookSender,
)


def check(
    *,
    sqlite: SqliteJobRepository,
    sqlite_logins: SqliteLoginThrottle,
    root: Path,
    s3: S3FileStore,
    yandex: YandexRecognizer,
    sqlite_conditions: SqliteConditionStore,
    sqlite_budgets: SqliteBudgetStore,
    sqlite_chats: SqliteChatStore,
    sqlite_people: SqlitePeopleStore,
    sqlite_usage: SqliteUsageStore,
    sqlite_voices: SqliteVoiceStore,
    sqlite_summaries: SqliteSummaryStore,
    postgres: Database,
    form_door: FormDoor,
    openai_door: OpenAIDoor,
    chat_door: ChatDoor,
) -> None:
    """Never called: mypy reads the assignments."""
    memory = MemoryJobRepository()
    on_postgres = PostgresJobRepository(postgres)
    repos: list[JobRepository] = [memory, sqlite, on_postgres]
    # Each job repository plays every role of the job database (ADR 40).
    queues: list[JobQueue] = [memory, sqlite, on_postgres]
    part_queues: list[PartQueue] = [memory, sqlite, on_postgres]
    jobs: list[Jobs] = [memory, sqlite, on_postgres]
    records: list[FileRecords] = [memory, sqlite, on_postgres]
    outboxes: list[Outbox] = [memory, sqlite, on_postgres]
    removals: list[Removals] = [memory, sqlite, on_postgres]
    listings: list[Listings] = [memory, sqlite, on_postgres]
    searches: list[TranscriptSearch] = [memory, sqlite, on_postgres]
    local = FilesystemFileStore(root, staging_dir=root / "tmp")
    stores: list[FileStore] = [MemoryFileStore(), local, s3]
    converters: list[Converter] = [MemoryConverter(), FfmpegConverter()]
    whisper = WhisperRecognizer(local, WhisperSettings(model_dir=root))
    recognizers: list[Recognizer] = [MemoryRecognizer(), yandex, whisper]
    notifiers: list[Notifier] = [MemoryNotifier(), TelegramNotifier(make_bot("1:never-used"))]
    clocks: list[Clock] = [SystemClock(), ManualClock()]
    ids: list[IdSource] = [RandomIds()]
    logins: list[LoginThrottle] = [
        MemoryLoginThrottle(),
        sqlite_logins,
        PostgresLoginThrottle(postgres),
    ]
    conditions: list[ConditionStore] = [
        MemoryConditionStore(),
        sqlite_conditions,
        PostgresConditionStore(postgres),
    ]
    probes: list[DurationProbe] = [HeaderProbe()]
    meters: list[DurationMeter] = [FfmpegConverter()]
    postgres_budgets = PostgresBudgetStore(postgres)
    budgets: list[BudgetStore] = [MemoryBudgetStore(), sqlite_budgets, postgres_budgets]
    feeds: list[WakeupFeed] = [MemoryWakeupFeed(), PostgresWakeupFeed("postgresql:///never-used")]
    senders: list[WebhookSender] = [AiohttpWebhookSender(secret=root.name, clock=SystemClock())]
    chats: list[ChatStore] = [MemoryChatStore(), sqlite_chats, PostgresChatStore(postgres)]
    # The people store plays every role of the people's tables (ADR 55).
    memory_people, postgres_people = MemoryPeopleStore(), PostgresPeopleStore(postgres)
    people: list[PeopleStore] = [memory_people, sqlite_people, postgres_people]
    invitations: list[Invitations] = [memory_people, sqlite_people, postgres_people]
    accounts: list[Accounts] = [memory_people, sqlite_people, postgres_people]
    tokens: list[PersonTokens] = [memory_people, sqlite_people, postgres_people]
    sessions: list[PersonSessions] = [memory_people, sqlite_people, postgres_people]
    # Seconds sent per payer per day (ADR 59).
    usage: list[UsageStore] = [MemoryUsageStore(), sqlite_usage, PostgresUsageStore(postgres)]
    # Remembered voices (ADR 72) and the diarizers whose prints they keep.
    voices: list[VoiceStore] = [MemoryVoiceStore(), sqlite_voices, PostgresVoiceStore(postgres)]
    diarizers: list[Diarizer] = [MemoryDiarizer(), OfflineDiarizer()]
    # The doors of the one way in (ADR 74): app code, read by the core through its port.
    doors: list[Door] = [form_door, openai_door, chat_door]
    # Summaries as units of work (ADR 83) and the chat models that build them (ADR 82).
    summaries: list[SummaryStore] = [
        MemorySummaryStore(),
        sqlite_summaries,
        PostgresSummaryStore(postgres),
    ]
    models: list[LanguageModel] = [
        MemoryLanguageModel(),
        OpenAIChatModel(base_url="http://127.0.0.1:11434/v1", model="never-used"),
    ]
    # Links in (SPEC §28): yt-dlp behind the address guard (ADR 87, 88).
    fetchers: list[MediaFetcher] = [MemoryFetcher(), YtDlpFetcher()]
    del voices, diarizers, doors, summaries, models, fetchers
    del usage, chats, people, invitations, accounts, tokens, sessions
    del senders, feeds, budgets, probes, meters, conditions, logins, repos, stores, converters
    del recognizers, notifiers, clocks, ids
    del queues, part_queues, jobs, records, outboxes, removals, listings, searches
