"""How the real opencode binary is pointed at the mock chat model (tests and the bench): a
config whose only provider is the mock, and an environment that keeps it on 127.0.0.1."""

from __future__ import annotations

from typing import Any

# Quiet and hermetic: nothing but 127.0.0.1 (docs/backends.md#opencode).
TEST_ENV = {
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


def provider_config(base_url: str, **options: Any) -> dict[str, Any]:
    """An OpenCode config whose only provider is the mock (openai-compatible, bundled)."""
    return {
        "snapshot": False,
        "small_model": "mock/mock-model",
        "enabled_providers": ["mock"],
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": base_url, "apiKey": "mock-key", **options},
                "models": {
                    "mock-model": {
                        "name": "Mock",
                        "tool_call": True,
                        "limit": {"context": 128000, "output": 4096},
                    }
                },
            }
        },
    }
