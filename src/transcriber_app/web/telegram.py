"""``POST /telegram/webhook``: Telegram's updates in webhook mode (``[telegram] mode``, ADR 53).

The secret header is checked first (401 ``bad_webhook_secret``, nothing
read or processed); the update then goes to the bot's dispatcher, and 200
is answered once its intake finished. Not part of the integrators' API: it
is not in the OpenAPI document.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from transcriber_app.web.errors import ApiError, error_response
from transcriber_app.web.streams import read_json_object

log = logging.getLogger("transcriber.bot")

#: The header Telegram sends the ``secret_token`` of ``setWebhook`` in.
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name, not a secret
#: An update is a few kilobytes; anything past this is not Telegram's.
MAX_UPDATE_BYTES = 1024 * 1024
#: The code of a body that is not an update (not JSON, not an object, not Telegram's shape).
BAD_UPDATE = "bad_update"


def routes() -> list[Route]:
    """The webhook route; it answers 404 unless the bot runs in webhook mode."""
    return [Route("/telegram/webhook", telegram_webhook, methods=["POST"])]


async def telegram_webhook(request: Request) -> Response:
    """Check the secret, hand the update to the bot, answer once its intake finished."""
    from transcriber_app.bot import BotWebhook, Stopping  # noqa: PLC0415 - aiogram only with a bot

    hook = request.app.state.runtime.bot
    if not isinstance(hook, BotWebhook):
        return error_response(ApiError(404, "not_found", "the bot does not take webhooks here"))
    if not hook.accepts(request.headers.get(SECRET_HEADER)):
        log.warning("bot.webhook_refused")
        return error_response(
            ApiError(401, "bad_webhook_secret", f"{SECRET_HEADER} is missing or wrong")
        )
    try:
        # JSON by the rules of every body (nesting, lone surrogates: ``inputs.decode_json``).
        data = await read_json_object(request, max_bytes=MAX_UPDATE_BYTES, code=BAD_UPDATE)
        await hook.handle(data)
    except ApiError as exc:
        refused = exc
    except ValueError:
        refused = ApiError(400, BAD_UPDATE, "the body is not a Telegram update")
    except Stopping:
        # Telegram tries again later: this process or another takes it then.
        refused = ApiError(503, "stopping", "the service is stopping")
    except ClientDisconnect:
        return Response(status_code=400)
    else:
        return JSONResponse({})
    return error_response(refused)
