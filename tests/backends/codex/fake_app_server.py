"""A stand-in for `codex app-server --listen stdio://` (JSON-RPC lines on stdin/stdout) that
refuses the method named by FAKE_CODEX_REFUSE with an error quoting a key, for the Failed
contract tests that need no real Codex. Every other request gets a minimal valid result."""

from __future__ import annotations

import json
import os
import sys

from tests.support.errors import SECRET

RESULTS: dict[str, object] = {
    "initialize": {"userAgent": "codex_cli_rs/0.0.0-fake"},
    "thread/start": {"thread": {"id": "thr_fake"}, "model": "fake-model"},
}


def main() -> None:
    refused = os.environ.get("FAKE_CODEX_REFUSE", "")
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification (`initialized`) or a reply to us
        method = message["method"]
        answer: dict[str, object]
        if method == refused:
            answer = {"error": {"code": -32603, "message": f"upstream said: {SECRET}"}}
        else:
            answer = {"result": RESULTS.get(method, {})}
        sys.stdout.write(json.dumps({"id": message["id"], **answer}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
