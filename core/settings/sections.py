"""What each part of the daemon takes from the Settings, frozen and in its own units: the
task engine's `EngineConfig` (seconds and timedeltas instead of the file's milliseconds), the
storage's `StorageConfig` and the workspace manager's `WorkspaceConfig`. They read several
blocks, so they live above the block modules and the Settings model (no block imports the
model)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from core.engine.config import (
    Approvals,
    EngineConfig,
    Limits,
    Output,
    Retention,
    Timeouts,
    TurnOptionRules,
)
from core.settings import Settings
from core.storage.kinds import StorageConfig
from core.workspaces.config import WorkspaceConfig


def engine_config(settings: Settings) -> EngineConfig:
    server, storage, timeouts = settings.server, settings.storage, settings.timeouts
    return EngineConfig(
        limits=Limits(
            max_queued_turns=settings.session.max_queued_turns,
            max_concurrent_turns=server.max_concurrent_turns,
            max_concurrent_turns_per_principal=server.max_concurrent_turns_per_principal,
            max_waiting_turns=server.max_queued_turns,
            max_parts=server.max_parts,
            max_file_bytes=server.max_file_bytes,
        ),
        timeouts=Timeouts(
            turn=timeouts.turn / 1000 or None,
            idle=timeouts.idle / 1000 or None,
            shutdown=server.shutdown_timeout / 1000,
        ),
        output=Output(
            mode=settings.output.mode,
            progress=settings.output.progress,
            reasoning=settings.output.reasoning,
            debug_errors=server.debug_errors,
        ),
        approvals=Approvals(
            mode=settings.approvals.mode,
            timeout=settings.approvals.timeout / 1000,
            on_timeout=settings.approvals.on_timeout,
        ),
        retention=Retention(
            tasks=timedelta(milliseconds=storage.retention) if storage.retention else None,
            sweep_interval=storage.sweep_interval / 1000,
            session_sweep_interval=settings.session.cleanup_interval / 1000,
        ),
        turn_options=TurnOptionRules(
            settings.turn_options.allowed, settings.turn_options.defaults.options()
        ),
    )


def storage_config(settings: Settings) -> StorageConfig:
    """The storage's frozen config: the block, and the replicas' lease from `cluster`."""
    storage = settings.storage
    return StorageConfig(
        kind=storage.kind,
        path=storage.resolved_path(),
        url=storage.url or "",
        lease_ttl=timedelta(milliseconds=settings.cluster.lease_ttl),
    )


def workspace_config(settings: Settings) -> WorkspaceConfig:
    """The workspace manager's frozen config: the block, the backend's workingDirectory as
    the source, and the state directory for the default root and the saved patches."""
    block = settings.workspace
    state = settings.storage.state_directory()
    source = getattr(settings.backend_block(), "working_directory", None)
    return WorkspaceConfig(
        mode=block.mode,
        source=source.expanduser().resolve() if isinstance(source, Path) else None,
        root=(block.root or state / "workspaces").expanduser().resolve(),
        patches=(state / "workspace-patches").expanduser().resolve(),
        base_ref=block.base_ref,
        commit_turns=block.commit_turns,
        keep_branches=block.keep_branches,
        max_patch_bytes=block.max_patch_bytes,
        max_workspaces=block.max_workspaces,
    )
