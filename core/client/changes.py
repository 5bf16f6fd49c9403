"""Changes out of an agent: the cumulative diff of a context, and applying a patch to the
user's own checkout all or nothing."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from a2a.types import Task

from core.client.access import ClientError
from core.client.views import Changes, changes_of

GIT_TIMEOUT = 60.0


def combined(task: Task, context_tasks: Sequence[Task]) -> Changes | None:
    """The context's changes from its workspace's base up to `task`, as one patch.

    Made of the `changes` artifacts of the context's tasks, in the order their turns ended
    (a context runs one turn at a time), from the latest cumulative one (a turn sent with
    `--cumulative`) or the first turn, up to `task`: the patches one after another, which
    `git apply` applies in order. What a canceled turn edited is in no turn's patch; only a
    turn sent with the cumulative request shows it (docs/client.md)."""
    ordered = sorted((t for t in context_tasks if t.id != task.id), key=_ended)
    chain = [t for t in ordered if _ended(t) <= _ended(task)] + [task]
    found = [c for c in (changes_of(t.artifacts) for t in chain) if c is not None]
    start = max((i for i, c in enumerate(found) if c.scope == "cumulative"), default=0)
    found = found[start:]
    if not found:
        return None
    files: dict[str, dict[str, object]] = {}
    for change in found:
        for entry in change.files:
            files[str(entry.get("path"))] = dict(entry)
    return Changes(
        patch="".join(c.patch if c.patch.endswith("\n") else c.patch + "\n" for c in found),
        scope="cumulative",
        files=tuple(files.values()),
        base=found[0].base,
        head=found[-1].head,
    )


def _ended(task: Task) -> tuple[int, int]:
    return (task.status.timestamp.seconds, task.status.timestamp.nanos)


@dataclass(frozen=True)
class Applied:
    directory: Path
    files: int


def apply(patch: str, directory: Path) -> Applied:
    """`git apply` of `patch` in `directory` (the user's checkout): checked first, then
    applied; nothing is written when any hunk does not apply (ClientError with git's words)."""
    if not directory.is_dir():
        raise ClientError(f"{directory} is not a directory")
    data = patch.encode()
    _git(directory, data, "apply", "--check", "--whitespace=nowarn", "-")
    _git(directory, data, "apply", "--whitespace=nowarn", "-")
    files = sum(1 for line in patch.splitlines() if line.startswith("diff --git "))
    return Applied(directory, files)


def _git(directory: Path, data: bytes, *args: str) -> None:
    try:
        done = subprocess.run(  # noqa: S603 - argv list, no shell; git of the user's PATH
            ["git", *args],  # noqa: S607 - the user's own git on their own checkout
            cwd=directory,
            input=data,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClientError(f"cannot run git in {directory}: {exc}") from exc
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise ClientError(f"the patch does not apply to {directory}, nothing changed:\n{reason}")
