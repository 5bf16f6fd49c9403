"""What the Codex backend declares (from the app-server's model list, or without it) and the
settings each `turn/start` states (pure; the real binary's side is in test_control.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.backend import NO_OPTIONS, Mode, TextContent, Turn, TurnOptions
from core.settings import load
from wrappers.codex.config import CodexConfig
from wrappers.codex.control import READ_ONLY, Catalogue, capabilities, turn_settings
from wrappers.codex.threads import WarmThread

CATALOGUE = Catalogue(
    listed=("gpt-6-sol", "gpt-5.5"),
    default_model="gpt-6-sol",
    efforts={"gpt-6-sol": ("low", "max"), "gpt-5.5": ("low", "medium", "high")},
    default_effort={"gpt-6-sol": "low", "gpt-5.5": "medium"},
    images={"gpt-6-sol": True, "gpt-5.5": False},
)
WORKSPACE_WRITE = {"type": "workspaceWrite", "writableRoots": [], "networkAccess": False}


def block(tmp_path: Path, **keys: Any) -> CodexConfig:
    keys.setdefault("workingDirectory", str(tmp_path))
    overrides = {"backend": "codex", "codex": keys}
    return load(None, overrides=overrides, environ={}).block(CodexConfig)


def turn(options: TurnOptions = NO_OPTIONS, **extra: Any) -> Turn:
    return Turn("p", "c", "t", "m", None, (TextContent("hi"),), options=options, **extra)


def test_with_openais_own_provider_the_models_are_the_catalogues(tmp_path: Path) -> None:
    declared = capabilities(block(tmp_path, model="gpt-5.5"), CATALOGUE)

    assert declared.models == ("gpt-6-sol", "gpt-5.5")
    assert declared.efforts == ("low", "medium", "high")
    assert not declared.image_input
    assert declared.steer and declared.fork


def test_a_configured_model_outside_the_catalogue_is_declared_too(tmp_path: Path) -> None:
    declared = capabilities(block(tmp_path, model="my-tuned", reasoningEffort="low"), CATALOGUE)

    assert declared.models == ("gpt-6-sol", "gpt-5.5", "my-tuned")
    # Not in the catalogue: the efforts the config block itself takes.
    assert declared.efforts == ("none", "minimal", "low", "medium", "high", "xhigh")


def test_without_a_model_list_only_what_can_be_reset_is_declared(tmp_path: Path) -> None:
    declared = capabilities(block(tmp_path), None)

    assert declared.models == ()
    # No configured effort and no catalogue default: a turn's effort could not be undone.
    assert declared.efforts == ()
    assert declared.modes == ("default", "plan", "readOnly")


def test_a_custom_provider_takes_any_model_name(tmp_path: Path) -> None:
    config = block(tmp_path, config={"model_provider": "mine", "model_providers": {"mine": {}}})

    assert capabilities(config, CATALOGUE).models is None


def test_a_turn_without_options_states_the_configured_settings(tmp_path: Path) -> None:
    thread = WarmThread("th", "gpt-5.5", WORKSPACE_WRITE)

    params = turn_settings(block(tmp_path), CATALOGUE, thread, turn())

    # No model configured: Codex's default model, with its default effort.
    assert params["model"] == "gpt-6-sol"
    assert params["effort"] == "low"
    assert params["sandboxPolicy"] == WORKSPACE_WRITE
    assert params["approvalPolicy"] == "never"
    assert params["collaborationMode"]["mode"] == "default"


def test_a_chosen_model_takes_its_own_default_effort(tmp_path: Path) -> None:
    thread = WarmThread("th", "gpt-5.5", WORKSPACE_WRITE)
    options = TurnOptions(model="gpt-5.5")

    params = turn_settings(block(tmp_path), CATALOGUE, thread, turn(options))

    assert (params["model"], params["effort"]) == ("gpt-5.5", "medium")
    assert params["collaborationMode"]["settings"] == {
        "model": "gpt-5.5",
        "reasoning_effort": "medium",
        "developer_instructions": None,
    }


def test_read_only_and_plan_confine_the_sandbox_and_never_ask(tmp_path: Path) -> None:
    thread = WarmThread("th", "gpt-5.5", WORKSPACE_WRITE)
    config = block(tmp_path, model="gpt-5.5")

    confined: tuple[Mode, ...] = ("readOnly", "plan")
    for mode in confined:
        options = TurnOptions(mode=mode)
        params = turn_settings(config, CATALOGUE, thread, turn(options, approvals="ask"))

        assert params["sandboxPolicy"] == READ_ONLY
        assert params["approvalPolicy"] == "never"
        assert "approvalsReviewer" not in params
        assert params["collaborationMode"]["mode"] == ("plan" if mode == "plan" else "default")
    asking = turn_settings(config, CATALOGUE, thread, turn(approvals="ask"))
    assert (asking["approvalPolicy"], asking["approvalsReviewer"]) == ("on-request", "user")
