"""A fifth backend, as a third party would write one: one package, registered by entry point
(`fifth = "tests.support.fifth_backend:SPEC"` in the group `a2a_wrapper.backends`), no file of
the project changed.

It is a real (small) agent: each turn is one streamed OpenAI chat completions request carrying
the session's earlier messages, so it runs against the project's chat mock
(harness/mock_models/openai_chat.py) like the real CLIs run against theirs. Sessions are
JSON files under `home` (default: `<workingDirectory>/.fifth`), so they survive a restart of
the daemon; the warm ones are kept in memory by the kit's `WarmPool`.
"""

from __future__ import annotations

from core.backend.spec import BackendSpec
from tests.support.fifth_backend.backend import FifthBackend
from tests.support.fifth_backend.config import FifthConfig


def create(config: FifthConfig) -> FifthBackend:
    return FifthBackend(config)


SPEC = BackendSpec("fifth", FifthConfig, create)

__all__ = ["SPEC", "FifthBackend", "FifthConfig"]
