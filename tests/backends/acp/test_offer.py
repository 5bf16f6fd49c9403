"""What an ACP session's open response offers a turn (wrappers/acp/control.py), read from the
shapes the spec allows: config options (flat or grouped selects) over the older `modes` and
the unstable `models`; and which requests bring a session to what a turn wants."""

from __future__ import annotations

from typing import Any

from core.backend import TurnOptions
from wrappers.acp.control import Choice, Choices, Control, offer_of

COPILOT_LIKE = {
    "sessionId": "s1",
    "configOptions": [
        {
            "type": "select",
            "id": "mode",
            "category": "mode",
            "currentValue": "agent",
            "options": [{"value": "agent"}, {"value": "plan"}],
        },
        {
            "type": "select",
            "id": "effort",
            "category": "thought_level",
            "currentValue": "medium",
            "options": [
                {"group": "fast", "options": [{"value": "low"}]},
                {"group": "deep", "options": [{"value": "medium"}, {"value": "high"}]},
            ],
        },
        {"type": "boolean", "id": "allow", "category": "model", "currentValue": False},
    ],
    "modes": {"currentModeId": "agent", "availableModes": [{"id": "agent"}, {"id": "plan"}]},
    "models": {"currentModelId": "m1", "availableModels": [{"modelId": "m1"}, {"modelId": "m2"}]},
}


def test_config_options_win_over_modes_and_the_model_list_fills_what_they_leave() -> None:
    offer = offer_of(COPILOT_LIKE)

    assert offer.choices == {
        "mode": Choice("session/set_config_option", ("agent", "plan"), "mode"),
        "effort": Choice("session/set_config_option", ("low", "medium", "high"), "effort"),
        "model": Choice("session/set_model", ("m1", "m2")),
    }
    assert offer.current == {"mode": "agent", "effort": "medium", "model": "m1"}


def test_a_response_without_choices_offers_nothing() -> None:
    assert offer_of({"sessionId": "s"}).choices == {}
    assert offer_of(None).choices == {}


async def test_a_turn_sets_what_it_chose_and_the_next_turn_sets_the_configured_ones() -> None:
    offer = offer_of(COPILOT_LIKE)
    control = Control(offer, ("plan",), {"model": "m1"}, fork=False, resume=True, image=False)
    assert control.capabilities().modes == ("default", "plan", "readOnly")
    assert control.capabilities().efforts == ("low", "medium", "high")
    sent: list[tuple[str, dict[str, Any]]] = []

    async def request(method: str, params: dict[str, Any]) -> Any:
        sent.append((method, params))
        return {}

    session = Choices.of(offer, offer)
    options = TurnOptions(model="m2", effort="high", mode="readOnly")
    await session.bring_to("s1", control.wanted(options), request)
    await session.bring_to("s1", control.wanted(options), request)  # nothing left to set
    chosen = list(sent)
    sent.clear()
    await session.bring_to("s1", control.wanted(TurnOptions()), request)

    assert chosen == [
        ("session/set_config_option", {"sessionId": "s1", "configId": "mode", "value": "plan"}),
        ("session/set_model", {"sessionId": "s1", "modelId": "m2"}),
        ("session/set_config_option", {"sessionId": "s1", "configId": "effort", "value": "high"}),
    ]
    assert sent == [
        ("session/set_config_option", {"sessionId": "s1", "configId": "mode", "value": "agent"}),
        ("session/set_model", {"sessionId": "s1", "modelId": "m1"}),
        ("session/set_config_option", {"sessionId": "s1", "configId": "effort", "value": "medium"}),
    ]


def test_an_agent_without_a_known_edit_free_mode_declares_default_only() -> None:
    control = Control(offer_of(COPILOT_LIKE), (), {}, fork=True, resume=False, image=True)

    assert control.capabilities().modes == ("default",)
    assert control.wanted(TurnOptions(mode="default")) == {
        "mode": "agent",
        "effort": "medium",
        "model": "m1",
    }
