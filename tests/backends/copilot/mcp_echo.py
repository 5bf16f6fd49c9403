"""A stdio MCP server with one tool, `echo_upper(text)` -> "ECHO:<TEXT>" (newline-delimited
JSON-RPC 2.0; stdlib only). The Copilot e2e tests configure it through `mcpServers`."""

from __future__ import annotations

import json
import sys
from typing import Any

TOOL = {
    "name": "echo_upper",
    "description": "Return the given text in upper case, prefixed with ECHO:",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def answer(request_id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> int:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        request_id, method = message.get("id"), message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            answer(
                request_id,
                {
                    "protocolVersion": params.get("protocolVersion", "2024-11-05"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "echo", "version": "0.1"},
                },
            )
        elif method == "tools/list":
            answer(request_id, {"tools": [TOOL]})
        elif method == "tools/call":
            text = str((params.get("arguments") or {}).get("text", ""))
            answer(request_id, {"content": [{"type": "text", "text": "ECHO:" + text.upper()}]})
        elif request_id is not None:  # ping and the like
            answer(request_id, {})
    return 0


if __name__ == "__main__":
    sys.exit(main())
