"""`python -m tests.support.fifth_backend.transcript <sessions folder> --session <id>`: print a
session's conversation (what `resumeCommand` names: the agent has no terminal UI)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.fifth_backend.chat import Message
from tests.support.fifth_backend.sessions import SessionFiles


def line(message: Message) -> str:
    calls = [c["function"]["arguments"] for c in message.get("tool_calls") or []]
    return f"{message['role']}: {message.get('content') or ''} {' '.join(calls)}".rstrip()


def main(argv: list[str]) -> int:
    folder, _, session_id = argv
    for message in SessionFiles(Path(folder)).load(session_id).messages:
        print(line(message))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
