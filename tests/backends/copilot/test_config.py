"""The `copilot` block: validation through the real Settings loader, and what it becomes for
the CLI (its environment) and for each session (options, message)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from core.backend import DataContent, FileContent, TextContent, Turn
from core.backend.binaries import CliNotFoundError
from core.settings import ConfigError, load
from tests.backends.copilot.conftest import BUNDLED_CLI
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.options import session_options
from wrappers.copilot.permissions import PermissionPolicy
from wrappers.copilot.prompt import build_message
from wrappers.copilot.runtime import child_env, find_cli

REPO = Path(__file__).resolve().parents[3]
BYOK = {"provider": {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "k"}, "model": "m"}


def block(**copilot: Any) -> CopilotConfig:
    settings = load(None, overrides={"backend": "copilot", "copilot": copilot}, environ={})
    assert isinstance(settings.block(CopilotConfig), CopilotConfig)
    return settings.block(CopilotConfig)


@pytest.mark.parametrize(
    ("copilot", "message"),
    [
        ({"provider": {"baseUrl": "http://x/v1"}}, "model is required with provider"),
        ({"offline": True}, "offline needs provider"),
        ({**BYOK, "githubToken": "t"}, "either provider (BYOK) or githubToken"),
        ({"env": {"COPILOT_ALLOW_ALL": "true"}}, "needs dangerouslyAllowAllTools"),
        ({"allowTools": ["shell(git"]}, "copilot.allowTools: 'shell(git' is not"),
        ({"denyTools": ["*"]}, "copilot.denyTools"),
        ({"provider": {"baseUrl": "x", "wireApi": "grpc"}, "model": "m"}, "wireApi"),
        ({"systemMessage": {"mode": "customize", "content": "x"}}, "systemMessage.mode"),
        ({"sytemMessage": {"content": "x"}}, "copilot.sytemMessage: unknown key"),
    ],
)
def test_a_bad_block_is_refused_with_its_path(copilot: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="copilot") as caught:
        block(**copilot)

    assert message in str(caught.value)


def test_empty_substitutions_mean_unset(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "backend": "copilot",
                "copilot": {
                    "githubToken": "${NO_TOKEN:-}",
                    "provider": {"baseUrl": "http://x/v1", "apiKey": "${NO_KEY:-}"},
                    "model": "m",
                },
            }
        )
    )

    config = load(path, environ={}).block(CopilotConfig)

    assert config.github_token is None
    assert config.provider is not None and config.provider.api_key is None


def test_the_shipped_config_is_valid(repo_root: Path) -> None:
    settings = load(repo_root / "config" / "copilot.json", environ={})

    assert settings.backend == "copilot"
    assert (
        settings.block(CopilotConfig).github_token is None
    )  # taken from COPILOT_GITHUB_TOKEN when set
    # No cliPath: COPILOT_CLI_PATH when set, else the pinned CLI `make` installs in .tools.
    assert settings.block(CopilotConfig).cli_path is None
    assert find_cli(settings.block(CopilotConfig), {}) == BUNDLED_CLI


def test_offline_puts_the_provider_and_model_into_the_cli_environment(tmp_path: Path) -> None:
    config = block(**BYOK, offline=True, home=str(tmp_path / "h"), env={"EXTRA": "1"})

    env = child_env(config, {"PATH": "/bin", "EXTRA": "0"})

    assert env["COPILOT_OFFLINE"] == "true"
    assert env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert env["COPILOT_PROVIDER_API_KEY"] == "k"
    assert env["COPILOT_MODEL"] == "m"
    assert env["COPILOT_HOME"] == str(tmp_path / "h")
    assert env["EXTRA"] == "1"
    assert env["PATH"] == "/bin"


def test_without_offline_the_provider_stays_per_session() -> None:
    env = child_env(block(**BYOK), {})

    assert "COPILOT_OFFLINE" not in env
    assert "COPILOT_PROVIDER_BASE_URL" not in env
    assert "COPILOT_HOME" not in env  # the user's own ~/.copilot: `copilot --resume` works


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_without_cli_path_the_cli_is_the_pinned_install_in_tools(tmp_path: Path) -> None:
    on_path = executable(tmp_path / "bin" / "copilot")

    # Even with another `copilot` on PATH: the pinned install comes first.
    assert find_cli(block(), {"PATH": str(on_path.parent)}) == BUNDLED_CLI
    assert find_cli(block(), {"PATH": str(tmp_path / "empty")}) == BUNDLED_CLI


def test_cli_path_then_copilot_cli_path_then_the_pinned_install(tmp_path: Path) -> None:
    configured = executable(tmp_path / "configured" / "copilot")
    variable = executable(tmp_path / "variable" / "copilot")
    in_env_block = executable(tmp_path / "env-block" / "copilot")
    environ = {"COPILOT_CLI_PATH": str(variable)}

    assert find_cli(block(cliPath=str(configured)), environ) == configured
    assert find_cli(block(), environ) == variable
    assert find_cli(block(env={"COPILOT_CLI_PATH": str(in_env_block)}), environ) == in_env_block


def test_a_broken_override_is_reported_and_never_falls_back(tmp_path: Path) -> None:
    missing = tmp_path / "missing"

    with pytest.raises(CliNotFoundError, match=r"copilot\.cliPath .*missing is not an exec"):
        find_cli(block(cliPath=str(missing)), {"COPILOT_CLI_PATH": str(BUNDLED_CLI)})
    with pytest.raises(CliNotFoundError, match=r"COPILOT_CLI_PATH .*missing is not an exec"):
        find_cli(block(), {"COPILOT_CLI_PATH": str(missing)})


def test_session_options_carry_provider_prompt_mcp_and_the_policy(tmp_path: Path) -> None:
    config = block(
        **BYOK,
        workingDirectory=str(tmp_path),
        systemMessage={"mode": "replace", "content": "Be terse."},
        mcpServers={
            "echo": {"type": "stdio", "command": "python3", "args": ["echo.py"], "env": {"A": "1"}},
            "docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"X": "y"}},
        },
    )
    policy = PermissionPolicy(tmp_path)

    options = session_options(config, policy.handler)

    assert options["provider"] == {
        "type": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "wire_api": "completions",
        "api_key": "k",
    }
    assert options["model"] == "m"
    assert options["streaming"] is True
    assert options["working_directory"] == str(tmp_path.resolve())
    assert options["system_message"] == {"mode": "replace", "content": "Be terse."}
    assert options["mcp_servers"] == {
        "echo": {
            "type": "stdio",
            "command": "python3",
            "args": ["echo.py"],
            "env": {"A": "1"},
            "tools": ["*"],
        },
        "docs": {
            "type": "http",
            "url": "https://docs.example/mcp",
            "headers": {"X": "y"},
            "tools": ["*"],
        },
    }
    assert options["on_permission_request"] == policy.handler


def test_a_github_session_has_no_provider_and_the_agents_model() -> None:
    options = session_options(block(), PermissionPolicy(Path(".")).handler)

    assert "provider" not in options
    assert "model" not in options


def turn(*parts: TextContent | FileContent | DataContent) -> Turn:
    return Turn("p", "ctx", "task", "msg", None, parts)


def test_a_message_is_the_text_with_files_attached() -> None:
    prompt, attachments = build_message(
        turn(
            TextContent("Look at these."),
            FileContent(data=b"\x89PNG", name="shot.png", media_type="image/png"),
            FileContent(url="file:///srv/a%20b/notes.txt"),
            FileContent(url="https://example.com/spec.pdf", name="spec"),
            DataContent({"k": [1, 2]}),
        )
    )

    assert prompt.split("\n\n")[0] == "Look at these."
    assert "Attached file spec: https://example.com/spec.pdf" in prompt
    assert json.dumps({"k": [1, 2]}, indent=2) in prompt
    assert attachments == [
        {
            "type": "blob",
            "data": base64.b64encode(b"\x89PNG").decode(),
            "mimeType": "image/png",
            "displayName": "shot.png",
        },
        {"type": "file", "path": "/srv/a b/notes.txt", "displayName": "notes.txt"},
    ]
