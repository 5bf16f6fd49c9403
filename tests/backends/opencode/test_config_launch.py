"""The `opencode` config block and what the daemon asks of `opencode serve` (pure)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.settings import ConfigError, load
from wrappers.opencode import create
from wrappers.opencode.config import OpencodeConfig
from wrappers.opencode.launch import (
    build_launch,
    find_binary,
    opencode_config,
    session_permission,
)


def settings(**block: Any) -> OpencodeConfig:
    loaded = load(None, overrides={"backend": "opencode", "opencode": block}, environ={})
    return loaded.block(OpencodeConfig)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"unknown": 1}, "opencode.unknown: unknown key"),
        ({"permission": {"edit": "sometimes"}}, "opencode.permission.edit"),
        (
            {"permission": {"external_directory": "allow"}},
            "set dangerouslyAllowExternalDirectory: true",
        ),
        ({"model": "just-a-model"}, "must be 'provider/model'"),
        (
            {"serverUrl": "http://127.0.0.1:4096", "config": {"model": "a/b"}},
            "config: only for a server the daemon starts",
        ),
        ({"maxRetries": -1}, "opencode.maxRetries"),
    ],
)
def test_invalid_blocks_are_refused_naming_the_key(block: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="opencode") as raised:
        settings(**block)
    assert message in str(raised.value)


def test_ask_is_kept_for_the_caller_to_answer() -> None:
    block = settings(permission={"bash": {"git *": "allow", "*": "ask"}})
    assert opencode_config(block)["permission"]["bash"] == {"git *": "allow", "*": "ask"}


def test_dangerous_external_directory_needs_the_explicit_flag() -> None:
    block = settings(
        permission={"external_directory": "allow"}, dangerouslyAllowExternalDirectory=True
    )
    assert block.permission_map()["external_directory"] == "allow"


def test_inline_config_gets_the_block_keys_and_headless_defaults() -> None:
    block = settings(
        model="mock/m1",
        config={"provider": {"mock": {"npm": "@ai-sdk/openai-compatible"}}, "share": "manual"},
        permission={"bash": {"rm *": "deny", "*": "allow"}},
        mcpServers={
            "files": {"type": "stdio", "command": "python3", "args": ["srv.py"], "env": {"A": "1"}},
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
        },
    )

    merged = opencode_config(block)

    assert merged["model"] == "mock/m1"
    assert merged["share"] == "manual"  # the user's inline value wins over our default
    assert merged["autoupdate"] is False
    assert merged["provider"] == {"mock": {"npm": "@ai-sdk/openai-compatible"}}
    assert merged["permission"] == {
        "question": "deny",
        "external_directory": "deny",
        "doom_loop": "deny",
        "bash": {"rm *": "deny", "*": "allow"},
    }
    assert merged["mcp"] == {
        "files": {
            "type": "local",
            "command": ["python3", "srv.py"],
            "environment": {"A": "1"},
            "enabled": True,
        },
        "web": {
            "type": "remote",
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"X": "y"},
            "enabled": True,
        },
    }
    assert {"permission": "bash", "pattern": "rm *", "action": "deny"} in session_permission(block)


def test_the_mode_agents_deny_every_writer_over_the_users_own_agent_settings() -> None:
    block = settings(
        config={
            "agent": {"plan": {"model": "mock/m2", "permission": {"webfetch": "deny"}}},
            "mcp": {"inline": {"type": "remote", "url": "http://127.0.0.1:9/mcp"}},
        },
        mcpServers={"files": {"type": "stdio", "command": "python3"}},
    )

    agents = opencode_config(block)["agent"]

    denied = {"edit", "bash", "task", "inline_*", "files_*"}
    assert agents["plan"]["model"] == "mock/m2"  # the user's plan agent, locked
    assert agents["plan"]["permission"] == {"webfetch": "deny"} | dict.fromkeys(denied, "deny")
    assert agents["a2a-read-only"]["mode"] == "primary"
    assert agents["a2a-read-only"]["permission"] == dict.fromkeys(denied, "deny")


def test_launch_is_loopback_port_zero_with_a_password_private_state_and_quiet_switches(
    tmp_path: Path,
) -> None:
    block = settings(
        workingDirectory=str(tmp_path), home=str(tmp_path / "home"), env={"EXTRA": "x"}
    )

    launch = build_launch(block, Path("/bin/opencode"), "pw-1", environ={"PATH": "/usr/bin"})

    assert launch.argv == ["/bin/opencode", "serve", "--hostname", "127.0.0.1", "--port", "0"]
    assert launch.cwd == tmp_path.resolve()
    env = launch.env
    assert env["OPENCODE_SERVER_PASSWORD"] == "pw-1"  # noqa: S105 - a test value
    assert env["XDG_DATA_HOME"] == str((tmp_path / "home" / "data").resolve())
    assert env["XDG_CONFIG_HOME"] == str((tmp_path / "home" / "config").resolve())
    assert env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert env["npm_config_registry"] == "http://127.0.0.1:9/"
    assert env["EXTRA"] == "x"
    assert env["PATH"] == "/usr/bin"
    assert json.loads(env["OPENCODE_CONFIG_CONTENT"])["permission"]["question"] == "deny"


def test_env_may_override_the_quiet_switches(tmp_path: Path) -> None:
    block = settings(env={"npm_config_registry": "https://registry.example/"})
    launch = build_launch(block, Path("/bin/opencode"), "pw", environ={})
    assert launch.env["npm_config_registry"] == "https://registry.example/"


def test_without_home_opencode_uses_the_users_own_state() -> None:
    launch = build_launch(settings(), Path("/bin/opencode"), "pw", environ={"HOME": "/home/u"})
    assert "XDG_DATA_HOME" not in launch.env


def test_a_missing_binary_is_reported_with_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="the opencode binary was not found") as raised:
        find_binary(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(raised.value)


def test_resume_command_opens_the_session_in_the_terminal(tmp_path: Path) -> None:
    plain = create(settings())
    private = create(settings(home=str(tmp_path / "h")))

    assert plain.resume_command("ses_1") == "opencode --session ses_1"
    command = private.resume_command("ses_1")
    assert command.endswith(" opencode --session ses_1")
    assert f"XDG_DATA_HOME={(tmp_path / 'h' / 'data').resolve()}" in command
