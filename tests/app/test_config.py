"""The TOML config: defaults, env overrides, and errors that name the key (reference)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from transcriber_adapters import whisper
from transcriber_app.config import Config, ConfigError, load_config
from transcriber_core.policy import general_loops, is_express_loop


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_no_config_is_the_embedded_default() -> None:
    """Without a file or env the service runs on SQLite under ./data, memory recognizer, :8080."""
    config = load_config(None, {})
    assert config == Config()
    assert config.storage.data_dir == Path("data")
    assert config.recognizer.kind == "memory"
    assert (config.http.host, config.http.port) == ("127.0.0.1", 8080)
    assert config.http.api_tokens == ()
    assert config.telegram.token == ""


def test_spec_example_file_loads(tmp_path: Path) -> None:
    """The product's example config, key for key, is accepted as written."""
    path = write(
        tmp_path,
        """
[storage]
data_dir = "data"
max_record_bytes = 8589934592
[http]
host = "127.0.0.1"
port = 8080
api_tokens = []
[recognizer]
kind = "memory"
[yandex]
api_key = ""
stt_url = "https://transcribe.api.cloud.yandex.net/speech/stt/v2/longRunningRecognize"
operation_url = "https://operation.api.cloud.yandex.net/operations"
language = "ru-RU"
model = "general"
[s3]
endpoint_url = "https://storage.yandexcloud.net"
region = "ru-central1"
bucket = ""
access_key_id = ""
secret_access_key = ""
[telegram]
token = ""
api_base = ""
[shutdown]
grace_seconds = 30
hard_seconds = 60
""",
    )
    assert load_config(path, {}) == Config()


def test_values_from_the_file(tmp_path: Path) -> None:
    """Keys in the file replace the defaults with the right types."""
    path = write(
        tmp_path,
        '[http]\nport = 9090\napi_tokens = ["t1", "t2"]\n[storage]\ndata_dir = "/srv/x"\n',
    )
    config = load_config(path, {})
    assert config.http.port == 9090
    assert config.http.api_tokens == ("t1", "t2")
    assert config.storage.data_dir == Path("/srv/x")


def test_an_unknown_transcriber_variable_stops_loading_naming_it() -> None:
    """A typo in a variable is refused like a typo in the file; the test suite's own are not."""
    with pytest.raises(ConfigError, match=r"^TRANSCRIBER_HTTP_PROT: unknown environment variable"):
        load_config(None, {"TRANSCRIBER_HTTP_PROT": "9000", "TRANSCRIBER_HTTP_PORT": "9001"})
    with pytest.raises(ConfigError, match="TRANSCRIBER_NOSUCH_THING"):
        load_config(None, {"TRANSCRIBER_NOSUCH_THING": "1"})
    config = load_config(None, {"TRANSCRIBER_TEST_DATABASE_URL": "x", "TRANSCRIBERX": "y"})
    assert config.http.port == 8080


def test_env_overrides_the_file(tmp_path: Path) -> None:
    """TRANSCRIBER_SECTION_KEY wins over the file, converted to the key's type."""
    path = write(tmp_path, "[http]\nport = 9090\n")
    config = load_config(
        path,
        {
            "TRANSCRIBER_HTTP_PORT": "9191",
            "TRANSCRIBER_HTTP_API_TOKENS": "a, b",
            "TRANSCRIBER_TELEGRAM_ALLOWED_CHAT_IDS": "1,-100200",
            "TRANSCRIBER_SHUTDOWN_GRACE_SECONDS": "2.5",
        },
    )
    assert config.http.port == 9191
    assert config.http.api_tokens == ("a", "b")
    assert config.telegram.allowed_chat_ids == (1, -100200)
    assert config.shutdown.grace_seconds == 2.5


def test_memory_recognizer_keys(tmp_path: Path) -> None:
    """[memory] sets the demo recognizer's text, pending checks and failure; env overrides."""
    assert (Config().memory.text, Config().memory.checks_before_done) == ("", 0)
    assert Config().memory.fail_with == ""
    path = write(
        tmp_path,
        '[memory]\ntext = "Demo transcript."\nchecks_before_done = 2\nfail_with = "no luck"\n',
    )
    config = load_config(path, {"TRANSCRIBER_MEMORY_CHECKS_BEFORE_DONE": "3"})
    assert config.memory.text == "Demo transcript."
    assert config.memory.checks_before_done == 3
    assert config.memory.fail_with == "no luck"


def test_whisper_keys(tmp_path: Path) -> None:
    """[whisper] has its documented defaults; file and env set them; kind = "whisper" works."""
    whisper = Config().whisper
    assert (whisper.model, whisper.language, whisper.compute_type) == ("base", "", "int8")
    assert (whisper.threads, whisper.beam_size, whisper.batch_size) == (0, 5, 0)
    assert whisper.part_seconds == 600
    path = write(
        tmp_path,
        '[recognizer]\nkind = "whisper"\n[whisper]\nmodel = "/models/small"\nlanguage = "ru"\n',
    )
    env = {
        "TRANSCRIBER_WHISPER_BEAM_SIZE": "1",
        "TRANSCRIBER_WHISPER_BATCH_SIZE": "8",
        "TRANSCRIBER_WHISPER_PART_SECONDS": "0",
    }
    config = load_config(path, env)
    assert config.recognizer.kind == "whisper"
    assert (config.whisper.model, config.whisper.language) == ("/models/small", "ru")
    assert (config.whisper.beam_size, config.whisper.batch_size) == (1, 8)
    assert config.whisper.part_seconds == 0


def test_secrets_come_from_env() -> None:
    """The spec's secret variables fill the secret keys."""
    config = load_config(
        None,
        {
            "TRANSCRIBER_YANDEX_API_KEY": "k",
            "TRANSCRIBER_S3_ACCESS_KEY_ID": "id",
            "TRANSCRIBER_S3_SECRET_ACCESS_KEY": "secret",
            "TRANSCRIBER_TELEGRAM_TOKEN": "123:abc",
        },
    )
    assert config.yandex.api_key == "k"
    assert config.s3.access_key_id == "id"
    assert config.s3.secret_access_key == "secret"
    assert config.telegram.token == "123:abc"


def test_secrets_are_not_in_repr() -> None:
    """Printing a config never shows a key, a token or a password."""
    config = load_config(
        None,
        {
            "TRANSCRIBER_YANDEX_API_KEY": "yandex-secret",
            "TRANSCRIBER_S3_SECRET_ACCESS_KEY": "s3-secret",
            "TRANSCRIBER_TELEGRAM_TOKEN": "tg-secret",
        },
    )
    text = repr(config)
    assert "yandex-secret" not in text
    assert "s3-secret" not in text
    assert "tg-secret" not in text


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[http]\nprot = 1\n", {}, r"\[http\] prot: unknown key"),
        ("[htpp]\nport = 1\n", {}, r"unknown section \[htpp\]"),
        ('[http]\nport = "eighty"\n', {}, r"\[http\] port: expected a whole number"),
        ("[http]\nport = 0\n", {}, r"\[http\] port: must be between"),
        ("[http]\nport = true\n", {}, r"\[http\] port: expected a whole number"),
        ("", {"TRANSCRIBER_HTTP_PORT": "x"}, r"\[http\] port \(from TRANSCRIBER_HTTP_PORT\)"),
        ('[recognizer]\nkind = "google"\n', {}, r"\[recognizer\] kind: expected"),
        ('[recognizer]\nkind = "yandex"\n', {}, r"\[yandex\] api_key: required"),
        ("[storage]\nmax_record_bytes = -1\n", {}, r"\[storage\] max_record_bytes"),
        ("[http]\napi_tokens = [1]\n", {}, r"\[http\] api_tokens: expected a list of strings"),
        ('[http]\napi_tokens = [""]\n', {}, r"\[http\] api_tokens: tokens must not be empty"),
        ("[shutdown]\ngrace_seconds = 10\nhard_seconds = 5\n", {}, r"\[shutdown\] hard_seconds"),
        ("[queue]\nlease_seconds = 10\nlease_renewal_seconds = 10\n", {}, r"lease_renewal"),
        ("[storage]\nmax_duration_seconds = 0\n", {}, r"\[storage\] max_duration_seconds"),
        ("[storage]\nmin_bytes_per_second = -1\n", {}, r"\[storage\] min_bytes_per_second"),
        ("[storage]\nmin_free_bytes = -1\n", {}, r"\[storage\] min_free_bytes"),
        ("[http]\nmax_header_bytes = 0\n", {}, r"\[http\] max_header_bytes"),
        ("[http]\nheader_timeout_seconds = 0\n", {}, r"\[http\] header_timeout_seconds"),
        ("[http]\nupload_deadline_seconds = 0\n", {}, r"\[http\] upload_deadline_seconds"),
        ("[http]\nupload_deadline_seconds = inf\n", {}, r"\[http\] upload_deadline_seconds"),
        ("[http]\nupload_deadline_seconds = nan\n", {}, r"\[http\] upload_deadline_seconds"),
        ("[http]\nupload_deadline_seconds = 1e18\n", {}, r"\[http\] upload_deadline_seconds"),
        ("[http]\nupload_inactivity_seconds = inf\n", {}, r"\[http\] upload_inactivity"),
        ("[http]\nmax_connections = 0\n", {}, r"\[http\] max_connections"),
        ('[http]\nforwarded_allow_ips = ["proxy"]\n', {}, r"\[http\] forwarded_allow_ips"),
        ("[memory]\nchecks_before_done = -1\n", {}, r"\[memory\] checks_before_done: must"),
        ("[memory]\ntext = 5\n", {}, r"\[memory\] text: expected a string"),
        ("[memory]\nfail_with = true\n", {}, r"\[memory\] fail_with: expected a string"),
        ("[memory]\nwork_seconds = -1\n", {}, r"\[memory\] work_seconds: must not be negative"),
        ("[memory]\nfail = 1\n", {}, r"\[memory\] fail: unknown key"),
        ("[memory]\nspeakers = 11\n", {}, r"\[memory\] speakers: must be from 0 to 10"),
        ("[memory]\nspeakers = -1\n", {}, r"\[memory\] speakers: must be from 0 to 10"),
        ("[diarization]\nvoice_match = 1.5\n", {}, r"\[diarization\] voice_match: must be"),
        ("[diarization]\nvoice_match = nan\n", {}, r"\[diarization\] voice_match: must be"),
        ("[workers]\nconvert = -1\n", {}, r"\[workers\] convert: must not be negative"),
        ("[workers]\nrecognize = -2\n", {}, r"\[workers\] recognize: must not be negative"),
        ("", {"TRANSCRIBER_WORKERS_CHECK": "-1"}, r"\[workers\] check: must not be negative"),
        ("[workers]\ncheck = 1.5\n", {}, r"\[workers\] check: expected a whole number"),
        ("[workers]\nexpress_bytes = 0\n", {}, r"\[workers\] express_bytes: must be positive"),
        ("[workers]\nexpress_seconds = -1\n", {}, r"\[workers\] express_seconds: must be"),
        ("[workers]\nexpress_seconds = inf\n", {}, r"\[workers\] express_seconds: too large"),
        ("[workers]\nexpress_seconds = nan\n", {}, r"\[workers\] express_seconds: must be"),
        ("[workers]\nthreads = 4\n", {}, r"\[workers\] threads: unknown key"),
        ("[workers]\ndeliver = -1\n", {}, r"\[workers\] deliver: must not be negative"),
        ("[webhooks]\ntimeout_seconds = 0\n", {}, r"\[webhooks\] timeout_seconds: must be"),
        ("[webhooks]\ntimeout_seconds = nan\n", {}, r"\[webhooks\] timeout_seconds: must be"),
        ('[webhooks]\nallow_private = "maybe"\n', {}, r"\[webhooks\] allow_private: expected"),
        ("[webhooks]\nurl = 1\n", {}, r"\[webhooks\] url: unknown key"),
        ('[whisper]\nmodel = " "\n', {}, r"\[whisper\] model: must name"),
        ('[whisper]\nlanguage = "en-US"\n', {}, r"\[whisper\] language: expected a code"),
        ('[whisper]\ncompute_type = "float16"\n', {}, r"\[whisper\] compute_type: expected"),
        ("[whisper]\nthreads = -1\n", {}, r"\[whisper\] threads: must not be negative"),
        ("[whisper]\nbeam_size = 0\n", {}, r"\[whisper\] beam_size: must be at least 1"),
        ("[whisper]\nbatch_size = -1\n", {}, r"\[whisper\] batch_size: expected 0"),
        ("[whisper]\nbatch_size = 65\n", {}, r"\[whisper\] batch_size: expected 0"),
        ("[whisper]\npart_seconds = -1\n", {}, r"\[whisper\] part_seconds: must not be negative"),
        ('[whisper]\npart_seconds = "ten"\n', {}, r"\[whisper\] part_seconds: expected a number"),
        ("[yandex]\nstarts_per_hour = 0\n", {}, r"\[yandex\] starts_per_hour: must be positive"),
        ("[yandex]\nsync_per_second = -1\n", {}, r"\[yandex\] sync_per_second: must be"),
        ("[yandex]\nsync_max_seconds = 31\n", {}, r"\[yandex\] sync_max_seconds: must be"),
        ("[yandex]\nsync_max_seconds = nan\n", {}, r"\[yandex\] sync_max_seconds: must be"),
        ('[yandex]\nasync_api = "v4"\n', {}, r'\[yandex\] async_api: expected "v3" or "v2"'),
        ("[yandex]\nasync_api = 3\n", {}, r"\[yandex\] async_api: expected"),
        ("[retention]\nrecordings_days = 0\n", {}, r"\[retention\] recordings_days: must be"),
        ("[retention]\nrecordings_days = 1.5\n", {}, r"\[retention\] recordings_days: expected"),
        (
            "[retention]\nrecordings_days = 8\njobs_days = 7\n",
            {},
            r"\[retention\] jobs_days: must be at least",
        ),
        ("[retention]\njobs_days = 40000\n", {}, r"\[retention\] jobs_days: must be at least"),
        ("[retention]\nsweep_seconds = 3601\n", {}, r"\[retention\] sweep_seconds: must be"),
        ("[retention]\nsweep_seconds = nan\n", {}, r"\[retention\] sweep_seconds: must be"),
        ("[quotas]\nseconds_per_day = -1\n", {}, r"\[quotas\] seconds_per_day: must be 0"),
        ('[quotas]\nseconds_per_day = "1h"\n', {}, r"\[quotas\] seconds_per_day: expected a"),
        ("", {"TRANSCRIBER_QUOTAS_SECONDS_PER_DAY": "x"}, r"\[quotas\] seconds_per_day \(from"),
        ("[quotas]\nminutes_per_day = 5\n", {}, r"\[quotas\] minutes_per_day: unknown key"),
        ('[llm]\nmodel = "m"\n', {}, r"\[llm\] base_url: required"),
        ('[llm]\nbase_url = "ftp://x/v1"\nmodel = "m"\n', {}, r"\[llm\] base_url: required"),
        ('[llm]\nbase_url = "http://127.0.0.1/v1"\n', {}, r"\[llm\] model: required"),
        (
            '[llm]\nbase_url = "http://h/v1"\nmodel = "m"\nmax_input_tokens = 10\n',
            {},
            r"\[llm\] max_input_tokens: must be at least 1000",
        ),
        (
            '[llm]\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout_seconds = 0\n',
            {},
            r"\[llm\] timeout_seconds: must be positive",
        ),
        (
            '[llm]\nbase_url = "http://h/v1"\nmodel = "m"\nauto = 1\n',
            {},
            r"\[llm\] auto: unknown key",
        ),
        ("", {"TRANSCRIBER_LLM_MODEL": "m"}, r"\[llm\] base_url: required"),
        ("http = 1\n", {}, r"\[http\] must be a table"),
        ("[http\n", {}, r"not valid TOML"),
    ],
)
def test_bad_config_names_the_key(
    tmp_path: Path, text: str, env: dict[str, str], message: str
) -> None:
    """Every mistake stops loading with a message that says which key is wrong."""
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text), env)


def test_quotas_default_to_none_and_can_be_set(tmp_path: Path) -> None:
    """``[quotas] seconds_per_day`` is 0 (no quota) by default; file and env set it (ADR 59)."""
    assert load_config(None, {}).quotas.seconds_per_day == 0
    path = write(tmp_path, "[quotas]\nseconds_per_day = 3600\n")
    assert load_config(path, {}).quotas.seconds_per_day == 3600
    env = {"TRANSCRIBER_QUOTAS_SECONDS_PER_DAY": "60"}
    assert load_config(path, env).quotas.seconds_per_day == 60


def test_webhooks_keys_from_file_and_env(tmp_path: Path) -> None:
    """[webhooks] secret comes from the env as well, and never shows in the config's repr."""
    path = write(tmp_path, "[webhooks]\nallow_private = true\ntimeout_seconds = 2.5\n")
    config = load_config(path, {"TRANSCRIBER_WEBHOOKS_SECRET": "hook-secret"})
    webhooks = config.webhooks
    assert (webhooks.secret, webhooks.allow_private, webhooks.timeout_seconds) == (
        "hook-secret",
        True,
        2.5,
    )
    assert "hook-secret" not in repr(config)
    defaults = load_config(None, {})
    assert (defaults.webhooks.secret, defaults.webhooks.allow_private) == ("", False)
    assert defaults.webhooks.timeout_seconds == 10.0
    assert defaults.workers.deliver == 2


def test_workers_defaults_follow_the_spec() -> None:
    """The defaults: a convert loop per CPU plus the express one, 4 recognize, 2 check, 20 MiB."""
    workers = load_config(None, {}).workers
    assert workers.convert == len(os.sched_getaffinity(0)) + 1
    assert (workers.recognize, workers.check) == (4, 2)
    assert (workers.express_bytes, workers.express_seconds) == (20 * 1024**2, 600.0)


def test_retention_defaults_and_keys(tmp_path: Path) -> None:
    """Recordings 7 days, jobs 30, a sweep every half hour; each key read from file and env."""
    retention = load_config(None, {}).retention
    assert (retention.recordings_days, retention.jobs_days, retention.sweep_seconds) == (
        7,
        30,
        1800.0,
    )
    path = write(tmp_path, "[retention]\nrecordings_days = 2\njobs_days = 3\n")
    retention = load_config(path, {"TRANSCRIBER_RETENTION_SWEEP_SECONDS": "60"}).retention
    assert (retention.recordings_days, retention.jobs_days, retention.sweep_seconds) == (
        2,
        3,
        60.0,
    )


def test_workers_keys_from_file_and_env(tmp_path: Path) -> None:
    """Every [workers] key is read from the file, and the environment overrides it."""
    path = write(
        tmp_path,
        "[workers]\nconvert = 0\nrecognize = 1\ncheck = 3\n"
        "express_bytes = 1000\nexpress_seconds = 30\n",
    )
    workers = load_config(path, {"TRANSCRIBER_WORKERS_RECOGNIZE": "7"}).workers
    assert (workers.convert, workers.recognize, workers.check) == (0, 7, 3)
    assert (workers.express_bytes, workers.express_seconds) == (1000, 30.0)


@pytest.mark.parametrize(
    ("cpus", "loops", "threads"), [(1, 3, 1), (2, 3, 1), (4, 3, 2), (8, 3, 4), (16, 5, 4)]
)
def test_whisper_loops_default_to_two_general_and_an_express_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: int, loops: int, threads: int
) -> None:
    """Whisper without ``[workers] recognize``: two general loops at least (one per 4 CPUs
    past 8), sharing the CPUs, so a long recording's parts use them all, and the express one."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cpus)))
    path = write(tmp_path, '[recognizer]\nkind = "whisper"\n')
    assert load_config(path, {}).workers.recognize == loops
    general = general_loops(loops)
    assert general >= 2
    assert is_express_loop(0, loops)
    assert whisper.cpu_threads(0, general) == threads
    assert general * threads <= max(cpus, general)


def test_a_set_recognize_count_and_other_recognizers_keep_their_loops(tmp_path: Path) -> None:
    """The Whisper default never overrides a count the owner set, nor SpeechKit's four loops."""
    path = write(tmp_path, '[recognizer]\nkind = "whisper"\n[workers]\nrecognize = 3\n')
    assert load_config(path, {}).workers.recognize == 3
    path = write(tmp_path, '[recognizer]\nkind = "whisper"\n')
    assert load_config(path, {"TRANSCRIBER_WORKERS_RECOGNIZE": "2"}).workers.recognize == 2
    assert load_config(None, {}).workers.recognize == 4


def test_yandex_needs_a_bucket(tmp_path: Path) -> None:
    """Choosing yandex without an Object Storage bucket fails at startup, naming [s3] bucket."""
    path = write(tmp_path, '[recognizer]\nkind = "yandex"\n[yandex]\napi_key = "k"\n')
    with pytest.raises(ConfigError, match=r"\[s3\] bucket: required"):
        load_config(path, {})


def test_files_default_to_local(tmp_path: Path) -> None:
    """Without [storage] files the service keeps its files in the data dir."""
    assert load_config(None, {}).storage.files == "local"


def test_files_on_s3_need_a_bucket_and_keys(tmp_path: Path) -> None:
    """files = "s3" without a bucket or without keys stops startup, naming the [s3] key."""
    path = write(tmp_path, '[storage]\nfiles = "s3"\n')
    with pytest.raises(ConfigError, match=r"\[s3\] bucket: required when \[storage\] files"):
        load_config(path, {})
    path = write(tmp_path, '[storage]\nfiles = "s3"\n[s3]\nbucket = "b"\n')
    with pytest.raises(ConfigError, match=r"\[s3\] access_key_id: .* required when \[storage\]"):
        load_config(path, {})
    env = {"TRANSCRIBER_S3_ACCESS_KEY_ID": "id", "TRANSCRIBER_S3_SECRET_ACCESS_KEY": "secret"}
    assert load_config(path, env).storage.files == "s3"


def test_files_must_be_local_or_s3(tmp_path: Path) -> None:
    """Any other [storage] files value is refused with a message naming the key."""
    path = write(tmp_path, '[storage]\nfiles = "ftp"\n')
    with pytest.raises(ConfigError, match=r'\[storage\] files: expected "local" or "s3"'):
        load_config(path, {})


def test_missing_file_is_reported(tmp_path: Path) -> None:
    """A config path that does not exist is an error, not a silent default."""
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml", {})


@pytest.mark.parametrize(
    "text",
    [
        '[http]\nport = "123456789:AAsecretTOKEN"\n',
        '[shutdown]\ngrace_seconds = "123456789:AAsecretTOKEN"\n',
        '[s3]\npath_style = "123456789:AAsecretTOKEN"\n',
        '[recognizer]\nkind = "123456789:AAsecretTOKEN"\n',
    ],
)
def test_bad_value_is_never_echoed(tmp_path: Path, text: str) -> None:
    """A secret pasted into the wrong key does not reach stderr through the error message."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), {})
    assert "secretTOKEN" not in str(info.value)


def test_wrong_type_does_not_echo_a_secret(tmp_path: Path) -> None:
    """A secret given with the wrong type is reported by type, not by value."""
    path = write(tmp_path, "[telegram]\ntoken = 123456789\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert "123456789" not in str(info.value)
    assert "[telegram] token" in str(info.value)


def test_speechkit_sync_and_budget_keys(tmp_path: Path) -> None:
    """The [yandex] sync and budget keys default to SpeechKit's quotas and can be set (ADR 29)."""
    defaults = load_config(write(tmp_path, ""))
    assert defaults.yandex.sync_url == "https://stt.api.cloud.yandex.net/speech/v1/stt:recognize"
    assert defaults.yandex.sync_max_seconds == 30.0
    assert (defaults.yandex.starts_per_hour, defaults.yandex.checks_per_hour) == (500, 2500)
    assert defaults.yandex.sync_per_second == 20
    text = (
        '[yandex]\nsync_url = "http://127.0.0.1:9/v1"\nsync_max_seconds = 0\n'
        "starts_per_hour = 50\nsync_per_second = 2\n"
    )
    config = load_config(write(tmp_path, text))
    assert config.yandex.sync_url == "http://127.0.0.1:9/v1"
    assert config.yandex.sync_max_seconds == 0
    assert (config.yandex.starts_per_hour, config.yandex.sync_per_second) == (50, 2)


def test_speechkit_async_api_defaults_to_v3_and_v2_can_be_chosen(tmp_path: Path) -> None:
    """[yandex] async_api is "v3" with its base URL unless set; "v2" keeps the v2 path (ADR 54)."""
    defaults = load_config(write(tmp_path, ""))
    assert defaults.yandex.async_api == "v3"
    assert defaults.yandex.v3_url == "https://stt.api.cloud.yandex.net/stt/v3"
    text = '[yandex]\nasync_api = "v2"\nv3_url = "http://127.0.0.1:9/stt/v3"\n'
    config = load_config(write(tmp_path, text))
    assert (config.yandex.async_api, config.yandex.v3_url) == ("v2", "http://127.0.0.1:9/stt/v3")


def test_database_url_empty_is_sqlite_and_postgresql_is_taken(tmp_path: Path) -> None:
    """No url is the embedded SQLite; a postgresql:// url from file or env selects PostgreSQL."""
    assert load_config(None, {}).database.is_postgres is False
    path = write(
        tmp_path, '[database]\nurl = "postgresql://t@db.example:5433/jobs"\npool_size = 4\n'
    )
    database = load_config(path, {}).database
    assert (database.url, database.pool_size, database.is_postgres) == (
        "postgresql://t@db.example:5433/jobs",
        4,
        True,
    )
    env = {"TRANSCRIBER_DATABASE_URL": "postgres:///jobs"}
    assert load_config(None, env).database.url == "postgres:///jobs"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[database]\nurl = "mysql://u:s3cret-pw@h/db"\n', r"\[database\] url: expected empty"),
        ('[database]\nurl = "postgresql://u:s3cret-pw@h:99999/db"\n', r"\[database\] url: not a"),
        ('[database]\nurl = "postgresql://u:s3cret-pw@h/d b"\n', r"\[database\] url: must not"),
        ('[database]\nurl = "s3cret-pw"\n', r"\[database\] url: expected empty"),
        ("[database]\npool_size = 0\n", r"\[database\] pool_size: must be at least 1"),
        ("[database]\nhost = 1\n", r"\[database\] host: unknown key"),
    ],
)
def test_bad_database_config_names_the_key_and_never_the_url(
    tmp_path: Path, text: str, message: str
) -> None:
    """A url that is not PostgreSQL's, or a pool of none: the key is named, the password never."""
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(write(tmp_path, text), {})
    assert "s3cret" not in str(caught.value)


def test_database_url_is_not_in_repr() -> None:
    """The url may carry a password: the config's repr leaves it out."""
    config = load_config(None, {"TRANSCRIBER_DATABASE_URL": "postgresql://u:s3cret-pw@h/db"})
    assert "s3cret" not in repr(config)


def test_telegram_mode_defaults_to_polling_and_takes_webhook_keys(tmp_path: Path) -> None:
    """[telegram] mode is polling by default; webhook mode reads its URL and secret."""
    assert load_config(write(tmp_path, ""), {}).telegram.mode == "polling"
    text = (
        '[telegram]\nmode = "webhook"\nwebhook_url = "https://bot.example.org/telegram/webhook"\n'
        'webhook_secret = "s3cret_-token"\n'
    )
    telegram = load_config(write(tmp_path, text), {}).telegram
    assert (telegram.mode, telegram.webhook_secret) == ("webhook", "s3cret_-token")
    assert "s3cret" not in repr(telegram)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('mode = "push"', "[telegram] mode"),
        ('mode = "webhook"\nwebhook_secret = "abc"', "[telegram] webhook_url"),
        (
            'mode = "webhook"\nwebhook_url = "ftp://x"\nwebhook_secret = "abc"',
            "[telegram] webhook_url",
        ),
        ('mode = "webhook"\nwebhook_url = "https://x.example"', "[telegram] webhook_secret"),
        (
            'mode = "webhook"\nwebhook_url = "https://x.example"\nwebhook_secret = "not secret!"',
            "[telegram] webhook_secret",
        ),
    ],
)
def test_telegram_mode_errors_name_the_key(tmp_path: Path, text: str, key: str) -> None:
    """A wrong mode, a webhook without a URL or with a bad secret names the key, never the value."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, f"[telegram]\n{text}\n"), {})
    assert str(info.value).startswith(key)
    assert "not secret" not in str(info.value)


def test_import_keys_from_the_file_and_env(tmp_path: Path) -> None:
    """``[import]`` (SPEC §28): 2 GiB and private addresses refused by default; both settable."""
    assert (Config().import_.max_bytes, Config().import_.allow_private) == (2 * 1024**3, False)
    path = write(tmp_path, "[import]\nmax_bytes = 1048576\n")
    config = load_config(path, {"TRANSCRIBER_IMPORT_ALLOW_PRIVATE": "true"})
    assert (config.import_.max_bytes, config.import_.allow_private) == (1024**2, True)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[import]\nmax_bytes = 0\n", "[import] max_bytes"),
        ('[import]\nmax_bytes = "big"\n', "[import] max_bytes"),
        ('[import]\nallow_private = "maybe"\n', "[import] allow_private"),
        ("[import]\nmax_byte = 1\n", "[import] max_byte"),
    ],
)
def test_a_bad_import_key_is_named(tmp_path: Path, text: str, named: str) -> None:
    """A bad ``[import]`` value or key stops loading with a message naming it."""
    with pytest.raises(ConfigError, match=named.replace("[", r"\[").replace("]", r"\]")):
        load_config(write(tmp_path, text), {})


def test_llm_is_off_without_its_section_and_on_with_it(tmp_path: Path) -> None:
    """No ``[llm]``: None (summaries off); with it, its keys, the key from the environment."""
    assert load_config(None, {}).llm is None
    path = write(tmp_path, '[llm]\nbase_url = "http://127.0.0.1:11434/v1"\nmodel = "llama3.1:8b"\n')
    config = load_config(path, {"TRANSCRIBER_LLM_API_KEY": "sk-llm-secret"})
    assert config.llm is not None
    assert (config.llm.model, config.llm.max_input_tokens, config.llm.auto_summary) == (
        "llama3.1:8b",
        8000,
        False,
    )
    assert config.llm.api_key == "sk-llm-secret"
    assert "sk-llm-secret" not in repr(config)
