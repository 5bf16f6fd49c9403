"""What `a2a-wrapper check` says about workspaces, and the table `a2a-wrapper workspaces`
prints."""

from __future__ import annotations

from core.backend import Diagnosis
from core.storage.contracts import WorkspaceRecord
from core.workspaces.config import WorkspaceConfig
from core.workspaces.git import is_repository

SHARED_WARNING = (
    "workspace.mode is shared, server.maxConcurrentTurns is {turns} and workingDirectory is a "
    "git repository: contexts take turns in one checkout (one at a time); workspace.mode "
    "worktree gives each context its own and runs them in parallel"
)


def diagnose(config: WorkspaceConfig, max_concurrent_turns: int) -> tuple[Diagnosis, list[str]]:
    """The `workspace` line of `check`, and its warnings."""
    source = config.source
    repository = source is not None and source.is_dir() and is_repository(source)
    warnings = []
    if config.mode == "shared":
        if repository and max_concurrent_turns > 1:
            warnings.append(SHARED_WARNING.format(turns=max_concurrent_turns))
        return Diagnosis("workspace", True, "shared (every context in workingDirectory)"), warnings
    where = f"{config.mode} under {config.root}"
    if config.mode == "worktree" and not repository:
        return (
            Diagnosis(
                "workspace",
                False,
                f"{where}: workingDirectory is not in a git repository (use mode copy)",
            ),
            warnings,
        )
    return Diagnosis("workspace", True, where), warnings


def table(rows: list[tuple[WorkspaceRecord, int, bool]]) -> list[str]:
    """One line per workspace: context, principal, mode, branch, size, created, state, path
    (oldest first). STATE is `expired-unsaved` for one whose save failed when its session
    expired: it is kept, and each session sweep tries again."""
    if not rows:
        return ["no workspaces"]
    lines = ["CONTEXT\tPRINCIPAL\tMODE\tBRANCH\tSIZE\tCREATED\tSTATE\tPATH"]
    for record, size, expired in rows:
        lines.append(
            "\t".join(
                (
                    record.context_id,
                    record.principal or "-",
                    record.mode,
                    record.branch,
                    _size(size),
                    record.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "expired-unsaved" if expired else "active",
                    record.path,
                )
            )
        )
    return lines


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover - the loop returns at GiB
