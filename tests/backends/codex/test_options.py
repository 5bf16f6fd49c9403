"""The `codex` block: validation, and what it becomes for Codex (command line, parameters)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from core.backend import TextContent, Turn
from core.settings import ConfigError, load
from wrappers.codex import create
from wrappers.codex.backend import CodexBackend
from wrappers.codex.config import CodexConfig
from wrappers.codex.control import turn_settings
from wrappers.codex.diagnose import credentials_check, git_repository_check
from wrappers.codex.options import (
    codex_binary,
    config_overrides,
    launch,
    thread_params,
    toml_value,
)
from wrappers.codex.threads import WarmThread


def block(**keys: Any) -> CodexConfig:
    return load(None, overrides={"backend": "codex", "codex": keys}, environ={}).block(CodexConfig)


def test_defaults_are_safe_and_headless() -> None:
    config = block()

    assert config.sandbox == "workspace-write"
    assert config.approval_policy == "never"
    assert thread_params(config)["approvalPolicy"] == "never"
    assert thread_params(config)["sandbox"] == "workspace-write"


@pytest.mark.parametrize("policy", ["on-request", "on-failure", "untrusted"])
def test_interactive_approval_policies_are_refused_with_the_reason(policy: str) -> None:
    with pytest.raises(ConfigError) as caught:
        block(approvalPolicy=policy)

    message = str(caught.value)
    assert message.startswith("codex.approvalPolicy: ")
    assert f'"{policy}" needs someone to approve' in message
    assert 'use "never"' in message


def test_full_access_needs_the_dangerous_flag() -> None:
    with pytest.raises(ConfigError, match="dangerouslyAllowFullAccess: true"):
        block(sandbox="danger-full-access")

    config = block(sandbox="danger-full-access", dangerouslyAllowFullAccess=True)
    assert thread_params(config)["sandbox"] == "danger-full-access"


def test_unknown_keys_name_their_path() -> None:
    with pytest.raises(ConfigError, match=r"codex\.sandboxMode: unknown key"):
        block(sandboxMode="read-only")


def test_a_null_config_override_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"codex\.config: features\.x is null"):
        block(config={"features": {"x": None}})


def test_the_factory_builds_the_backend_from_the_block() -> None:
    backend = create(block())

    assert isinstance(backend, CodexBackend)
    assert backend.name == "codex"


def test_config_overrides_are_dotted_toml_leaves() -> None:
    config = block(
        config={
            "model_provider": "local",
            "model_providers": {
                "local": {"base_url": "http://127.0.0.1:1/v1", "request_max_retries": 0}
            },
            "features": {"plugins": True},
        }
    )

    overrides = config_overrides(config)

    assert overrides == [
        "features.plugins=true",  # the block overrides the daemon's default (false)
        "features.apps=false",
        "thread_unload_delay_secs=0",
        'model_provider="local"',
        'model_providers.local.base_url="http://127.0.0.1:1/v1"',
        "model_providers.local.request_max_retries=0",
    ]


def test_a_table_with_keys_codex_cannot_dot_is_passed_inline() -> None:
    config = block(config={"projects": {"/srv/my.repo": {"trust_level": "trusted"}}})

    assert 'projects={"/srv/my.repo" = {trust_level = "trusted"}}' in config_overrides(config)


@pytest.mark.parametrize(
    ("value", "toml"),
    [
        (True, "true"),
        (3, "3"),
        (1.5, "1.5"),
        ('a "quoted"\nline', '"a \\"quoted\\"\\nline"'),
        (["x", 1], '["x", 1]'),
        ({"a": {"b": "c"}}, '{a = {b = "c"}}'),
    ],
)
def test_toml_values(value: Any, toml: str) -> None:
    assert toml_value(value) == toml


def test_mcp_servers_become_required_approved_codex_servers() -> None:
    config = block(
        mcpServers={
            "calc": {"type": "stdio", "command": "python3", "args": ["calc.py"], "env": {"A": "1"}},
            "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-K": "v"}},
        }
    )

    overrides = config_overrides(config)

    assert 'mcp_servers.calc.command="python3"' in overrides
    assert 'mcp_servers.calc.args=["calc.py"]' in overrides
    assert 'mcp_servers.calc.env.A="1"' in overrides
    assert "mcp_servers.calc.required=true" in overrides
    assert 'mcp_servers.calc.default_tools_approval_mode="approve"' in overrides
    assert 'mcp_servers.docs.url="http://127.0.0.1:9/mcp"' in overrides
    assert 'mcp_servers.docs.http_headers.X-K="v"' in overrides


def test_additional_directories_are_writable_roots(tmp_path: Path) -> None:
    config = block(additionalDirectories=[str(tmp_path)])

    assert f'sandbox_workspace_write.writable_roots=["{tmp_path}"]' in config_overrides(config)


def test_instructions_model_and_effort_go_to_threads_and_turns(tmp_path: Path) -> None:
    config = block(
        workingDirectory=str(tmp_path),
        model="gpt-5.5",
        developerInstructions="Be brief.",
        baseInstructions="You are a linter.",
        reasoningEffort="low",
    )

    assert thread_params(config) == {
        "approvalPolicy": "never",
        "sandbox": "workspace-write",
        "cwd": str(tmp_path),
        "model": "gpt-5.5",
        "baseInstructions": "You are a linter.",
        "developerInstructions": "Be brief.",
    }
    settings = turn_settings(
        config,
        None,
        WarmThread("t", "gpt-5.5"),
        Turn("p", "c", "t", "m", None, (TextContent("hi"),)),
    )
    assert (settings["model"], settings["effort"]) == ("gpt-5.5", "low")


def test_the_launch_runs_app_server_over_stdio_with_home_and_env(tmp_path: Path) -> None:
    config = block(workingDirectory=str(tmp_path), home=str(tmp_path / "h"), env={"K": "v"})
    binary = codex_binary(config)

    how = launch(config, binary, {"PATH": "/usr/bin"})

    assert how.argv[0] == str(binary)
    assert how.argv[-3:] == ("app-server", "--listen", "stdio://")
    assert how.env["CODEX_HOME"] == str(tmp_path / "h")
    assert how.env["K"] == "v"
    assert how.env["PATH"].endswith("/usr/bin")
    assert how.cwd == tmp_path


def test_a_missing_cli_path_says_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"codex\.cliPath .* is not an executable file"):
        codex_binary(block(cliPath=str(tmp_path / "nope")))


def test_outside_a_git_repository_needs_skip_git_repo_check(tmp_path: Path) -> None:
    refused = git_repository_check(block(workingDirectory=str(tmp_path)))
    allowed = git_repository_check(block(workingDirectory=str(tmp_path), skipGitRepoCheck=True))
    (tmp_path / ".git").mkdir()
    empty_git_folder = git_repository_check(block(workingDirectory=str(tmp_path)))
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    in_repo = git_repository_check(block(workingDirectory=str(tmp_path)))

    assert not refused.ok
    assert not empty_git_folder.ok
    assert "skipGitRepoCheck" in refused.detail
    assert allowed.ok
    assert in_repo.ok


def test_a_missing_working_directory_is_reported(tmp_path: Path) -> None:
    check = git_repository_check(block(workingDirectory=str(tmp_path / "gone")))

    assert not check.ok
    assert "is not a directory" in check.detail


def test_credentials_of_a_custom_provider_are_named_never_shown() -> None:
    config = block(config={"model_provider": "m", "model_providers": {"m": {"env_key": "M_KEY"}}})

    present = credentials_check(config, {"M_KEY": "secret-value"})
    missing = credentials_check(config, {})

    assert present.ok
    assert present.detail == "M_KEY is set (the key of model provider m)"
    assert "secret-value" not in present.detail
    assert not missing.ok
    assert missing.detail == "M_KEY is not set (the key of model provider m)"


def test_openai_credentials_come_from_the_environment_or_codex_login(tmp_path: Path) -> None:
    config = block(home=str(tmp_path))

    from_env = credentials_check(config, {"OPENAI_API_KEY": "sk-secret"})
    none = credentials_check(config, {})
    (tmp_path / "auth.json").write_text("{}")
    logged_in = credentials_check(config, {})

    assert from_env.ok
    assert "sk-secret" not in from_env.detail
    assert not none.ok
    assert "OPENAI_API_KEY" in none.detail
    assert "codex login" in none.detail
    assert logged_in.ok


def test_the_resume_command_opens_the_thread_in_the_terminal(tmp_path: Path) -> None:
    plain = create(block())
    isolated = create(block(home=str(tmp_path / "codex home")))

    assert plain.resume_command("0190-abc") == "codex resume 0190-abc"
    assert isolated.resume_command("0190-abc") == (
        f"CODEX_HOME='{tmp_path}/codex home' codex resume 0190-abc"
    )


def test_the_shipped_config_is_valid_and_safe(repo_root: Path) -> None:
    path = repo_root / "config" / "codex.json"

    settings = load(path, environ={})

    assert json.loads(path.read_text())["$schema"] == "./schema.json"
    assert settings.backend == "codex"
    block = settings.block(CodexConfig)
    assert block.approval_policy == "never"
    assert block.sandbox == "workspace-write"
    assert "OPENAI_API_KEY" not in block.env, "credentials come from the environment"


def _jwt(claims: dict[str, object]) -> str:
    encoded = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJub25lIn0.{encoded}.c2lnbmF0dXJl"


def test_a_codex_login_is_reported_with_its_expiry(tmp_path: Path) -> None:
    config = block(home=str(tmp_path))
    auth = tmp_path / "auth.json"

    def login(exp: int, refresh: str | None) -> None:
        tokens = {"access_token": _jwt({"exp": exp}), "id_token": _jwt({"exp": exp})}
        if refresh is not None:
            tokens["refresh_token"] = refresh
        auth.write_text(json.dumps({"OPENAI_API_KEY": None, "tokens": tokens}))

    login(4_102_444_800, "rt-secret")
    valid = credentials_check(config, {})
    login(946_684_800, None)
    lapsed = credentials_check(config, {})
    auth.write_text(json.dumps({"OPENAI_API_KEY": "sk-secret"}))
    with_key = credentials_check(config, {})

    assert valid.ok
    assert valid.detail == (
        f"signed in with `codex login` ({auth}); expires at 2100-01-01T00:00:00+00:00"
    )
    assert not lapsed.ok
    assert lapsed.detail.endswith("expired at 2000-01-01T00:00:00+00:00: run `codex login` again")
    assert with_key.ok
    assert with_key.detail == f"an API key stored by `codex login` ({auth})"
    assert "secret" not in repr([valid, lapsed, with_key])
