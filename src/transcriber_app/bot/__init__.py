"""The Telegram bot: recordings in by long polling or a webhook, inside the service's lifecycle.

Split by concern: ``texts`` (what the bot replies), ``intake`` (the handlers:
check, download, submit) and ``polling`` (the lifecycle). Reading Telegram's
payloads and talking to the Bot API is the telegram adapter's work
(``transcriber_adapters.telegram``); ``submit`` tells the notifier
``accepted``, so the immediate reply and the transcript both come from
``TelegramNotifier``.

For the lifecycle: ``make_bot`` (from the adapter) and ``make_dispatcher``
build the pieces, ``BotPolling`` (or ``BotWebhook`` in webhook mode) runs
them: ``start`` after the workers, ``stop(grace)`` with the other intakes,
``close`` after the workers drained.
"""

from transcriber_app.bot.intake import BotIntake, make_dispatcher, make_router
from transcriber_app.bot.polling import BotPolling
from transcriber_app.bot.webhook import BotWebhook, Stopping

__all__ = ["BotIntake", "BotPolling", "BotWebhook", "Stopping", "make_dispatcher", "make_router"]
