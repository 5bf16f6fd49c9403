"""What a face for people asks of the workspaces (the console, through Operations): read
only, always for one principal."""

from __future__ import annotations

import anyio
import structlog

from core.storage.contracts import WorkspaceRecord, WorkspaceStore
from core.workspaces.git import GitError
from core.workspaces.making import WorkspaceError
from core.workspaces.manager import Changes, WorkspaceManager

log = structlog.get_logger(__name__)


class WorkspaceQueries:
    def __init__(self, manager: WorkspaceManager, store: WorkspaceStore) -> None:
        self._manager = manager
        self._store = store

    async def listing(self, principal: str) -> list[tuple[WorkspaceRecord, int, bool]]:
        """`principal`'s workspaces: each with its size in bytes and whether it expired
        without being saved."""
        return [row for row in await self._manager.listing() if row[0].principal == principal]

    async def cumulative(self, principal: str, context_id: str) -> Changes | None:
        """Everything the context's workspace changed since it was made (its base), as the
        workspace stands now; None when the context has no workspace of its own or nothing
        changed. Read with the same git the turns' changes are (the agent's `.git` is never
        read), through a private index: the workspace is left as it is."""
        record = await self._store.get(principal, context_id)
        if record is None or not await anyio.Path(record.path).is_dir():
            return None
        manager = self._manager
        try:
            workspace = await manager.open(record)
            after = await manager.snapshot(workspace)
            since = await manager.tree_of(workspace, record.base)
            return await manager.changes(workspace, since, after)
        except (GitError, WorkspaceError, OSError):
            log.exception("workspace.cumulative_failed", context_id=context_id)
            raise WorkspaceError(
                "The daemon could not read this context's workspace; the daemon log says why."
            ) from None
