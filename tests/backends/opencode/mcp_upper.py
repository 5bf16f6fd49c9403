"""A stdio MCP server for the e2e tests: one tool, `shout(text)`, answering
`<MCP_MARK>:<TEXT IN UPPER CASE>` (MCP_MARK comes from the server's environment, so a test also
sees that `mcpServers.<name>.env` reached it). Newline-delimited JSON-RPC 2.0 on stdin/stdout;
stdlib only; ends at EOF."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

SHOUT = {
    "name": "shout",
    "description": "Upper-case the text",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def result(request_id: Any, value: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": value}) + "\n")
    sys.stdout.flush()


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2024-11-05"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "upper", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [SHOUT]}
    if method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", "")).upper()
        mark = os.environ.get("MCP_MARK", "UNSET")
        return {"content": [{"type": "text", "text": f"{mark}:{text}"}]}
    return {}


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") is not None:
            result(message["id"], answer(str(message.get("method")), message.get("params") or {}))


if __name__ == "__main__":
    main()
