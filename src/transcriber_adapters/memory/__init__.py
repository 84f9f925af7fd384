"""In-memory adapters of every port: first-class, for demos and tests.

Each passes the same contract suite as the real adapter of its port, and
offers ``reset()`` and a record of calls where a test needs to look.
"""

from transcriber_adapters.memory.budgets import MemoryBudgetStore
from transcriber_adapters.memory.chats import MemoryChatStore
from transcriber_adapters.memory.clock import ManualClock
from transcriber_adapters.memory.conditions import MemoryConditionStore
from transcriber_adapters.memory.converter import MemoryConverter
from transcriber_adapters.memory.database import MemoryDatabase
from transcriber_adapters.memory.fetcher import MemoryFetcher, Served
from transcriber_adapters.memory.files import MemoryFileStore
from transcriber_adapters.memory.jobs import MemoryJobRepository
from transcriber_adapters.memory.language_model import MemoryLanguageModel
from transcriber_adapters.memory.logins import MemoryLoginThrottle
from transcriber_adapters.memory.notifier import MemoryNotifier, Notice
from transcriber_adapters.memory.people import MemoryPeopleStore
from transcriber_adapters.memory.recognizer import MemoryRecognizer
from transcriber_adapters.memory.summaries import MemorySummaryStore
from transcriber_adapters.memory.usage import MemoryUsageStore
from transcriber_adapters.memory.voices import MemoryVoiceStore
from transcriber_adapters.memory.wakeups import MemoryWakeupFeed

__all__ = [
    "ManualClock",
    "MemoryBudgetStore",
    "MemoryChatStore",
    "MemoryConditionStore",
    "MemoryConverter",
    "MemoryDatabase",
    "MemoryFetcher",
    "MemoryFileStore",
    "MemoryJobRepository",
    "MemoryLanguageModel",
    "MemoryLoginThrottle",
    "MemoryNotifier",
    "MemoryPeopleStore",
    "MemoryRecognizer",
    "MemorySummaryStore",
    "MemoryUsageStore",
    "MemoryVoiceStore",
    "MemoryWakeupFeed",
    "Notice",
    "Served",
]
