"""A tiny MCP server on stdio (newline-delimited JSON-RPC), standard library only: one tool,
`add(a, b)`, answering `sum=<a+b>`. For tests of the agents' MCP wiring.

    python -m tests.support.mcp_calc
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
]


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "calc", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        arguments = params.get("arguments") or {}
        total = int(arguments.get("a", 0)) + int(arguments.get("b", 0))
        return {"content": [{"type": "text", "text": f"sum={total}"}], "isError": False}
    return {}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        params = request.get("params") or {}
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request["method"], params)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
