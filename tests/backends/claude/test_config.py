"""The `claude` config block and what it becomes: SDK options, the CLI's environment, the user
message, the resume command, the credentials check. No agent process involved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.backend import DataContent, FileContent, TextContent, Turn
from core.backend.config import working_directory_check
from core.settings import ConfigError, Settings, load
from wrappers.claude import diagnose, options
from wrappers.claude.config import ClaudeConfig
from wrappers.claude.process import MARKER_VARIABLE
from wrappers.claude.prompt import user_message


def settings(claude: dict[str, Any]) -> Settings:
    return load(None, overrides={"backend": "claude", "claude": claude}, environ={})


def config(**claude: Any) -> ClaudeConfig:
    return settings(claude).block(ClaudeConfig)


@pytest.mark.parametrize("mode", ["default", "auto"])
def test_permission_modes_that_need_an_approver_are_refused_with_the_reason(mode: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(permissionMode=mode)
    message = str(caught.value)
    assert message.startswith("claude.permissionMode:")
    assert "headless daemon cannot do" in message
    assert "acceptEdits, dontAsk or plan" in message


def test_bypass_permissions_needs_the_dangerous_flag() -> None:
    with pytest.raises(ConfigError, match="set dangerouslyAllowBypassPermissions: true"):
        config(permissionMode="bypassPermissions")
    allowed = config(permissionMode="bypassPermissions", dangerouslyAllowBypassPermissions=True)
    assert allowed.permission_mode == "bypassPermissions"


def test_unknown_keys_and_bad_values_name_their_path() -> None:
    with pytest.raises(ConfigError, match=r"claude\.permisionMode: unknown key"):
        config(permisionMode="plan")
    with pytest.raises(ConfigError, match=r"claude\.maxTurns"):
        config(maxTurns=0)
    with pytest.raises(ConfigError, match=r"claude\.settingSources\.0"):
        config(settingSources=["everywhere"])


def test_defaults() -> None:
    block = ClaudeConfig()
    assert block.permission_mode == "acceptEdits"
    assert block.setting_sources == []
    built = options.build_options(block, cli=None, resume=None, marker="m")
    assert built.system_prompt == {"type": "preset", "preset": "claude_code"}
    assert built.setting_sources == []
    assert built.include_partial_messages is True
    assert built.resume is None


def test_every_key_reaches_the_sdk_options(tmp_path: Path) -> None:
    block = config(
        workingDirectory=str(tmp_path),
        model="claude-sonnet-4-5",
        fallbackModel="claude-haiku-4-5",
        permissionMode="dontAsk",
        allowedTools=["Read", "Bash(git:*)"],
        disallowedTools=["WebFetch"],
        systemPrompt={"preset": "claude_code", "append": "Answer briefly."},
        settingSources=["project"],
        maxTurns=5,
        maxBudgetUsd=0.5,
        addDirs=[str(tmp_path / "shared")],
        mcpServers={
            "calc": {"type": "stdio", "command": "calc-server", "args": ["--x"], "env": {"A": "1"}},
            "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
        },
    )

    built = options.build_options(block, cli=tmp_path / "claude", resume="sess-1", marker="m")

    assert built.cwd == tmp_path.resolve()
    assert built.cli_path == str(tmp_path / "claude")  # no sandbox: the binary itself
    assert (built.model, built.fallback_model) == ("claude-sonnet-4-5", "claude-haiku-4-5")
    assert built.permission_mode == "dontAsk"
    assert built.allowed_tools == ["Read", "Bash(git:*)"]
    assert built.disallowed_tools == ["WebFetch"]
    assert built.system_prompt == {
        "type": "preset",
        "preset": "claude_code",
        "append": "Answer briefly.",
    }
    assert built.setting_sources == ["project"]
    assert (built.max_turns, built.max_budget_usd) == (5, 0.5)
    assert built.add_dirs == [tmp_path / "shared"]
    assert built.mcp_servers == {
        "calc": {"type": "stdio", "command": "calc-server", "args": ["--x"], "env": {"A": "1"}},
        "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}},
    }
    assert built.resume == "sess-1"


def test_a_plain_string_replaces_the_system_prompt() -> None:
    built = options.build_options(
        config(systemPrompt="You review code."), cli=None, resume=None, marker="m"
    )
    assert built.system_prompt == "You review code."


def test_the_agent_environment_is_quiet_isolated_and_overridable(tmp_path: Path) -> None:
    block = config(
        home=str(tmp_path / "state"),
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "DISABLE_TELEMETRY": "0"},
    )

    env = options.agent_env(block, marker="abc")

    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["DISABLE_TELEMETRY"] == "0", "the config's env wins over the defaults"
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9"
    assert env["CLAUDE_CONFIG_DIR"] == str((tmp_path / "state").resolve())
    assert env[MARKER_VARIABLE] == "abc"
    assert "CLAUDE_CONFIG_DIR" not in options.agent_env(config())


def test_the_resume_command_opens_the_session_where_the_agent_works(tmp_path: Path) -> None:
    plain = config(workingDirectory=str(tmp_path))
    assert options.resume_command(plain, "abc-123") == f"cd {tmp_path} && claude --resume abc-123"
    isolated = config(workingDirectory=str(tmp_path), home=str(tmp_path / "my state"))
    assert options.resume_command(isolated, "abc-123") == (
        f"cd {tmp_path} && CLAUDE_CONFIG_DIR='{tmp_path}/my state' claude --resume abc-123"
    )


def test_a_turn_becomes_one_user_message_with_a_block_per_part() -> None:
    turn = Turn(
        principal="p",
        context_id="c",
        task_id="t",
        message_id="m",
        session_id=None,
        parts=(
            TextContent("Look at these."),
            DataContent({"k": [1, 2]}),
            FileContent(data=b"\x89PNG", name="a.png", media_type="image/png"),
            FileContent(data=b"print('hi')\n", name="a.py", media_type="text/x-python"),
            FileContent(data=b"\xff\xfe\x00", name="b.bin"),
            FileContent(
                url="https://example.com/r.pdf", name="r.pdf", media_type="application/pdf"
            ),
        ),
    )

    message = user_message(turn)

    assert message["type"] == "user"
    assert message["uuid"] != user_message(turn)["uuid"]
    assert message["message"]["content"] == [
        {"type": "text", "text": "Look at these."},
        {"type": "text", "text": json.dumps({"k": [1, 2]})},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="},
        },
        {"type": "text", "text": "Attached file a.py (text/x-python):\nprint('hi')\n"},
        {
            "type": "text",
            "text": "[Attached file b.bin (application/octet-stream, 3 bytes) cannot be shown]",
        },
        {
            "type": "text",
            "text": "Attached file r.pdf (application/pdf): https://example.com/r.pdf",
        },
    ]


def test_credentials_are_reported_by_source_never_by_value(tmp_path: Path) -> None:
    block = config(home=str(tmp_path))
    found = diagnose.credentials(block, {"ANTHROPIC_API_KEY": "sk-ant-secret"})
    assert found.ok
    assert found.detail == "ANTHROPIC_API_KEY is set"
    assert "sk-ant-secret" not in repr(found)

    endpoint = config(home=str(tmp_path), env={"ANTHROPIC_BASE_URL": "http://10.0.0.2:4000/v1"})
    via = diagnose.credentials(endpoint, {"ANTHROPIC_AUTH_TOKEN": "tok"})
    assert via.detail == "ANTHROPIC_AUTH_TOKEN is set for 10.0.0.2:4000"

    missing = diagnose.credentials(block, {})
    assert not missing.ok
    assert "set ANTHROPIC_API_KEY" in missing.detail
    (tmp_path / ".credentials.json").write_text("{}")
    assert diagnose.credentials(block, {}).detail.startswith("a `claude /login` login in")


def test_the_working_directory_check(tmp_path: Path) -> None:
    assert working_directory_check(config(workingDirectory=str(tmp_path))).ok
    missing = working_directory_check(config(workingDirectory=str(tmp_path / "nope")))
    assert not missing.ok
    assert missing.detail.endswith("nope does not exist")


def test_a_claude_login_is_reported_with_its_plan_and_expiry(tmp_path: Path) -> None:
    block = config(home=str(tmp_path))
    login = tmp_path / ".credentials.json"

    def recorded(expires_ms: int, refresh: str | None) -> str:
        oauth = {"accessToken": "sk-ant-oat01-secret", "expiresAt": expires_ms}
        oauth |= {"subscriptionType": "max", "scopes": ["user:inference"]}
        if refresh is not None:
            oauth["refreshToken"] = refresh
        return json.dumps({"claudeAiOauth": oauth})

    login.write_text(recorded(4_102_444_800_000, "sk-ant-ort01-secret"))  # 2100-01-01
    valid = diagnose.credentials(block, {})
    login.write_text(recorded(946_684_800_000, None))  # 2000-01-01, nothing to renew it with
    lapsed = diagnose.credentials(block, {})
    login.write_text(recorded(946_684_800_000, "sk-ant-ort01-secret"))
    renewable = diagnose.credentials(block, {})

    assert valid.ok
    assert valid.detail == (
        f"a `claude /login` login in {login}, max plan; expires at 2100-01-01T00:00:00+00:00"
    )
    assert not lapsed.ok
    assert "expired at 2000-01-01T00:00:00+00:00: log in again with `claude /login`" in (
        lapsed.detail
    )
    assert renewable.ok
    assert "renews it with its refresh token" in renewable.detail
    assert "secret" not in repr([valid, lapsed, renewable])
