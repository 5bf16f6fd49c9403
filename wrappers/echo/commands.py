"""What one message asks the echo agent to do: its first line may be a command.

ask: QUESTION          the task becomes input-required with QUESTION
write: PATH            the lines after it become the file PATH in the working directory
sleep: SECONDS         works for SECONDS (at most 600), reporting progress; cancel stops it
recall:                answers with what was said earlier in the session (a fork's: the source's)
anything else          answered with itself, streamed word by word
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_SLEEP = 600.0


@dataclass(frozen=True)
class Echo:
    text: str


@dataclass(frozen=True)
class Ask:
    question: str


@dataclass(frozen=True)
class Write:
    path: str
    content: str


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Recall:
    """Answer with the session's earlier messages."""


@dataclass(frozen=True)
class Refused:
    """A command that cannot be done; `reason` is written for the caller."""

    reason: str


Command = Echo | Ask | Write | Sleep | Recall | Refused


def parse(text: str) -> Command:
    first, _, rest = text.partition("\n")
    word, colon, argument = first.partition(":")
    argument = argument.strip()
    if not colon or word.strip() not in ("ask", "write", "sleep", "recall"):
        return Echo(text)
    match word.strip():
        case "recall":
            return Recall()
        case "ask":
            return Ask(argument or "What should I do next?")
        case "write":
            return _write(argument, rest)
        case _:
            return _sleep(argument)


def _write(path: str, content: str) -> Command:
    relative = PurePosixPath(path)
    if not path or relative.is_absolute() or ".." in relative.parts:
        return Refused(f"write: needs a relative path inside the working directory, not {path!r}")
    return Write(path, content if content.endswith("\n") or not content else content + "\n")


def _sleep(argument: str) -> Command:
    try:
        seconds = float(argument)
    except ValueError:
        return Refused(f"sleep: needs a number of seconds, not {argument!r}")
    if not 0 <= seconds <= MAX_SLEEP:
        return Refused(f"sleep: takes 0 to {MAX_SLEEP:g} seconds")
    return Sleep(seconds)


def target(root: Path, path: str) -> Path | None:
    """Where `write:` puts `path` under `root`; None when a symlink leads it outside."""
    where = (root / path).resolve()
    return where if where.is_relative_to(root.resolve()) else None
