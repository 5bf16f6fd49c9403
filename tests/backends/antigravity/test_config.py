"""The `antigravity` block: validation through the real Settings loader, what it becomes for the
SDK (endpoint, state, tools), what `check` says of it, and how the capability switches decide a
tool call in the pre-tool hook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from google.antigravity import types

from core.settings import ConfigError, load
from wrappers.antigravity import options
from wrappers.antigravity.approvals import Gate
from wrappers.antigravity.config import AntigravityConfig
from wrappers.antigravity.diagnose import diagnose
from wrappers.antigravity.harness import GoogleAgentConfig, OpenAIAgentConfig

# The SDK wants conversation ids of 32 characters at least (ours: uuid4 hex).
CONVERSATION = "0123456789abcdef" * 2
ENDPOINT = {"kind": "openai", "baseUrl": "http://127.0.0.1:9/v1"}
OPENAI: dict[str, Any] = {"endpoint": ENDPOINT, "model": "m"}


def block(**antigravity: Any) -> AntigravityConfig:
    settings = load(
        None, overrides={"backend": "antigravity", "antigravity": antigravity}, environ={}
    )
    return settings.block(AntigravityConfig)


@pytest.mark.parametrize(
    ("antigravity", "message"),
    [
        ({"endpoint": {"kind": "openai"}, "model": "m"}, "endpoint.baseUrl is required"),
        ({"endpoint": {"kind": "openai", "baseUrl": "http://x/v1"}}, "model is required"),
        ({**OPENAI, "endpoint": {**ENDPOINT, "apiKey": "k"}}, "not supported"),
        ({"endpoint": {"kind": "gemini", "project": "p"}}, "only apply to kind vertex"),
        ({"endpoint": {"kind": "vertex", "apiKey": "k", "location": "l"}}, "not both"),
        ({"endpoint": {"kind": "azure"}}, "antigravity.endpoint.kind"),
        ({"commands": "sometimes"}, "antigravity.commands"),
        ({"fileWrite": "allow"}, "antigravity.fileWrite: unknown key"),
    ],
)
def test_a_bad_block_is_refused_with_its_path(antigravity: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="antigravity") as caught:
        block(**antigravity)

    assert message in str(caught.value)


def test_the_shipped_config_is_valid(repo_root: Path) -> None:
    config = load(repo_root / "config" / "antigravity.json", environ={}).block(AntigravityConfig)

    assert config.endpoint.kind == "gemini"
    assert config.endpoint.api_key is None, "an empty ${GEMINI_API_KEY:-} is unset"
    assert config.commands == "ask"


def test_an_openai_endpoint_is_the_sdks_openai_config_with_our_state(tmp_path: Path) -> None:
    config = block(**OPENAI, home=str(tmp_path / "state"), workingDirectory=str(tmp_path))

    sdk = options.agent_config(config, CONVERSATION, [], environ={})

    assert isinstance(sdk, OpenAIAgentConfig)
    assert (sdk.model, sdk.base_url) == ("m", "http://127.0.0.1:9/v1")
    assert sdk.conversation_id == CONVERSATION
    assert sdk.session_continuation_mode == types.SessionContinuationMode.CREATE_OR_RESUME
    assert sdk.save_dir == str(tmp_path / "state" / "conversations")
    assert sdk.app_data_dir == str(tmp_path / "state")
    assert sdk.workspaces == [str(tmp_path)]
    assert sdk.env[options.HARNESS_VARIABLE].endswith("localharness")


def test_gemini_takes_its_key_from_the_environment_and_vertex_its_project() -> None:
    gemini = options.agent_config(block(), CONVERSATION, [], environ={"GEMINI_API_KEY": "g-key"})
    vertex = options.agent_config(
        block(endpoint={"kind": "vertex", "project": "p", "location": "europe-west4"}),
        CONVERSATION,
        [],
        environ={},
    )

    assert isinstance(gemini, GoogleAgentConfig)
    assert gemini.api_key == "g-key" and not gemini.vertex
    assert vertex.vertex and (vertex.project, vertex.location) == ("p", "europe-west4")
    assert isinstance(vertex.models[0].endpoint, types.VertexEndpoint)


def test_a_gemini_base_url_names_an_explicit_model_on_that_endpoint() -> None:
    config = block(endpoint={"baseUrl": "http://proxy:8080", "apiKey": "k"}, model="gemini-x")

    sdk = options.agent_config(config, CONVERSATION, [], environ={})

    text = next(m for m in sdk.models if types.ModelType.TEXT in m.types)
    assert text.name == "gemini-x"
    assert text.endpoint.base_url == "http://proxy:8080"
    assert text.endpoint.api_key == "k"


def test_denied_capabilities_remove_their_tools() -> None:
    config = block(**OPENAI, commands="deny", fileWrites="deny", subagents="deny")

    capabilities = options.capabilities(config)

    assert set(capabilities.disabled_tools) == {
        types.BuiltinTools.RUN_COMMAND,
        types.BuiltinTools.CREATE_FILE,
        types.BuiltinTools.EDIT_FILE,
    }
    assert capabilities.enable_subagents is False
    assert options.capabilities(block(**OPENAI)).disabled_tools is None


def decide(config: AntigravityConfig, name: str, **args: Any) -> Any:
    gate = Gate(config, lambda: None)
    call = types.ToolCall(name=name, args=args, id="call-1")
    return anyio.run(gate.run, None, call)


def test_in_policy_mode_an_ask_tool_is_refused_with_the_key_that_allows_it() -> None:
    refused = decide(block(**OPENAI), "run_command", CommandLine="ls")

    assert refused.allow is False
    assert "approvals.mode policy" in refused.message
    assert "antigravity.commands: allow" in refused.message


def test_allowed_and_ungoverned_tools_pass_and_denied_ones_are_refused() -> None:
    config = block(**OPENAI, commands="allow", fileWrites="deny")

    assert decide(config, "run_command", CommandLine="ls").allow
    assert decide(config, "view_file", AbsolutePath="/x").allow
    assert not decide(config, "edit_file", file_path="/x").allow
    assert "antigravity.fileWrites: deny" in decide(config, "write_to_file").message


def test_check_reports_the_runtime_and_credentials_without_their_values() -> None:
    secret = "AIza-not-a-real-key"  # noqa: S105 - a fake key, to check it is never shown
    lines = anyio.run(diagnose, block(), {"GEMINI_API_KEY": secret, "PATH": "/usr/bin"})

    runtime, credentials = lines
    assert runtime.ok and "localharness" in runtime.detail and "0.1.22" in runtime.detail
    assert credentials.ok and "GEMINI_API_KEY" in credentials.detail
    assert all(secret not in line.detail for line in lines)
    (missing,) = anyio.run(diagnose, block(), {"PATH": "/usr/bin"})[1:]
    assert not missing.ok and "GEMINI_API_KEY" in missing.detail
