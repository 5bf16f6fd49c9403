"""The real ACP agents the tests drive, each pointed at its mock model: their blocks, found
through the presets' own discovery (core.backend.binaries: cliPath > pinned > PATH)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.backend.binaries import PROJECT_TOOLS, CliNotFoundError, CliSource, find_cli
from harness.mock_models.openai_chat import MODEL as CHAT_MODEL
from harness.opencode import TEST_ENV, provider_config
from wrappers.acp.presets import COPILOT, GEMINI, OPENCODE, Preset

REPO = Path(__file__).resolve().parents[3]
GEMINI_KEY = "gemini-e2e-test-key"
COPILOT_KEY = "mock-key"
# OpenCode's configured model, and another one its provider offers (a model chosen per turn).
OPENCODE_MODEL = "mock/mock-model"
OPENCODE_OTHER_MODEL = "mock/mock-model-b"
IMAGES = {"input": ["text", "image"], "output": ["text"]}
# Where a worktree that shares another checkout's .tools installs an extra pinned CLI.
_EXTRA = REPO / ".tools-extra" / "node_modules"


def binary(preset: Preset) -> Path:
    """The preset's binary, as the daemon finds it; the worktree's own .tools-extra install
    counts as pinned too (a missing CLI fails the test: CI must run it)."""
    pinned = preset.pinned()
    extra = [_EXTRA / p.relative_to(PROJECT_TOOLS) for p in pinned]
    source = CliSource(f"the {preset.what} binary", f"{preset.name}.cliPath", preset.install)
    try:
        return find_cli(None, [*pinned, *extra], preset.path_name, source)
    except CliNotFoundError as exc:
        raise AssertionError(f"{exc} (run `make test`)") from exc


def gemini_block(url: str, root: Path, work: Path, home: Path) -> dict[str, Any]:
    return {
        "workingDirectory": str(work),
        "cliPath": str(binary(GEMINI)),
        "home": str(root / "gemini-home"),
        "env": {
            "HOME": str(home),
            "GEMINI_API_KEY": GEMINI_KEY,
            "GOOGLE_GEMINI_BASE_URL": url,
        },
    }


def opencode_block(url: str, root: Path, work: Path, home: Path) -> dict[str, Any]:
    # Bash asks, so the daemon's policy (approveKinds) or the caller decides it.
    config = {**provider_config(url), "model": OPENCODE_MODEL, "permission": {"bash": "ask"}}
    provider = config["provider"]["mock"]
    # Images too: OpenCode drops an image for a model whose config does not take them.
    model = {**provider["models"]["mock-model"], "modalities": IMAGES, "attachment": True}
    provider["models"] = {"mock-model": model, "mock-model-b": {**model, "name": "Mock B"}}
    # No title request: it quotes the user's text on the small model while the turn's first
    # request is on its way, so "the request that carries this text" would be either.
    config["agent"] = {"title": {"disable": True}}
    return {
        "workingDirectory": str(work),
        "cliPath": str(binary(OPENCODE)),
        "home": str(root / "opencode-home"),
        "env": {**TEST_ENV, "HOME": str(home), "OPENCODE_CONFIG_CONTENT": json.dumps(config)},
    }


def copilot_block(url: str, root: Path, work: Path, home: Path, cache: Path) -> dict[str, Any]:
    return {
        "workingDirectory": str(work),
        "cliPath": str(binary(COPILOT)),
        "home": str(root / "copilot-home"),
        "env": {
            "HOME": str(home),
            "XDG_CACHE_HOME": str(cache),
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": url,
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_WIRE_API": "completions",
            "COPILOT_PROVIDER_API_KEY": COPILOT_KEY,
            "COPILOT_MODEL": CHAT_MODEL,
        },
    }
