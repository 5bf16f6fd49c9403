"""`python -m harness.mock_models [anthropic|openai_responses|openai_chat|gemini]`: one
mock model server on 127.0.0.1 until Ctrl-C, for trying an agent without an API key (README,
"Try it without a key"). Unscripted, it answers as it does in the tests: an echo of the
conversation. It prints the environment that points the agent at it."""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from typing import get_args

from harness.mock_models.model import MockKind, MockModel

# Claude Code reads its endpoint from the environment; the other agents take it in their
# config block (docs/backends.md shows each).
POINT_AT = "export ANTHROPIC_BASE_URL={url} ANTHROPIC_API_KEY=not-a-real-key"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m harness.mock_models")
    parser.add_argument("kind", nargs="?", default="anthropic", choices=get_args(MockKind))
    kind = parser.parse_args().kind
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with MockModel(kind) as model:
        print(f"mock {kind} model on {model.url} (Ctrl-C stops it)", flush=True)
        if kind == "anthropic":
            print(POINT_AT.format(url=model.url), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()


if __name__ == "__main__":
    main()
