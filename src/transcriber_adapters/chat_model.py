"""``OpenAIChatModel``: any OpenAI-compatible chat server through the official client (ADR 82).

Ollama, llama.cpp's server, vLLM, LM Studio and OpenAI all answer
``POST {base_url}/chat/completions``. The client's own retries are off
(``max_retries=0``): the queue owns retries (ADR 83). Its exceptions become
the core's in one place (``_translated``): 429, 5xx, a timeout or no
connection are ``ModelUnavailable``; 400, 401, 403, 404 (and any other 4xx)
``ModelRefused``. Neither carries the server's text, which may echo the
transcript; nothing of a request or an answer is logged.

JSON is asked for with ``response_format={"type": "json_object"}``; a
server that refuses that parameter with a 400 is asked again without it,
and not asked with it again (the prompts ask for JSON in words too, and the
core's parser takes JSON amid other words).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import openai
from transcriber_core.errors import ModelAnswerMalformed, ModelRefused, ModelUnavailable
from transcriber_core.summaries import Completion, Message, estimate_tokens

log = logging.getLogger("transcriber.llm")

#: A placeholder key for servers that need none (Ollama, llama.cpp): the client requires one.
NO_KEY = "unused"


class OpenAIChatModel:
    """The ``LanguageModel`` port on an OpenAI-compatible ``/chat/completions`` server."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        max_input_tokens: int = 8000,
        timeout_seconds: float = 120.0,
    ) -> None:
        """A client of the server at ``base_url`` (``.../v1``) for ``model``; no request yet."""
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or NO_KEY,
            timeout=timeout_seconds,
            max_retries=0,
        )
        self._model = model
        self._max_input_tokens = max_input_tokens
        #: Cleared when the server refuses ``response_format``: asked in words alone then.
        self.json_mode = True

    @property
    def model(self) -> str:
        """The model's name as the server knows it."""
        return self._model

    @property
    def max_input_tokens(self) -> int:
        """The most tokens one request may send."""
        return self._max_input_tokens

    async def complete(self, messages: Sequence[Message], *, want_json: bool) -> Completion:
        """The model's answer to ``messages``; errors as ``ModelUnavailable`` / ``ModelRefused``."""
        sent = [{"role": m.role, "content": m.content} for m in messages]
        if want_json and self.json_mode:
            try:
                async with _translated():
                    return await self._create(sent, json_object=True)
            except _Refused as exc:
                if exc.status != 400:
                    raise
            async with _translated():
                completion = await self._create(sent, json_object=False)
            # Taken without ``response_format``: this server does not know it.
            self.json_mode = False
            log.info("llm.json_mode_off")
            return completion
        async with _translated():
            return await self._create(sent, json_object=False)

    async def _create(self, sent: list[dict[str, str]], *, json_object: bool) -> Completion:
        extra: dict[str, Any] = {}
        if json_object:
            extra["response_format"] = {"type": "json_object"}
        response = await self._client.chat.completions.create(
            model=self._model,
            messages=sent,  # type: ignore[arg-type]
            temperature=0,
            **extra,
        )
        if not response.choices or response.choices[0].message.content is None:
            raise ModelAnswerMalformed("the language model answered no text")
        text = response.choices[0].message.content
        usage = response.usage
        if usage is not None:
            return Completion(
                text=text, tokens_in=usage.prompt_tokens, tokens_out=usage.completion_tokens
            )
        # A server that does not count: our conservative estimate.
        tokens_in = sum(estimate_tokens(m["content"]) for m in sent)
        return Completion(text=text, tokens_in=tokens_in, tokens_out=estimate_tokens(text))

    async def close(self) -> None:
        """Close the client's connections."""
        await self._client.close()


class _Refused(ModelRefused):
    """The language model's server refused the request; asking again will not help."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@asynccontextmanager
async def _translated() -> AsyncIterator[None]:
    """The client's exceptions as the core's, with the reason in our own words."""
    try:
        yield
    except openai.APITimeoutError:
        raise ModelUnavailable("the language model's server did not answer in time") from None
    except openai.APIConnectionError:
        raise ModelUnavailable("the language model's server cannot be reached") from None
    except openai.APIStatusError as exc:
        status = exc.status_code
        if status == 429 or status >= 500:
            raise ModelUnavailable(f"the language model's server answered {status}") from None
        raise _Refused(
            f"the language model's server refused the request ({status}{_why(status)})", status
        ) from None
    except openai.APIResponseValidationError:
        raise ModelAnswerMalformed("the language model's answer could not be read") from None
    except openai.OpenAIError:
        raise ModelUnavailable("the language model's server answered unexpectedly") from None


def _why(status: int) -> str:
    """A word on what an operator should check for a refusal."""
    return {
        400: ": a bad request",
        401: ": check [llm] api_key",
        403: ": check [llm] api_key",
        404: ": check [llm] base_url and model",
    }.get(status, "")
