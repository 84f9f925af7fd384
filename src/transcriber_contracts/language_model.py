"""The contract every LanguageModel adapter passes (SPEC §27, ADR 82).

Use it from your own tests::

    class TestMyModel(LanguageModelContract):
        @pytest.fixture
        async def case(self):
            server = await start_my_fake()
            yield ModelCase(model=MyModel(server.url), driver=MyDriver(server))
            await server.close()

The driver scripts what the model's server answers next; the suite checks
that answers come back with their token counts, and that every failure is
the core's own error, classified for the queue: what may pass is
``ModelUnavailable``, what will not is ``ModelRefused``, and neither
carries a word of what was sent.
"""

from __future__ import annotations

from typing import Protocol

import attrs
import pytest

from transcriber_core.errors import ModelRefused, ModelUnavailable
from transcriber_core.ports import LanguageModel
from transcriber_core.summaries import Message

#: A word only the request carries: no error may repeat it.
SECRET_WORD = "Zanzibar-4471"  # noqa: S105 - a word to look for, not a password
MESSAGES = (
    Message(role="system", content="Answer with one JSON object."),
    Message(role="user", content=f"[1] 00:00:01 Diane: we meet in {SECRET_WORD} on friday"),
)


class ModelDriver(Protocol):
    """Scripts what the language model's server will answer next."""

    def answer_next(self, text: str) -> None:
        """The next request is answered ``text``."""
        ...

    def fail_next(self, status: int) -> None:
        """The next request is answered this HTTP status (429, 500, 401, ...)."""
        ...


@attrs.frozen(kw_only=True)
class ModelCase:
    """What the suite needs: the adapter and its server's driver."""

    model: LanguageModel
    driver: ModelDriver


class LanguageModelContract:
    """Subclass and provide the fixture ``case`` (module docstring)."""

    async def test_an_answer_comes_back_with_its_costs(self, case: ModelCase) -> None:
        """The scripted answer's text comes back whole, with tokens counted both ways."""
        case.driver.answer_next('{"text": "Встреча в пятницу.", "points": [], "actions": []}')
        completion = await case.model.complete(MESSAGES, want_json=True)
        assert completion.text == '{"text": "Встреча в пятницу.", "points": [], "actions": []}'
        assert completion.tokens_in > 0
        assert completion.tokens_out > 0

    async def test_plain_text_may_be_asked_for(self, case: ModelCase) -> None:
        """Without ``want_json`` the answer is whatever the model said."""
        case.driver.answer_next("Friday.")
        completion = await case.model.complete(MESSAGES, want_json=False)
        assert completion.text == "Friday."

    @pytest.mark.parametrize("status", [429, 500, 502, 503])
    async def test_what_may_pass_is_unavailable(self, case: ModelCase, status: int) -> None:
        """Throttling and server errors are ``ModelUnavailable``: the queue asks again later."""
        case.driver.fail_next(status)
        with pytest.raises(ModelUnavailable) as caught:
            await case.model.complete(MESSAGES, want_json=False)
        assert SECRET_WORD not in str(caught.value)

    @pytest.mark.parametrize("status", [400, 401, 403, 404])
    async def test_what_will_not_pass_is_refused(self, case: ModelCase, status: int) -> None:
        """A bad request, key or model is ``ModelRefused``: asking again would not help."""
        case.driver.fail_next(status)
        with pytest.raises(ModelRefused) as caught:
            await case.model.complete(MESSAGES, want_json=False)
        assert SECRET_WORD not in str(caught.value)
        assert str(status) in caught.value.message

    async def test_a_failure_does_not_stick(self, case: ModelCase) -> None:
        """After a failed request the next one is answered as usual."""
        case.driver.fail_next(503)
        with pytest.raises(ModelUnavailable):
            await case.model.complete(MESSAGES, want_json=False)
        case.driver.answer_next("ok")
        assert (await case.model.complete(MESSAGES, want_json=False)).text == "ok"
