"""What the OpenCode backend declares from the server's listings, and what a turn's options make
of its prompt (pure; test_control.py shows them with the real server)."""

from __future__ import annotations

from typing import Any

from core.backend import TurnOptions
from wrappers.opencode.control import PromptChoice, declared, prompt_choice

PROVIDERS: dict[str, Any] = {
    "providers": [
        {
            "id": "a",
            "models": {
                "m1": {"variants": {"low": {}, "high": {}}},
                "m2": {"capabilities": {"input": {"image": True}}},
            },
        },
        {"id": "b", "models": {"org/m3": {"variants": {"max": {}}}}},
    ]
}
AGENTS = [{"name": "build"}, {"name": "plan"}, {"name": "a2a-read-only"}]


def test_models_efforts_and_modes_come_from_the_server() -> None:
    found = declared(PROVIDERS, AGENTS, model="a/m1", ours=True)

    assert found.models == ("a/m1", "a/m2", "b/org/m3")
    assert found.efforts == ("low", "high")  # the configured model's variants
    assert found.modes == ("default", "plan", "readOnly")
    assert (found.steer, found.fork) == (True, True)
    assert not found.image_input  # m1 takes no images
    assert declared(PROVIDERS, AGENTS, model="a/m2", ours=True).image_input


def test_without_a_configured_model_any_variant_and_an_attached_server_offers_no_mode() -> None:
    found = declared(PROVIDERS, AGENTS, model=None, ours=False)

    assert found.efforts == ("low", "high", "max")
    assert found.modes == ("default",)


def test_options_become_the_prompts_agent_model_and_variant() -> None:
    configured = ("a", "m1")

    assert prompt_choice(TurnOptions(), agent="mine", model=configured) == PromptChoice(
        "mine", configured, None
    )
    chosen = TurnOptions(model="b/org/m3", effort="max", mode="readOnly")
    assert prompt_choice(chosen, agent="mine", model=configured) == PromptChoice(
        "a2a-read-only", ("b", "org/m3"), "max"
    )
    assert prompt_choice(TurnOptions(mode="plan"), agent=None, model=None).agent == "plan"
