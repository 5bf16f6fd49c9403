"""What a SendMessage asks of conversation control is read once, from the request's metadata
or else the message's, and checked against what callers may choose
(core/engine/control/requested.py)."""

from __future__ import annotations

from typing import Any

import pytest

from core.backend import TurnOptions
from core.backend.control import Capabilities
from core.engine.control.requested import NO_CONTROL, Control, control_of, turn_options
from core.wire.errors import InvalidParamsError
from core.wire.models import SendMessageRequest


def request(metadata: Any = None, message_metadata: Any = None) -> SendMessageRequest:
    message: dict[str, Any] = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    if message_metadata is not None:
        message["metadata"] = message_metadata
    body: dict[str, Any] = {"message": message}
    if metadata is not None:
        body["metadata"] = metadata
    return SendMessageRequest.model_validate(body)


def test_the_request_metadata_wins_over_the_message_and_other_keys_are_ignored() -> None:
    asked = request(
        {"a2aWrapper": {"delivery": "queue", "mode": "plan", "origin": "x"}},
        {"a2aWrapper": {"delivery": "steer"}},
    )
    inline = request(message_metadata={"a2aWrapper": {"forkFrom": "ctx-1", "model": "m"}})

    assert control_of(asked) == Control("queue", None, TurnOptions(None, None, "plan"))
    assert control_of(inline) == Control(
        None, "ctx-1", TurnOptions("m"), "message.metadata.a2aWrapper"
    )
    assert control_of(request({"other": 1})) is NO_CONTROL


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ("steer", "metadata.a2aWrapper"),
        ({"delivery": "now"}, "metadata.a2aWrapper.delivery"),
        ({"mode": "yolo"}, "metadata.a2aWrapper.mode"),
        ({"forkFrom": ""}, "metadata.a2aWrapper.forkFrom"),
        ({"model": 3}, "metadata.a2aWrapper.model"),
    ],
)
def test_a_value_this_daemon_does_not_know_is_invalid_params_naming_its_field(
    section: Any, field: str
) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        control_of(request({"a2aWrapper": section}))

    assert [f for f, _ in refused.value.violations] == [field]


def test_options_are_checked_against_what_callers_may_choose_then_defaulted() -> None:
    allowed = Capabilities(models=("a", "b"), efforts=("low",), modes=("default", "plan"))
    defaults = TurnOptions("a", "low", "default")

    chosen = turn_options(Control(options=TurnOptions(model="b")), allowed, defaults)
    with pytest.raises(InvalidParamsError) as refused:
        turn_options(Control(options=TurnOptions("c", "high", "readOnly")), allowed, defaults)

    assert chosen == TurnOptions("b", "low", "default")
    assert [f for f, _ in refused.value.violations] == [
        "metadata.a2aWrapper.model",
        "metadata.a2aWrapper.effort",
        "metadata.a2aWrapper.mode",
    ]
    assert "'a', 'b'" in refused.value.message
