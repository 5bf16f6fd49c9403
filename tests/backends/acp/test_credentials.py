"""`check` of the gemini preset: where Gemini CLI's credentials come from, and the expiry of a
Google login it recorded (a file written here), never a value."""

from __future__ import annotations

import json
from pathlib import Path

from core.backend import Diagnosis
from tests.backends.acp import support as acp
from wrappers.acp import create_gemini
from wrappers.acp.config import GeminiConfig
from wrappers.acp.presets import GEMINI


async def credentials(home: Path, env: dict[str, str]) -> Diagnosis:
    # Empty: the machine's own Google settings do not count here.
    env = {"GOOGLE_API_KEY": "", "GOOGLE_GENAI_USE_VERTEXAI": "", **env}
    config = GeminiConfig.model_validate(
        {"workingDirectory": str(home), "home": str(home), "cliPath": "/bin/true", "env": env}
    )
    found = {d.name: d for d in await create_gemini(config).diagnose()}
    return found["credentials"]


async def test_a_google_login_is_reported_with_its_expiry(tmp_path: Path) -> None:
    creds = tmp_path / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir()
    login = {"access_token": "ya29.secret", "token_type": "Bearer", "scope": "openid"}

    creds.write_text(
        json.dumps({**login, "refresh_token": "1//secret", "expiry_date": 4102444800000})
    )
    valid = await credentials(tmp_path, {"GEMINI_API_KEY": ""})
    creds.write_text(json.dumps({**login, "expiry_date": 946684800000}))
    lapsed = await credentials(tmp_path, {"GEMINI_API_KEY": ""})
    keyed = await credentials(tmp_path, {"GEMINI_API_KEY": "secret-key"})
    creds.unlink()
    missing = await credentials(tmp_path, {"GEMINI_API_KEY": ""})

    assert valid.ok
    assert valid.detail == f"a Google login in {creds}; expires at 2100-01-01T00:00:00+00:00"
    assert not lapsed.ok
    assert lapsed.detail.endswith(
        "expired at 2000-01-01T00:00:00+00:00: run `gemini` to log in again"
    )
    assert keyed == Diagnosis("credentials", True, "GEMINI_API_KEY is set")
    assert not missing.ok
    assert "GEMINI_API_KEY" in missing.detail
    assert "secret" not in repr([valid, lapsed, keyed, missing])


async def test_check_lists_the_authenticate_methods_the_agent_offers(tmp_path: Path) -> None:
    config = GeminiConfig.model_validate(
        {
            "workingDirectory": str(tmp_path),
            "home": str(tmp_path / "gemini-home"),
            "cliPath": str(acp.binary(GEMINI)),
            "env": {"HOME": str(tmp_path), "GEMINI_API_KEY": "secret-key"},
        }
    )

    found = {d.name: d for d in await create_gemini(config).diagnose()}

    methods = found["authentication methods"]
    assert methods.ok, methods
    assert methods.detail.startswith("the agent offers ")
    assert "(gemini-api-key)" in methods.detail
    assert "secret" not in repr(found)
