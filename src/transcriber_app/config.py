"""The TOML configuration: sections, defaults, env overrides and checks (reference: Configuration).

Names are a contract. ``load_config`` reads the file (or nothing, for the
embedded default), applies ``TRANSCRIBER_<SECTION>_<KEY>`` environment
overrides, and refuses unknown keys and bad values with a message that names
the key, so a mistake stops startup instead of surfacing later.
"""

from __future__ import annotations

import difflib
import ipaddress
import keyword
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from transcriber_core.speakers import MAX_SPEAKERS, BadSpeakers, parse_wanted

ENV_PREFIX = "TRANSCRIBER_"


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key."""


@attrs.frozen(kw_only=True)
class StorageConfig:
    """Where the database and local files live."""

    #: Database and local files together.
    data_dir: Path = Path("data")
    #: Largest recording accepted, in bytes.
    max_record_bytes: int = 8 * 1024**3
    #: Longest decoded recording; conversion stops and the job fails past it.
    max_duration_seconds: float = 28_800.0
    #: A recording whose decoded duration is absurd for its size (fewer bytes per second) fails.
    min_bytes_per_second: float = 100.0
    #: Below this much free space intake answers 507 and steps wait instead of failing.
    min_free_bytes: int = 1024**3
    #: Where recordings and derived files live: "local" (``<data_dir>/files``) or "s3" (``[s3]``).
    files: str = "local"


#: Schemes of a PostgreSQL ``[database] url`` (libpq takes both).
POSTGRES_SCHEMES = ("postgresql", "postgres")


@attrs.frozen(kw_only=True)
class DatabaseConfig:
    """Which database holds the jobs, the owner, conditions and budgets (ADR 32)."""

    #: Empty: SQLite at ``<data_dir>/transcriber.db``; ``postgresql://user@host:port/db``:
    #: PostgreSQL. Never shown: it may hold a password.
    url: str = attrs.field(default="", repr=False)
    #: PostgreSQL connections this process keeps at most (the adapter's default pool size).
    pool_size: int = 10

    @property
    def is_postgres(self) -> bool:
        """True when the url names a PostgreSQL database."""
        return bool(self.url)


@attrs.frozen(kw_only=True)
class HttpConfig:
    """The HTTP API and admin panel listener."""

    host: str = "127.0.0.1"
    port: int = 8080
    #: Non-empty: ``Authorization: Bearer <token>`` required on ``/api/*``.
    api_tokens: tuple[str, ...] = ()
    #: An upload that sends no byte for this long is aborted (408).
    upload_inactivity_seconds: float = 300.0
    #: An upload whose body has not all arrived this long after it began is aborted (408).
    upload_deadline_seconds: float = 21_600.0
    #: Request headers larger than this are refused (431, or the connection is closed).
    max_header_bytes: int = 65_536
    #: A request whose headers are not complete within this long is dropped.
    header_timeout_seconds: float = 30.0
    #: Connections served at once; more are closed at accept.
    max_connections: int = 1000
    #: Proxies (addresses or networks) whose ``X-Forwarded-For`` gives the client address.
    forwarded_allow_ips: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class RecognizerConfig:
    """Which speech recognizer turns audio into text."""

    #: "memory" (demo), "yandex" (SpeechKit) or "whisper" (local, the ``whisper`` extra).
    kind: str = "memory"


@attrs.frozen(kw_only=True)
class MemoryConfig:
    """The demo recognizer (``[recognizer] kind = "memory"``): what it answers, and when."""

    #: The transcript of every recording; empty: a sentence naming the recording's duration.
    text: str = ""
    #: Status checks answered "not ready yet" before the transcript.
    checks_before_done: int = 0
    #: Non-empty: every recognition is rejected with this reason, so each job ends failed.
    fail_with: str = ""
    #: Longest audio one recognition takes, in seconds; longer recordings are split. 0: no limit.
    max_seconds: float = 0.0
    #: Seconds each recognition works in its start, then answers at once (as Whisper does);
    #: 0: the checks answer. Lets a demo or a test see parts recognised in parallel.
    work_seconds: float = 0.0
    #: Voices labelled, sentence by sentence, in a recording that asks for speakers (SPEC §25);
    #: 0: the demo labels none. Each has a print of its own, so voices can be remembered.
    speakers: int = 0


@attrs.frozen(kw_only=True)
class YandexConfig:
    """Yandex SpeechKit: async recognition (API v3 or v2), short clips sync (API v1; ADR 29)."""

    api_key: str = attrs.field(default="", repr=False)
    #: The async API: "v3" (speaker labels, language detection; ADR 54) or "v2".
    async_api: str = "v3"
    #: API v3's base URL: ``/recognizeFileAsync`` and ``/getRecognition`` under it.
    v3_url: str = "https://stt.api.cloud.yandex.net/stt/v3"
    #: API v2's start endpoint, used when ``async_api`` is "v2".
    stt_url: str = "https://transcribe.api.cloud.yandex.net/speech/stt/v2/longRunningRecognize"
    operation_url: str = "https://operation.api.cloud.yandex.net/operations"
    language: str = "ru-RU"
    model: str = "general"
    #: Status checks allowed per hour across the account.
    checks_per_hour: int = 2500
    #: Async recognitions started per hour across the account (SpeechKit's quota: 500).
    starts_per_hour: int = 500
    #: Sync recognitions per second across the account (SpeechKit's quota: 20).
    sync_per_second: int = 20
    #: The synchronous API (v1): clips of at most ``sync_max_seconds`` (and 1 MB) go there.
    sync_url: str = "https://stt.api.cloud.yandex.net/speech/v1/stt:recognize"
    #: 0 sends every recording async; at most the sync API's 30 seconds.
    sync_max_seconds: float = 30.0
    #: Longest part one recognition gets, in seconds: SpeechKit's 4 hours, or less.
    max_seconds: float = 14400.0


@attrs.frozen(kw_only=True)
class WhisperConfig:
    """Whisper on this machine's CPU, for ``[recognizer] kind = "whisper"`` (ADR 28)."""

    #: A model name faster-whisper knows ("tiny", "base", "small"...) or a converted model's dir.
    model: str = "base"
    #: ISO 639-1 code such as "en"; empty: detect each recording's language.
    language: str = ""
    #: CTranslate2 weight type on the CPU.
    compute_type: str = "int8"
    #: CPU threads of one recognition; 0 = the CPUs divided among the general
    #: ``[workers] recognize`` loops, the express loop not counted (ADR 49, 89).
    threads: int = 0
    #: Beam search width; 1 is greedy.
    beam_size: int = 5
    #: 0: the sequential decoder; N: the batched pipeline, N windows per model call (ADR 42).
    batch_size: int = 0
    #: Recordings longer than this are cut at silences into parts of about this many seconds,
    #: recognised in parallel by any worker (ADR 52); 0: never split.
    part_seconds: float = 600.0


#: The largest ``[whisper] batch_size``: 64 windows are 32 minutes of speech in memory at once.
MAX_BATCH_SIZE = 64
#: The weight types CTranslate2 runs on a CPU.
WHISPER_COMPUTE_TYPES = ("int8", "int8_float32", "int16", "float32", "default", "auto")


@attrs.frozen(kw_only=True)
class S3Config:
    """Object Storage: what the recognizer reads, and with ``files = "s3"`` every file."""

    endpoint_url: str = "https://storage.yandexcloud.net"
    region: str = "ru-central1"
    bucket: str = ""
    access_key_id: str = attrs.field(default="", repr=False)
    secret_access_key: str = attrs.field(default="", repr=False)
    #: Address buckets as ``endpoint/bucket`` instead of ``bucket.endpoint``.
    path_style: bool = False


@attrs.frozen(kw_only=True)
class TelegramConfig:
    """The Telegram bot; an empty token means no bot."""

    token: str = attrs.field(default="", repr=False)
    #: Local Bot API server URL; empty: the cloud one.
    api_base: str = ""
    #: Non-empty: only these chats may send recordings.
    allowed_chat_ids: tuple[int, ...] = ()
    #: How updates arrive: "polling" (getUpdates; one API process at a time polls) or
    #: "webhook" (Telegram posts them to ``/telegram/webhook`` of any API process).
    mode: str = "polling"
    #: Webhook mode: the public HTTPS URL of ``/telegram/webhook`` that ``setWebhook`` names.
    webhook_url: str = ""
    #: Webhook mode: what Telegram sends in ``X-Telegram-Bot-Api-Secret-Token``.
    webhook_secret: str = attrs.field(default="", repr=False)


@attrs.frozen(kw_only=True)
class QueueConfig:
    """Queue numbers of the settings table (docs/reference.md) that an operator may change."""

    #: Acquires a job may take before it is marked dead.
    max_attempts: int = 5
    #: How long a worker may stay silent before its job is handed out again.
    lease_seconds: float = 120.0
    #: How often a running step renews its lease; shorter than the lease.
    lease_renewal_seconds: float = 30.0
    #: Fallback poll of the queue when nothing woke the workers.
    idle_poll_seconds: float = 1.0
    #: How long a job waits when the service itself cannot work (disk full, keys refused).
    condition_pause_seconds: float = 30.0


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_convert_loops() -> int:
    """One convert loop per CPU this process may run on, plus the express lane's (SPEC §13)."""
    return usable_cpus() + 1


#: CPUs one Whisper recognition gets at most by default: CTranslate2 gains little past
#: four threads on one recording (ADR 49).
WHISPER_CPUS_PER_RECOGNITION = 4
#: General recognize loops Whisper gets at least by default: two parts of one long
#: recording run at once, one thread each on a 2-CPU box (ADR 89).
WHISPER_GENERAL_LOOPS = 2


def default_whisper_recognitions(cpus: int) -> int:
    """``[workers] recognize`` for Whisper when not set (ADR 49, 89).

    One general loop per 4 CPUs, at least two, so a long recording's parts
    use every CPU of a small box; and the express loop on top, so a voice
    note sent meanwhile starts at once.
    """
    return max(WHISPER_GENERAL_LOOPS, cpus // WHISPER_CPUS_PER_RECOGNITION) + 1


@attrs.frozen(kw_only=True)
class WorkersConfig:
    """How many loops of each step this process runs, and what rides the express lane (ADR 27)."""

    #: Convert loops; 0: this process does not convert.
    convert: int = attrs.field(factory=default_convert_loops)
    #: Recognize loops (upload and start); 0: none here.
    recognize: int = 4
    #: Check loops; 0: none here.
    check: int = 2
    #: Fetch loops (links' downloads, SPEC §28); 0: none here. Unset: 2 where this process
    #: converts, else 0 (an API-only process stays one that runs no step, ADR 38).
    fetch: int = attrs.field(
        default=attrs.Factory(lambda workers: 2 if workers.convert else 0, takes_self=True)
    )
    #: A recording of at most this many bytes may take the express lane.
    express_bytes: int = 20 * 1024**2
    #: ... and only when it lasts (or is not known to last more than) this long.
    express_seconds: float = 600.0
    #: Loops sending the outbox's webhooks and Telegram notices (ADR 35); 0: none here.
    deliver: int = 2


@attrs.frozen(kw_only=True)
class WebhooksConfig:
    """Calls to ``callback_url`` when a job ends (ADR 35)."""

    #: Signs every call (HMAC-SHA256); empty: a ``callback_url`` is refused.
    secret: str = attrs.field(default="", repr=False)
    #: Let callbacks reach loopback, private and link-local addresses.
    allow_private: bool = False
    #: A receiver that has not answered in this long is cut off, and tried again later.
    timeout_seconds: float = 10.0


@attrs.frozen(kw_only=True)
class RetentionConfig:
    """How long recordings and jobs are kept after a job ended (ADR 36)."""

    #: Days after a job ended that its recording and derived files are deleted.
    recordings_days: int = 7
    #: Days after a job ended that the job and its transcript are deleted; >= recordings_days.
    jobs_days: int = 30
    #: How often each process offers to sweep (one at a time sweeps); at most an hour.
    sweep_seconds: float = 1800.0


@attrs.frozen(kw_only=True)
class DiarizationConfig:
    """Who said what (SPEC §18, ADR 45): the offline diarizer and its default."""

    #: The ``speakers`` a recording gets when its sender names none: "off", "auto" or 1 to 10.
    default: str = "off"
    #: The cosine similarity from which a recording's speaker is taken for one of its owner's
    #: remembered voices (SPEC §25, ADR 72).
    voice_match: float = 0.5


@attrs.frozen(kw_only=True)
class OpenAIConfig:
    """The OpenAI-compatible ``/v1`` routes (ADR 46)."""

    #: How long an answer waits for its job before saying it is still running.
    wait_seconds: float = 3600.0


@attrs.frozen(kw_only=True)
class LlmConfig:
    """The OpenAI-compatible chat server summaries and questions go to (SPEC §27, ADR 82).

    No ``[llm]`` section: both are off. The transcript goes to ``base_url``
    and nowhere else.
    """

    #: The server's OpenAI API root, e.g. ``http://127.0.0.1:11434/v1`` (Ollama).
    base_url: str = ""
    #: Its bearer key; empty for servers that need none.
    api_key: str = attrs.field(default="", repr=False)
    #: The model's name as the server knows it.
    model: str = ""
    #: The most tokens one request may send (a conservative estimate); longer goes in pieces.
    max_input_tokens: int = 8000
    #: How long one request may take before it is tried again later.
    timeout_seconds: float = 120.0
    #: Summarise every recording once it is done.
    auto_summary: bool = False


@attrs.frozen(kw_only=True)
class QuotasConfig:
    """How much each payer may send (SPEC §20, ADR 59)."""

    #: Seconds of recordings per person (or Telegram user, or static token) per UTC day; 0: none.
    seconds_per_day: int = 0


#: ``[import] max_bytes`` by default: 2 GiB, an hours-long lecture's audio with room to spare.
DEFAULT_IMPORT_MAX_BYTES = 2 * 1024**3


@attrs.frozen(kw_only=True)
class ImportConfig:
    """Links taken in and fetched (SPEC §28, ADR 85)."""

    #: Largest file one link may bring in, declared or counted while it downloads.
    max_bytes: int = DEFAULT_IMPORT_MAX_BYTES
    #: Let a fetch reach loopback, private and link-local addresses (tests, trusted networks).
    allow_private: bool = False


@attrs.frozen(kw_only=True)
class WorkerConfig:
    """Where ``transcriber worker`` answers ``/health`` and ``/metrics`` (ADR 38)."""

    host: str = "127.0.0.1"
    port: int = 8081


@attrs.frozen(kw_only=True)
class ShutdownConfig:
    """How long a stopping service waits for running steps."""

    #: Let running steps finish this long.
    grace_seconds: float = 30.0
    #: Then cancel and exit within this long from the signal.
    hard_seconds: float = 60.0


@attrs.frozen(kw_only=True)
class Config:
    """The whole configuration."""

    storage: StorageConfig = StorageConfig()
    database: DatabaseConfig = DatabaseConfig()
    http: HttpConfig = HttpConfig()
    recognizer: RecognizerConfig = RecognizerConfig()
    memory: MemoryConfig = MemoryConfig()
    yandex: YandexConfig = YandexConfig()
    whisper: WhisperConfig = WhisperConfig()
    s3: S3Config = S3Config()
    telegram: TelegramConfig = TelegramConfig()
    queue: QueueConfig = QueueConfig()
    workers: WorkersConfig = attrs.field(factory=WorkersConfig)
    retention: RetentionConfig = RetentionConfig()
    webhooks: WebhooksConfig = WebhooksConfig()
    diarization: DiarizationConfig = DiarizationConfig()
    openai: OpenAIConfig = OpenAIConfig()
    quotas: QuotasConfig = QuotasConfig()
    #: ``[import]`` (a Python keyword, hence the trailing underscore here).
    import_: ImportConfig = ImportConfig()
    #: None: no ``[llm]`` section, summaries and questions are off.
    llm: LlmConfig | None = None
    worker: WorkerConfig = WorkerConfig()
    shutdown: ShutdownConfig = ShutdownConfig()


#: Each section's name and class, with field types resolved for ``_convert``.
_SECTIONS: dict[str, type[Any]] = {
    "storage": attrs.resolve_types(StorageConfig),
    "database": attrs.resolve_types(DatabaseConfig),
    "http": attrs.resolve_types(HttpConfig),
    "recognizer": attrs.resolve_types(RecognizerConfig),
    "memory": attrs.resolve_types(MemoryConfig),
    "yandex": attrs.resolve_types(YandexConfig),
    "whisper": attrs.resolve_types(WhisperConfig),
    "s3": attrs.resolve_types(S3Config),
    "telegram": attrs.resolve_types(TelegramConfig),
    "queue": attrs.resolve_types(QueueConfig),
    "workers": attrs.resolve_types(WorkersConfig),
    "retention": attrs.resolve_types(RetentionConfig),
    "webhooks": attrs.resolve_types(WebhooksConfig),
    "diarization": attrs.resolve_types(DiarizationConfig),
    "openai": attrs.resolve_types(OpenAIConfig),
    "quotas": attrs.resolve_types(QuotasConfig),
    "import": attrs.resolve_types(ImportConfig),
    "llm": attrs.resolve_types(LlmConfig),
    "worker": attrs.resolve_types(WorkerConfig),
    "shutdown": attrs.resolve_types(ShutdownConfig),
}


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (None: the embedded default), apply env overrides, and check it all."""
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            with path.open("rb") as stream:
                raw = tomllib.load(stream)
        except FileNotFoundError:
            raise ConfigError(f"config file not found: {path}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file is not valid TOML: {exc}") from None
    raw = _with_env(raw, os.environ if env is None else env)
    sections = {}
    for section, values in raw.items():
        if section not in _SECTIONS:
            raise ConfigError(f"unknown section [{section}]")
        if not isinstance(values, dict):
            raise ConfigError(f"[{section}] must be a table of keys")
        # ``[import]`` is ``Config.import_``: the section's name is a Python keyword.
        field = f"{section}_" if keyword.iskeyword(section) else section
        sections[field] = _section(section, _SECTIONS[section], values)
    config = Config(**sections)
    if config.recognizer.kind == "whisper" and "recognize" not in raw.get("workers", {}):
        # Four loops that each use every CPU oversubscribe a small box (ADR 49).
        recognize = default_whisper_recognitions(usable_cpus())
        config = attrs.evolve(config, workers=attrs.evolve(config.workers, recognize=recognize))
    _check(config)
    return config


def _with_env(raw: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    merged = {section: dict(values) for section, values in raw.items() if isinstance(values, dict)}
    merged.update({section: values for section, values in raw.items() if section not in merged})
    known: set[str] = set()
    for section, cls in _SECTIONS.items():
        for field in attrs.fields(cls):
            name = f"{ENV_PREFIX}{section}_{field.name}".upper()
            known.add(name)
            if name in env:
                merged.setdefault(section, {})[field.name] = _EnvText(env[name], name)
    _refuse_unknown_variables(env, known)
    return merged


#: ``TRANSCRIBER_*`` variables that are not config keys: the test suite's own.
ENV_RESERVED_PREFIX = f"{ENV_PREFIX}TEST_"


def _refuse_unknown_variables(env: Mapping[str, str], known: set[str]) -> None:
    """A ``TRANSCRIBER_*`` variable that names no key stops startup, like an unknown key.

    A typo (``TRANSCRIBER_WHISPER_MODLE``) would otherwise be ignored while
    the same typo in the file is refused; the message names the variable and
    the closest key.
    """
    unknown = sorted(
        name
        for name in env
        if name.upper().startswith(ENV_PREFIX)
        and name.upper() not in known
        and not name.upper().startswith(ENV_RESERVED_PREFIX)
    )
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name.upper(), sorted(known), n=1)
    hint = f"; did you mean {close[0]}?" if close else ""
    raise ConfigError(f"{name}: unknown environment variable (it names no config key){hint}")


class _EnvText(str):
    """A value that came from the environment, remembered for error messages."""

    variable: str

    def __new__(cls, value: str, variable: str) -> _EnvText:
        text = super().__new__(cls, value)
        text.variable = variable
        return text


def _section(section: str, cls: type[Any], values: dict[str, Any]) -> Any:
    known = {field.name: field for field in attrs.fields(cls)}
    kwargs = {}
    for key, value in values.items():
        if key not in known:
            raise ConfigError(f"[{section}] {key}: unknown key")
        kwargs[key] = _convert(f"[{section}] {key}", known[key].type, value)
    return cls(**kwargs)


def _convert(name: str, kind: Any, value: Any) -> Any:  # noqa: PLR0911 - one branch per type
    if isinstance(value, _EnvText):
        name = f"{name} (from {value.variable})"
    try:
        if kind is str:
            return _expect(value, str, "a string")
        if kind is int:
            return _to_int(value)
        if kind is float:
            return _to_float(value)
        if kind is bool:
            return _to_bool(value)
        if kind is Path:
            return Path(_expect(value, str, "a path"))
        if kind == tuple[str, ...]:
            return tuple(_expect(item, str, "a list of strings") for item in _to_list(value))
        if kind == tuple[int, ...]:
            return tuple(_to_int(item) for item in _to_list(value))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name}: {exc}") from None
    raise AssertionError(f"no converter for {kind!r}")


def _expect(value: Any, kind: type[Any], what: str) -> Any:
    if not isinstance(value, kind):
        # The type, not the value: a misplaced secret must not be echoed.
        raise TypeError(f"expected {what}, got {_what(value)}")
    return value


def _what(value: Any) -> str:
    """What kind of value was given, never the value: it may be a misplaced secret."""
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(f"expected a whole number, got {_what(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError(f"expected a whole number, got {_what(value)}") from None
    raise TypeError(f"expected a whole number, got {_what(value)}")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"expected a number, got {_what(value)}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {_what(value)}") from None
    raise TypeError(f"expected a number, got {_what(value)}")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "1", "yes", "false", "0", "no"}:
        return value.strip().lower() in {"true", "1", "yes"}
    raise TypeError(f"expected true or false, got {_what(value)}")


def _to_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        # From the environment: comma-separated.
        return [item.strip() for item in value.split(",") if item.strip()]
    raise TypeError(f"expected a list, got {_what(value)}")


#: The longest span of seconds a setting may name (a century; beyond, ``timedelta`` overflows).
_LONGEST_SECONDS = 100 * 365 * 86_400.0


def _check_positive(*named: tuple[str, float]) -> None:
    for name, value in named:
        if value <= 0:
            raise ConfigError(f"{name}: must be positive")


def _check_workers(workers: WorkersConfig) -> None:
    """Loop counts and the express lane's limits (ADR 27)."""
    for key in ("fetch", "convert", "recognize", "check", "deliver"):
        if getattr(workers, key) < 0:
            raise ConfigError(f"[workers] {key}: must not be negative")
    if workers.express_bytes <= 0:
        raise ConfigError("[workers] express_bytes: must be positive")
    if not workers.express_seconds > 0:  # NaN too
        raise ConfigError("[workers] express_seconds: must be positive")
    if workers.express_seconds > _LONGEST_SECONDS:
        raise ConfigError("[workers] express_seconds: too large")


def _check_shutdown(shutdown: ShutdownConfig) -> None:
    """``[shutdown]``: the grace period fits inside the hard limit."""
    if shutdown.grace_seconds < 0:
        raise ConfigError("[shutdown] grace_seconds: must not be negative")
    if shutdown.hard_seconds < shutdown.grace_seconds:
        raise ConfigError("[shutdown] hard_seconds: must not be shorter than grace_seconds")


#: The smallest ``[llm] max_input_tokens``: the prompts and a few lines must fit.
MIN_LLM_INPUT_TOKENS = 1000


def _check_llm(llm: LlmConfig) -> None:
    """``[llm]`` values that cannot work (SPEC §27)."""
    parsed = urlsplit(llm.base_url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ConfigError(
            "[llm] base_url: required, an http(s) URL of the server's OpenAI API root"
            " (e.g. http://127.0.0.1:11434/v1)"
        )
    if not llm.model.strip():
        raise ConfigError("[llm] model: required, the model's name as the server knows it")
    if llm.max_input_tokens < MIN_LLM_INPUT_TOKENS:
        raise ConfigError(f"[llm] max_input_tokens: must be at least {MIN_LLM_INPUT_TOKENS}")
    if not 0 < llm.timeout_seconds <= 3600:
        raise ConfigError("[llm] timeout_seconds: must be positive and at most 3600")


def _check_webhooks(webhooks: WebhooksConfig) -> None:
    """``[webhooks]`` values that cannot work (ADR 35)."""
    if not 0 < webhooks.timeout_seconds <= 600:  # NaN too
        raise ConfigError("[webhooks] timeout_seconds: must be positive and at most 600")


def _check_yandex(yandex: YandexConfig) -> None:
    """SpeechKit's keys: the async API named, limits within SpeechKit's own."""
    if yandex.async_api not in ("v3", "v2"):
        raise ConfigError('[yandex] async_api: expected "v3" or "v2"')
    if not 0 < yandex.max_seconds <= 14400:
        raise ConfigError("[yandex] max_seconds: must be positive and at most 14400 (4 hours)")
    _check_positive(
        ("[yandex] checks_per_hour", yandex.checks_per_hour),
        ("[yandex] starts_per_hour", yandex.starts_per_hour),
        ("[yandex] sync_per_second", yandex.sync_per_second),
    )
    if not 0 <= yandex.sync_max_seconds <= 30:  # NaN too
        raise ConfigError("[yandex] sync_max_seconds: must be between 0 (never) and 30")


def _check_memory(memory: MemoryConfig) -> None:
    """The demo recognizer's numbers."""
    if memory.checks_before_done < 0:
        raise ConfigError("[memory] checks_before_done: must not be negative")
    if not memory.max_seconds >= 0:  # NaN too
        raise ConfigError("[memory] max_seconds: must not be negative (0: no limit)")
    if not 0 <= memory.speakers <= MAX_SPEAKERS:
        raise ConfigError(f"[memory] speakers: must be from 0 to {MAX_SPEAKERS}")
    if not memory.work_seconds >= 0:  # NaN too
        raise ConfigError("[memory] work_seconds: must not be negative (0: none)")


def _check(config: Config) -> None:  # noqa: PLR0912 - one branch per rule reads best
    """Cross-checks: values that parse but cannot work."""
    if config.storage.max_record_bytes <= 0:
        raise ConfigError("[storage] max_record_bytes: must be positive")
    if config.import_.max_bytes <= 0:
        raise ConfigError("[import] max_bytes: must be positive")
    for section, port in (("http", config.http.port), ("worker", config.worker.port)):
        if not 0 < port < 65536:
            raise ConfigError(f"[{section}] port: must be between 1 and 65535")
    if any(not token for token in config.http.api_tokens):
        raise ConfigError("[http] api_tokens: tokens must not be empty strings")
    for key, seconds in (
        ("[http] upload_inactivity_seconds", config.http.upload_inactivity_seconds),
        ("[http] upload_deadline_seconds", config.http.upload_deadline_seconds),
    ):
        # Each becomes a timedelta in the settings: NaN, inf or past a century would not.
        if not 0 < seconds <= _LONGEST_SECONDS:
            raise ConfigError(f"{key}: must be positive and at most a century")
    _check_positive(
        ("[storage] max_duration_seconds", config.storage.max_duration_seconds),
        ("[storage] min_bytes_per_second", config.storage.min_bytes_per_second),
        ("[http] max_header_bytes", config.http.max_header_bytes),
        ("[http] header_timeout_seconds", config.http.header_timeout_seconds),
        ("[http] max_connections", config.http.max_connections),
    )
    if config.storage.min_free_bytes < 0:
        raise ConfigError("[storage] min_free_bytes: must not be negative")
    if config.quotas.seconds_per_day < 0:
        raise ConfigError("[quotas] seconds_per_day: must be 0 (no quota) or a positive number")
    _check_database(config.database)
    _check_forwarded(config.http.forwarded_allow_ips)
    if config.recognizer.kind not in ("memory", "yandex", "whisper"):
        raise ConfigError('[recognizer] kind: expected "memory", "yandex" or "whisper"')
    if config.storage.files not in ("local", "s3"):
        raise ConfigError('[storage] files: expected "local" or "s3"')
    if config.storage.files == "s3":
        _check_s3(config.s3, 'when [storage] files is "s3"')
    if config.recognizer.kind == "yandex":
        if not config.yandex.api_key:
            raise ConfigError(
                '[yandex] api_key: required when [recognizer] kind is "yandex"'
                " (or set TRANSCRIBER_YANDEX_API_KEY)"
            )
        _check_s3(config.s3, 'when [recognizer] kind is "yandex"')
    _check_whisper(config.whisper)
    _check_memory(config.memory)
    _check_yandex(config.yandex)
    queue = config.queue
    if queue.max_attempts < 1:
        raise ConfigError("[queue] max_attempts: must be at least 1")
    if queue.idle_poll_seconds <= 0:
        raise ConfigError("[queue] idle_poll_seconds: must be positive")
    if queue.condition_pause_seconds <= 0:
        raise ConfigError("[queue] condition_pause_seconds: must be positive")
    if not 0 < queue.lease_renewal_seconds < queue.lease_seconds:
        raise ConfigError("[queue] lease_renewal_seconds: must be positive and below lease_seconds")
    _check_workers(config.workers)
    _check_retention(config.retention)
    _check_diarization(config.diarization)
    if not 0 < config.openai.wait_seconds <= _LONGEST_WAIT_SECONDS:  # NaN too
        raise ConfigError("[openai] wait_seconds: must be positive and at most 86400")
    _check_webhooks(config.webhooks)
    _check_telegram(config.telegram)
    _check_shutdown(config.shutdown)
    if config.llm is not None:
        _check_llm(config.llm)


#: What Telegram allows in a webhook's secret token.
_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")


def _check_telegram(telegram: TelegramConfig) -> None:
    if telegram.mode not in {"polling", "webhook"}:
        raise ConfigError('[telegram] mode: expected "polling" or "webhook"')
    if telegram.mode != "webhook":
        return
    parsed = urlsplit(telegram.webhook_url)
    if parsed.scheme not in {"https", "http"} or not parsed.hostname:
        raise ConfigError(
            "[telegram] webhook_url: webhook mode needs the public URL of /telegram/webhook"
            " (https://...)"
        )
    if not _WEBHOOK_SECRET.fullmatch(telegram.webhook_secret):
        # Never the value: it is a secret.
        raise ConfigError(
            "[telegram] webhook_secret: webhook mode needs 1-256 characters of A-Z, a-z,"
            " 0-9, _ and -"
        )


def _check_diarization(diarization: DiarizationConfig) -> None:
    """``[diarization] default`` must be a value the ``speakers`` field takes."""
    try:
        parse_wanted(diarization.default)
    except BadSpeakers as exc:
        raise ConfigError(f"[diarization] default: {exc}") from None
    if not -1.0 <= diarization.voice_match <= 1.0:  # NaN too
        raise ConfigError("[diarization] voice_match: must be a cosine similarity, from -1 to 1")


#: The longest an OpenAI-compatible answer may wait for its job (a day).
_LONGEST_WAIT_SECONDS = 86400.0
#: The longest retention a key may name, in days (a century).
_LONGEST_DAYS = 36_500
#: The sweep runs at least hourly (reference: Retention).
_LONGEST_SWEEP_SECONDS = 3600.0


def _check_retention(retention: RetentionConfig) -> None:
    """Days are whole, positive and in order; the sweep runs at least hourly."""
    if not 1 <= retention.recordings_days <= _LONGEST_DAYS:
        raise ConfigError(f"[retention] recordings_days: must be between 1 and {_LONGEST_DAYS}")
    if not retention.recordings_days <= retention.jobs_days <= _LONGEST_DAYS:
        raise ConfigError(
            "[retention] jobs_days: must be at least recordings_days"
            f" (a job keeps its files no longer than itself) and at most {_LONGEST_DAYS}"
        )
    if not 0 < retention.sweep_seconds <= _LONGEST_SWEEP_SECONDS:  # NaN too
        raise ConfigError("[retention] sweep_seconds: must be positive and at most 3600")


def _check_forwarded(entries: tuple[str, ...]) -> None:
    """``[http] forwarded_allow_ips``: each an address or a network."""
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ConfigError(
                "[http] forwarded_allow_ips: expected IP addresses or networks"
            ) from None


def _check_database(database: DatabaseConfig) -> None:
    """``[database]`` values that cannot work; the url itself is never repeated (a password)."""
    if database.pool_size < 1:
        raise ConfigError("[database] pool_size: must be at least 1")
    if not database.url:
        return
    expected = "expected empty (SQLite) or postgresql://user@host:port/database"
    try:
        parts = urlsplit(database.url)
        parts.port  # noqa: B018 - reading it checks that the port is a number in range
    except ValueError:
        raise ConfigError(f"[database] url: not a URL; {expected}") from None
    if parts.scheme not in POSTGRES_SCHEMES:
        raise ConfigError(f"[database] url: {expected}")
    if any(char.isspace() for char in database.url):
        raise ConfigError(f"[database] url: must not contain spaces; {expected}")


def _check_s3(s3: S3Config, why: str) -> None:
    """The ``[s3]`` keys without which no bucket can be used; ``why`` says who needs them."""
    if not s3.bucket:
        raise ConfigError(f"[s3] bucket: required {why}")
    if not (s3.access_key_id and s3.secret_access_key):
        raise ConfigError(
            f"[s3] access_key_id: access_key_id and secret_access_key are required {why}"
        )


def _check_whisper(whisper: WhisperConfig) -> None:
    """``[whisper]`` values wrong on any machine; the model itself is checked at build."""
    if not whisper.model.strip():
        raise ConfigError("[whisper] model: must name a model or a directory")
    if whisper.language and re.fullmatch(r"[a-z]{2,3}", whisper.language) is None:
        raise ConfigError('[whisper] language: expected a code such as "en", or "" to detect')
    if whisper.compute_type not in WHISPER_COMPUTE_TYPES:
        raise ConfigError(
            f"[whisper] compute_type: expected one of {', '.join(WHISPER_COMPUTE_TYPES)}"
        )
    if whisper.threads < 0:
        raise ConfigError("[whisper] threads: must not be negative (0 = every CPU)")
    if whisper.beam_size < 1:
        raise ConfigError("[whisper] beam_size: must be at least 1")
    if not 0 <= whisper.batch_size <= MAX_BATCH_SIZE:
        raise ConfigError(
            f"[whisper] batch_size: expected 0 (sequential) to {MAX_BATCH_SIZE} (batched)"
        )
    if not whisper.part_seconds >= 0:  # NaN too
        raise ConfigError("[whisper] part_seconds: must not be negative (0: never split)")
