"""core.settings.load: sources, precedence, substitution and errors that name the key path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.settings import ConfigError, load

BACKEND = "tests.support.scripted:ScriptedBackend"


def write_config(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_defaults_apply_when_nothing_else_is_given() -> None:
    settings = load(None, overrides={"backend": BACKEND}, environ={})

    assert settings.backend == BACKEND
    assert settings.server.port == 8000
    assert settings.server.host == "127.0.0.1"
    assert settings.storage.kind == "sqlite"
    assert settings.agent_card.default_input_modes == ["text/plain"]


def test_backend_is_required() -> None:
    with pytest.raises(ConfigError, match="backend"):
        load(None, environ={})


def test_precedence_is_defaults_then_file_then_env_then_overrides(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {
            "backend": BACKEND,
            "server": {"host": "0.0.0.0", "port": 1, "allowUnauthenticated": True},  # noqa: S104 - config data
        },
    )
    env = {"A2A_WRAPPER__SERVER__PORT": "7"}

    from_file = load(path, environ={})
    from_env = load(path, environ=env)
    from_overrides = load(path, environ=env, overrides={"server": {"port": 9}})

    assert from_file.server.port == 1
    assert from_env.server.port == 7
    assert from_overrides.server.port == 9
    # Sources merge key by key: a higher source overriding `port` keeps the file's `host`,
    # and keys no source mentions keep their defaults.
    for settings in (from_file, from_env, from_overrides):
        assert settings.server.host == "0.0.0.0"  # noqa: S104 - config data
        assert settings.server.max_body_bytes == 10 * 1024 * 1024


def test_env_names_nested_snake_case_keys_and_parses_json_values() -> None:
    settings = load(
        None,
        overrides={"backend": BACKEND},
        environ={
            "A2A_WRAPPER__AGENT_CARD__MAX_AGE": "5",
            "A2A_WRAPPER__SERVER__DEBUG_ERRORS": "true",
            "A2A_WRAPPER__AGENT_CARD__NAME": "plain text, not JSON",
            "OTHER_PREFIX__SERVER__PORT": "1",
        },
    )

    assert settings.agent_card.max_age == 5
    assert settings.server.debug_errors is True
    assert settings.agent_card.name == "plain text, not JSON"
    assert settings.server.port == 8000


def test_variables_are_substituted_in_file_strings(tmp_path: Path) -> None:
    environ = {
        "A2A_TEST_HOST": "10.1.2.3",
        "A2A_TEST_ORG": "Example Org",
        "A2A_TEST_TOKEN": "s3cret",
    }
    path = write_config(
        tmp_path,
        {
            "backend": BACKEND,
            "server": {
                "host": "${A2A_TEST_HOST}",
                "auth": {"tokens": [{"token": "${A2A_TEST_TOKEN}", "principal": "ops"}]},
            },
            "agentCard": {
                "name": "agent-${A2A_TEST_UNSET:-fallback}",
                "description": "${A2A_TEST_UNSET:-}",
                "provider": {"organization": "${A2A_TEST_ORG}", "url": "https://example.com"},
                "defaultInputModes": ["${A2A_TEST_UNSET:-text/markdown}"],
            },
        },
    )

    settings = load(path, environ=environ)

    assert settings.server.host == "10.1.2.3"
    assert settings.server.auth.tokens[0].token.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.agent_card.name == "agent-fallback"
    assert settings.agent_card.description == ""
    assert settings.agent_card.provider is not None
    assert settings.agent_card.provider.organization == "Example Org"
    assert settings.agent_card.default_input_modes == ["text/markdown"]


def test_a_set_variable_wins_over_its_default(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, {"backend": BACKEND, "agentCard": {"name": "${A2A_TEST_NAME:-default}"}}
    )

    assert load(path, environ={"A2A_TEST_NAME": "from-env"}).agent_card.name == "from-env"


def test_a_missing_variable_without_default_names_the_key_path(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {"backend": BACKEND, "agentCard": {"skills": [{"id": "${A2A_TEST_MISSING}"}]}},
    )

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    message = str(caught.value)
    assert "agentCard.skills[0].id" in message
    assert "A2A_TEST_MISSING" in message


def test_substitution_reads_the_environ_given_to_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("A2A_TEST_INJECTED", raising=False)
    path = write_config(
        tmp_path, {"backend": BACKEND, "agentCard": {"name": "${A2A_TEST_INJECTED}"}}
    )

    settings = load(path, environ={"A2A_TEST_INJECTED": "injected"})

    assert settings.agent_card.name == "injected"


@pytest.mark.parametrize(
    ("data", "key_path"),
    [
        ({"backend": BACKEND, "bogus": 1}, "bogus"),
        ({"backend": BACKEND, "server": {"bogus": 1}}, "server.bogus"),
        (
            {
                "backend": BACKEND,
                "agentCard": {"provider": {"organization": "o", "url": "u", "x": 1}},
            },
            "agentCard.provider.x",
        ),
    ],
    ids=["top-level", "nested", "deeply-nested"],
)
def test_unknown_keys_are_rejected_by_path(
    tmp_path: Path, data: dict[str, Any], key_path: str
) -> None:
    path = write_config(tmp_path, data)

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    assert f"{key_path}: unknown key" in str(caught.value)


def test_unknown_keys_from_the_environment_are_rejected_by_path() -> None:
    with pytest.raises(ConfigError, match=r"server\.bogus: unknown key"):
        load(None, overrides={"backend": BACKEND}, environ={"A2A_WRAPPER__SERVER__BOGUS": "1"})


@pytest.mark.parametrize(
    ("data", "key_path"),
    [
        ({"backend": BACKEND, "server": {"port": "eighty"}}, "server.port"),
        ({"backend": BACKEND, "server": {"port": 70000}}, "server.port"),
        ({"backend": BACKEND, "agentCard": {"maxAge": -1}}, "agentCard.maxAge"),
        ({"backend": BACKEND, "storage": {"kind": "redis"}}, "storage.kind"),
        ({"backend": BACKEND, "server": "not an object"}, "server"),
        ({"backend": 42}, "backend"),
        ({"backend": BACKEND, "storage": {"kind": "postgres"}}, "storage"),
        ({"backend": BACKEND, "cluster": {"leaseTtl": 2000, "heartbeat": 2000}}, "cluster"),
    ],
    ids=[
        "not-int",
        "out-of-range",
        "negative",
        "not-a-choice",
        "not-an-object",
        "not-a-string",
        "postgres-without-url",
        "heartbeat-not-within-lease",
    ],
)
def test_wrong_types_are_rejected_by_path(
    tmp_path: Path, data: dict[str, Any], key_path: str
) -> None:
    path = write_config(tmp_path, data)

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    assert str(caught.value).startswith(f"{key_path}: ")


def test_invalid_json_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"backend": "x",\n  "server": }', encoding="utf-8")

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    message = str(caught.value)
    assert str(path) in message
    assert "line 2" in message


def test_a_json_value_that_is_not_an_object_is_a_config_error(tmp_path: Path) -> None:
    path = write_config(tmp_path, ["backend", BACKEND])

    with pytest.raises(ConfigError, match="must be a JSON object"):
        load(path, environ={})


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    assert str(path) in str(caught.value)


def test_storage_path_defaults_under_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    settings = load(None, overrides={"backend": BACKEND}, environ={})

    assert settings.storage.path is None
    assert settings.storage.resolved_path() == tmp_path / "state" / "a2a-wrapper" / "tasks.sqlite3"


def test_storage_path_defaults_under_home_without_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))

    settings = load(None, overrides={"backend": BACKEND}, environ={})

    expected = tmp_path / ".local" / "state" / "a2a-wrapper" / "tasks.sqlite3"
    assert settings.storage.resolved_path() == expected


def test_an_explicit_storage_path_is_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    explicit = write_config(
        tmp_path, {"backend": BACKEND, "storage": {"path": str(tmp_path / "db" / "x.sqlite3")}}
    )
    tilde = load(
        None, overrides={"backend": BACKEND, "storage": {"path": "~/y.sqlite3"}}, environ={}
    )

    assert load(explicit, environ={}).storage.resolved_path() == tmp_path / "db" / "x.sqlite3"
    assert tilde.storage.resolved_path() == tmp_path / "home" / "y.sqlite3"


def test_camel_case_keys_are_accepted(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {
            "$schema": "./schema.json",
            "backend": BACKEND,
            "agentCard": {
                "defaultInputModes": ["text/plain", "application/json"],
                "documentationUrl": "https://example.com/docs",
            },
            "server": {"publicUrl": "https://agent.example.com", "maxBodyBytes": 2048},
            "storage": {"kind": "memory", "sweepInterval": 0},
        },
    )

    settings = load(path, environ={})

    assert settings.agent_card.default_input_modes == ["text/plain", "application/json"]
    assert settings.agent_card.documentation_url == "https://example.com/docs"
    assert settings.server.public_url == "https://agent.example.com"
    assert settings.server.max_body_bytes == 2048
    assert settings.storage.kind == "memory"
    assert settings.storage.sweep_interval == 0


@pytest.mark.parametrize(
    ("token", "environ"),
    [
        ("", {}),
        ("   ", {}),
        ("${A2A_TEST_TOKEN:-}", {}),
        ("${A2A_TEST_TOKEN}", {"A2A_TEST_TOKEN": ""}),
        ("${A2A_TEST_TOKEN}", {"A2A_TEST_TOKEN": " \t"}),
    ],
    ids=["empty", "blank", "unset-with-empty-default", "set-to-empty", "set-to-blank"],
)
def test_an_empty_token_is_refused_by_its_key_path(
    tmp_path: Path, token: str, environ: dict[str, str]
) -> None:
    tokens = [{"token": "a-long-enough-token-1", "principal": "a"}]
    tokens.append({"token": token, "principal": "b"})
    path = write_config(tmp_path, {"backend": BACKEND, "server": {"auth": {"tokens": tokens}}})

    with pytest.raises(ConfigError) as caught:
        load(path, environ=environ)

    assert str(caught.value).startswith("server.auth.tokens[1].token: the token is empty")


@pytest.mark.parametrize("token", ["a-long-enough-token-1\n", " a-long-enough-token-1"])
def test_a_token_with_surrounding_whitespace_is_refused(tmp_path: Path, token: str) -> None:
    tokens = [{"token": token, "principal": "a"}]
    path = write_config(tmp_path, {"backend": BACKEND, "server": {"auth": {"tokens": tokens}}})

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    assert str(caught.value) == (
        "server.auth.tokens[0].token: the token starts or ends with whitespace, which no caller "
        "can send"
    )


def test_an_empty_token_does_not_make_a_public_bind_safe(tmp_path: Path) -> None:
    server = {"host": "0.0.0.0", "auth": {"tokens": [{"token": "", "principal": "ops"}]}}  # noqa: S104 - config data
    path = write_config(tmp_path, {"backend": BACKEND, "server": server})

    with pytest.raises(ConfigError, match=r"server\.auth\.tokens\[0\]\.token: the token is empty"):
        load(path, environ={})


def test_an_empty_token_from_the_environment_is_refused() -> None:
    environ = {"A2A_WRAPPER__SERVER__AUTH__TOKENS": '[{"token": "", "principal": "ops"}]'}

    with pytest.raises(ConfigError, match=r"server\.auth\.tokens\[0\]\.token: the token is empty"):
        load(None, overrides={"backend": BACKEND}, environ=environ)


def test_one_token_naming_two_principals_is_refused(tmp_path: Path) -> None:
    tokens = [
        {"token": "shared-token-0123456789", "principal": "alice"},
        {"token": "other-token-0123456789", "principal": "carol"},
        {"token": "shared-token-0123456789", "principal": "bob"},
    ]
    path = write_config(tmp_path, {"backend": BACKEND, "server": {"auth": {"tokens": tokens}}})

    with pytest.raises(ConfigError) as caught:
        load(path, environ={})

    message = str(caught.value)
    assert message == (
        "server.auth.tokens[2].token: the same token as server.auth.tokens[0].token but another "
        "principal; one token must say who is calling"
    )
    assert "shared-token" not in message


def test_a_repeated_token_of_one_principal_is_accepted(tmp_path: Path) -> None:
    token = {"token": "same-token-0123456789", "principal": "alice"}
    path = write_config(
        tmp_path, {"backend": BACKEND, "server": {"auth": {"tokens": [token, token]}}}
    )

    assert len(load(path, environ={}).server.auth.tokens) == 2


def test_short_tokens_are_accepted_and_named_for_a_warning(tmp_path: Path) -> None:
    tokens = [
        {"token": "0123456789abcdef", "principal": "exactly-16"},
        {"token": "0123456789abcde", "principal": "fifteen"},
        {"token": "x", "principal": "one"},
    ]
    path = write_config(tmp_path, {"backend": BACKEND, "server": {"auth": {"tokens": tokens}}})

    auth = load(path, environ={}).server.auth

    assert auth.short_tokens() == ["server.auth.tokens[1].token", "server.auth.tokens[2].token"]
