"""config/schema.json is generated from the Settings model and must stay in sync with it."""

from __future__ import annotations

import json
from pathlib import Path

from core.settings import json_schema


def test_committed_schema_matches_the_models(repo_root: Path) -> None:
    committed = json.loads((repo_root / "config" / "schema.json").read_text())
    assert committed == json_schema(), "run: .venv/bin/a2a-wrapper schema > config/schema.json"


def test_schema_rejects_unknown_keys() -> None:
    schema = json_schema()
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["ServerSettings"]["additionalProperties"] is False
    assert "agentCard" in schema["properties"]
