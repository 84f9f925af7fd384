"""The ports a pipeline runs on, bundled once by the composition root."""

from __future__ import annotations

import attrs

from transcriber_core.policy import DEFAULT_SETTINGS, Settings
from transcriber_core.ports import (
    Clock,
    ConditionStore,
    Converter,
    DurationProbe,
    FileStore,
    IdSource,
    JobRepository,
    Notifier,
    Recognizer,
    WakeupFeed,
    WebhookSender,
)
from transcriber_core.wakeup import Wakeup


@attrs.frozen(kw_only=True)
class Services:
    """Everything the intake, the steps and the workers need, chosen by the app."""

    repo: JobRepository
    #: Where recordings and converted audio live.
    files: FileStore
    converter: Converter
    recognizer: Recognizer
    notifier: Notifier
    clock: Clock
    ids: IdSource
    #: Where the recognizer reads audio from (Object Storage); None: it reads ``files``.
    recognizer_files: FileStore | None = None
    #: Where workers note the service's own faults for ``/health``; None: they are only logged.
    conditions: ConditionStore | None = None
    #: Reads a recording's declared duration at intake, for its lane; None: bytes alone decide.
    probe: DurationProbe | None = None
    #: Sends webhooks (ADR 35); None: ``[webhooks] secret`` is unset and callbacks are refused.
    webhooks: WebhookSender | None = None
    #: This host's name: the scope of conditions about its own disk.
    host: str = ""
    settings: Settings = DEFAULT_SETTINGS
    #: This process's fan-out to its idle loops.
    wakeup: Wakeup = attrs.field(factory=Wakeup)
    #: Wake-ups from other processes on the same database; None: this process's own only.
    wakeup_feed: WakeupFeed | None = None
