"""The engine's `TurnHooks` for workspaces: a turn runs in its context's workspace, with the
caller's patch applied first, and what it changed comes back as the `changes` artifact.

In `shared` mode every context works in workingDirectory, so the turns of all contexts pass
one FIFO gate: one runs at a time (a backend given as a plain factory names no
workingDirectory, so nothing is known to be shared, and there is no gate). In `worktree` and
`copy` modes each context has its own workspace, and its lane runs one turn at a time there.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import structlog

from core.backend import ArtifactOut, DataContent, FileContent, TextContent, Turn, Usage
from core.engine.gate import Gate
from core.engine.turn.plugins import NO_REPORT, StopTurnError, TurnReport
from core.wire.errors import InvalidParamsError
from core.wire.models import Message
from core.workspaces.git import GitError
from core.workspaces.making import Workspace, WorkspaceError
from core.workspaces.manager import Changes, WorkspaceManager
from core.workspaces.patches import Patch, PatchError, is_patch, read_patch

log = structlog.get_logger(__name__)

CHANGES_ARTIFACT = "changes"
PATCH_NAME = "changes.patch"
PATCH_MEDIA_TYPE = "text/x-diff"
_NOT_READY = (
    "The daemon could not prepare this context's workspace; the daemon log says why. "
    "Nothing was changed."
)


@dataclass
class _Running:
    workspace: Workspace | None = None
    before: str | None = None
    gated: bool = False


def wants_cumulative(metadata: Mapping[str, Any]) -> bool:
    """The caller asks for the diff since the base: request metadata
    `{"a2aWrapper": {"changes": "cumulative"}}`."""
    section = metadata.get("a2aWrapper")
    return isinstance(section, dict) and section.get("changes") == "cumulative"


def fork_source(metadata: Mapping[str, Any]) -> str | None:
    """The context a new context's first turn forks from, as the engine checked it and put
    it in the turn's `{"a2aWrapper": {"forkFrom": ...}}` (the workspace manager looks it up
    among the turn's principal's own workspaces only)."""
    section = metadata.get("a2aWrapper")
    source = section.get("forkFrom") if isinstance(section, dict) else None
    return source if isinstance(source, str) and source else None


class WorkspaceHooks:
    def __init__(self, manager: WorkspaceManager) -> None:
        self._manager = manager
        self._config = manager.config
        self._shared = Gate(1)
        self._running: dict[str, _Running] = {}

    # ----- before anything is stored ------------------------------------------------------

    def check_message(self, message: Message) -> None:
        self.refuse(message)

    def refuse(self, message: Message) -> None:
        """InvalidParams for a patch part that is malformed, too large or names a path outside
        the workspace (only where contexts have workspaces of their own)."""
        if not self._config.private:
            return
        total, limit = 0, self._config.max_patch_bytes
        for index, part in enumerate(message.parts):
            media = (part.media_type or "").split(";")[0].strip().lower()
            content = FileContent(media_type=media, url=part.url)
            if not is_patch(content):
                continue
            field = f"message.parts[{index}]"
            try:
                data = base64.b64decode(part.raw, validate=True) if part.raw is not None else None
                # The message's patches apply as one: the limit holds for them together.
                read_patch(replace(content, data=data), max_bytes=limit, before=total)
                total += len(data or b"")
            except binascii.Error:
                raise InvalidParamsError(
                    f"{field}: the patch is not valid base64", violations=[(field, "not base64")]
                ) from None
            except PatchError as exc:
                raise InvalidParamsError(
                    f"{field}: {exc}", violations=[(field, str(exc))]
                ) from None

    # ----- TurnHooks ----------------------------------------------------------------------

    async def prepare(self, turn: Turn) -> Turn:
        if not self._config.private:
            if self._config.source is None:
                return turn  # no workingDirectory the daemon knows of: nothing shared to gate
            await self._shared.__aenter__()
            self._running[turn.task_id] = _Running(gated=True)
            return turn
        patches = [c for c in turn.parts if is_patch(c) and isinstance(c, FileContent)]
        manager = self._manager
        try:
            workspace = await manager.ensure(
                turn.principal, turn.context_id, fork_from=fork_source(turn.metadata)
            )
            read: list[Patch] = []
            limit = self._config.max_patch_bytes
            for content in patches:
                read.append(
                    read_patch(content, max_bytes=limit, before=sum(len(p.data) for p in read))
                )
            applied = list(dict.fromkeys(p for patch in read for p in patch.paths))
            if read:
                # Every patch part of the message as one patch: all of them apply, or none.
                await manager.apply(workspace, Patch(_joined(read), tuple(applied)))
            before = await manager.snapshot(workspace)
        except (WorkspaceError, PatchError) as exc:
            raise StopTurnError(getattr(exc, "reason", str(exc))) from exc
        except (GitError, OSError) as exc:
            log.exception("workspace.prepare_failed", context_id=turn.context_id)
            raise StopTurnError(_NOT_READY) from exc
        self._running[turn.task_id] = _Running(workspace, before)
        parts = tuple(c for c in turn.parts if not is_patch(c))
        if applied:
            note = ", ".join(applied)
            parts = (
                *parts,
                TextContent(
                    f"(The caller's patch to {note} was applied to the working directory "
                    "before this message.)"
                ),
            )
        return replace(turn, cwd=workspace.path, parts=parts)

    async def finish(self, turn: Turn) -> TurnReport:
        running = self._running.get(turn.task_id)
        if running is None or running.workspace is None or running.before is None:
            return NO_REPORT
        workspace, manager = running.workspace, self._manager
        try:
            after = await manager.snapshot(workspace)
            if after == running.before:
                return TurnReport(
                    sections={"workspace": workspace.describe(await manager.head(workspace))}
                )
            since = running.before
            cumulative = wants_cumulative(turn.metadata)
            if cumulative:
                since = await manager.tree_of(workspace, workspace.record.base)
            changes = await manager.changes(workspace, since, after)
            commit = None
            if self._config.commit_turns:
                commit = await manager.commit(
                    workspace, f"a2a-wrapper: turn of task {turn.task_id}", after
                )
        except (GitError, OSError):
            log.exception("workspace.changes_failed", context_id=turn.context_id)
            return NO_REPORT
        head = commit or (changes.head if changes is not None else workspace.record.base)
        sections = {"workspace": workspace.describe(head)}
        if changes is None:
            return TurnReport(sections=sections)
        changes = replace(changes, head=head, commit=commit)
        return TurnReport((_artifact(changes, cumulative=cumulative),), sections)

    async def release(self, turn: Turn) -> None:
        running = self._running.pop(turn.task_id, None)
        if running is not None and running.gated:
            await self._shared.__aexit__(None, None, None)

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        return None


def _joined(patches: list[Patch]) -> bytes:
    return b"".join(p.data if p.data.endswith(b"\n") else p.data + b"\n" for p in patches)


def _artifact(changes: Changes, *, cumulative: bool) -> ArtifactOut:
    data: dict[str, Any] = {
        "base": changes.base,
        "head": changes.head,
        "scope": "cumulative" if cumulative else "turn",
        "files": [
            {"path": f.path, "status": f.status, "additions": f.additions, "deletions": f.deletions}
            for f in changes.files
        ],
    }
    if changes.commit is not None:
        data["commit"] = changes.commit
    return ArtifactOut(
        name=CHANGES_ARTIFACT,
        parts=(
            DataContent(data),
            FileContent(data=changes.patch, name=PATCH_NAME, media_type=PATCH_MEDIA_TYPE),
        ),
    )
