"""``MemoryLanguageModel``: a chat model in memory that answers from a script (ADR 82).

For demos and tests: it records every request (``calls``), answers each
with the next scripted answer (a text, or an exception the core knows) and,
when the script is empty, with a summary or an answer made from the
transcript lines it was sent, so it works without a script at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from transcriber_core.errors import ModelUnavailable
from transcriber_core.summaries import Completion, Message, estimate_tokens, request_tokens

#: A transcript line as ``summaries.Line.render`` writes it: its number and its words.
_LINE = re.compile(r"^\[(\d+)\] \d\d:\d\d:\d\d (?:([^:\n]+): )?(.*)$", re.MULTILINE)


class MemoryLanguageModel:
    """The ``LanguageModel`` port in memory, scripted; a request over the limit is refused."""

    def __init__(
        self,
        *,
        model: str = "memory",
        max_input_tokens: int = 8000,
        answers: Sequence[str | Exception] = (),
    ) -> None:
        self._model = model
        self._max_input_tokens = max_input_tokens
        self.script: list[str | Exception] = list(answers)
        #: Every request's messages, in order.
        self.calls: list[tuple[Message, ...]] = []

    @property
    def model(self) -> str:
        """The model's name."""
        return self._model

    @property
    def max_input_tokens(self) -> int:
        """The most tokens one request may send."""
        return self._max_input_tokens

    def reset(self) -> None:
        """Forget the script and the calls."""
        self.script.clear()
        self.calls.clear()

    async def complete(self, messages: Sequence[Message], *, want_json: bool) -> Completion:
        """The next scripted answer, or one made from the request; raises a scripted error."""
        self.calls.append(tuple(messages))
        tokens_in = request_tokens(messages)
        if tokens_in > self._max_input_tokens:
            raise ModelUnavailable("the request is over the model's input limit")
        if self.script:
            answer = self.script.pop(0)
            if isinstance(answer, Exception):
                raise answer
        else:
            answer = made_up(messages)
        return Completion(text=answer, tokens_in=tokens_in, tokens_out=estimate_tokens(answer))


def made_up(messages: Sequence[Message]) -> str:
    """An answer in the shape the request asks for, from the lines it carries."""
    body = messages[-1].content if messages else ""
    system = messages[0].content if messages else ""
    lines = _LINE.findall(body)
    if '"answer"' in system:
        cited = [int(lines[0][0])] if lines else []
        return json.dumps({"answer": "From the transcript.", "lines": cited})
    speakers = sorted({who for _, who, _ in lines if who})
    words = " ".join(said for _, _, said in lines)[:200] or body[:200]
    return json.dumps(
        {
            "text": words,
            "points": [said for _, _, said in lines[:3]],
            "actions": [{"text": "follow up", "who": speakers[0] if speakers else None}],
        },
        ensure_ascii=False,
    )
