"""`check` on an `opencode auth login` recorded in OpenCode's auth.json (written here): where
the credentials come from, and an OAuth login's expiry, never a value."""

from __future__ import annotations

import json
from pathlib import Path

from core.backend import Diagnosis
from wrappers.opencode import diagnose
from wrappers.opencode.config import OpencodeConfig


async def credentials(config: OpencodeConfig) -> Diagnosis:
    found = {d.name: d for d in await diagnose.diagnose(config, {})}
    return found["credentials"]


async def test_a_stored_login_is_reported_with_its_expiry(tmp_path: Path) -> None:
    config = OpencodeConfig.model_validate(
        {
            "model": "anthropic/claude-sonnet-4-5",
            "home": str(tmp_path),
            "cliPath": str(tmp_path / "no-binary"),  # the binary check is not this test
        }
    )
    auth = tmp_path / "data" / "opencode" / "auth.json"
    auth.parent.mkdir(parents=True)

    def login(entry: dict[str, object]) -> None:
        auth.write_text(json.dumps({"anthropic": entry}))

    login({"type": "oauth", "access": "secret-a", "refresh": "secret-r", "expires": 4102444800000})
    valid = await credentials(config)
    login({"type": "oauth", "access": "secret-a", "refresh": "", "expires": 946684800000})
    lapsed = await credentials(config)
    login({"type": "api", "key": "secret-key"})
    keyed = await credentials(config)

    assert valid.ok
    assert valid.detail == (
        f"anthropic: stored login in {auth}; expires at 2100-01-01T00:00:00+00:00"
    )
    assert not lapsed.ok
    assert lapsed.detail.endswith("run `opencode auth login` again")
    assert keyed.ok
    assert keyed.detail == f"anthropic: stored login in {auth}"
    assert "secret" not in repr([valid, lapsed, keyed])
