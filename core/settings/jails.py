"""The jails `sandbox` settings imply: what each principal's agent processes may see, the
per-jail backend instances, and `check`'s word on it (docs/operations.md, "Several principals:
the sandbox")."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from core.backend import Backend, Diagnosis
from core.backend.config import AgentBlock
from core.backend.jails import PerJail
from core.backend.sandbox import Jail, find_bwrap, probe
from core.settings import Settings
from core.settings.sections import workspace_config
from core.workspaces.naming import principal_dir, slug


def _daemon_homes() -> list[Path]:
    homes = [Path.home()]
    with contextlib.suppress(KeyError):
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    # Never "/" (a user without a home): hiding it would hide the system.
    return [h.resolve() for h in homes if len(h.resolve().parts) > 1]


def _repository(source: Path) -> Path | None:
    """The top of the git checkout holding `source` (its `.git` is what a worktree reads)."""
    for folder in (source, *source.parents):
        if (folder / ".git").exists():
            return folder
    return None


class Jails:
    """The jail of each (principal, context) under these settings, and the per-jail agent home
    (`<state>/sandbox/<principal>[/<context>]/agent`, first filled with a copy of the
    block's `home`)."""

    def __init__(self, settings: Settings) -> None:
        config = settings.sandbox
        self._scope = config.scope
        self._network = config.network
        workspaces = workspace_config(settings)
        state = settings.storage.state_directory().expanduser().resolve()
        self._root = workspaces.root
        self._base = state / "sandbox"
        block = settings.backend_block()
        self._home = (
            block.home.expanduser().resolve()
            if isinstance(block, AgentBlock) and block.home is not None
            else None
        )
        env_home = block.env.get("HOME") if isinstance(block, AgentBlock) else None
        hidden = [*_daemon_homes(), state, workspaces.root]
        hidden += [p for p in (self._home, Path(env_home).resolve() if env_home else None) if p]
        read_only = [p.expanduser().resolve() for p in config.extra_read_only]
        self._read_write = [p.expanduser().resolve() for p in config.extra_read_write]
        source = workspaces.source
        if source is not None and workspaces.mode == "shared":
            # One directory for every context: nothing to wall off between principals there
            # (`check` says so); the agent works in it.
            self._read_write.append(source)
        elif source is not None and workspaces.mode == "worktree":
            # A worktree's `.git` names the repository's: read-only, so git works in it.
            repository = _repository(source)
            read_only.append(repository or source)
        self._hidden = tuple(hidden)
        self._read_only = tuple(read_only)
        self._bwrap = find_bwrap() or "bwrap"

    def key(self, principal: str, context_id: str) -> str:
        own = principal_dir(principal)
        return own if self._scope == "principal" else f"{own}/{slug(principal, context_id)}"

    def __call__(self, principal: str, context_id: str) -> Jail:
        key = self.key(principal, context_id)
        own = self._base / key
        workspaces = self._root / principal_dir(principal)
        if self._scope == "context":
            workspaces = workspaces / slug(principal, context_id)
        return Jail(
            key=key,
            bwrap=self._bwrap,
            network=self._network,
            hidden=self._hidden,
            read_only=self._read_only,
            read_write=(workspaces, own, *self._read_write),
            home=own / "home",
            launchers=self._base / ".launchers" / key,
        )

    def agent_home(self, jail: Jail) -> Path:
        """The jail's agent home, made now (a copy of the configured `home`) if new."""
        home = self._base / jail.key / "agent"
        if not home.exists():
            partial = home.with_name("agent.partial")
            shutil.rmtree(partial, ignore_errors=True)
            if self._home is not None and self._home.is_dir():
                shutil.copytree(self._home, partial, symlinks=True)
            else:
                partial.mkdir(parents=True)
            partial.rename(home)
        return home


def sandboxed(
    settings: Settings, template: Backend, create: Callable[[object], Backend]
) -> Backend:
    """`template` as it is without a sandbox; with one, a `PerJail` whose instances `create`
    builds from the backend's block with `home` set to the jail's own agent home."""
    if settings.sandbox.mode == "none":
        return template
    jails = Jails(settings)
    config = settings.backend_config()

    def make(jail: Jail) -> Backend:
        block = config
        if isinstance(block, AgentBlock) and isinstance(block, BaseModel):
            block = block.model_copy(update={"home": jails.agent_home(jail)})
        return create(block)

    return PerJail(template, make, jails)


def diagnose(settings: Settings) -> tuple[Diagnosis, list[str]]:
    """`check`'s sandbox line (does bubblewrap make sandboxes on this machine: a failure only
    when the config needs it) and its warnings (several principals, agents that run commands,
    and no sandbox between them)."""
    works, detail = probe(find_bwrap())
    mode = settings.sandbox.mode
    line = Diagnosis("sandbox", works or mode == "none", f"mode {mode}; {detail}")
    warnings = []
    principals = {entry.principal for entry in settings.server.auth.tokens}
    if mode == "none" and len(principals) > 1 and isinstance(settings.backend_block(), AgentBlock):
        warnings.append(
            f"the tokens name {len(principals)} principals and the {settings.backend} agent "
            "can run shell commands, but sandbox.mode is none: each principal's agent can read "
            "and change the others' workspaces and the daemon's state; set sandbox.mode "
            "bubblewrap (docs/operations.md, Several principals)"
        )
    if mode != "none" and settings.workspace.mode == "shared" and len(principals) > 1:
        warnings.append(
            "workspace.mode shared: every principal's agent works in the one workingDirectory, "
            "which the sandbox cannot wall off; use worktree or copy"
        )
    return line, warnings
