"""The Copilot CLI child: one `CopilotClient` (JSON-RPC over stdio to `copilot --headless`) at a
time, started on demand, watched for a crash, replaced by the next turn after one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup
from copilot import CopilotClient, RuntimeConnection

from core.backend import binaries, procfs
from core.backend.base import BackendUnavailableError
from core.backend.binaries import PROJECT_TOOLS, CliNotFoundError, CliSource
from core.backend.process import track, untrack
from wrappers import pins
from wrappers.copilot.config import CopilotConfig

log = structlog.get_logger(__name__)

# The SDK release pins this CLI release (github-copilot-sdk==1.0.25 -> @github/copilot@1.0.102).
PINNED_CLI_VERSION = pins.version("copilot")  # wrappers/npm-agents.txt
STOP_TIMEOUT = 10.0


def find_cli(config: CopilotConfig, environ: Mapping[str, str]) -> Path:
    """The CLI binary: `cliPath`, else `COPILOT_CLI_PATH` (the same override, as a variable),
    else the pinned one `make` installs in .tools, else `copilot` on PATH. Raises
    CliNotFoundError naming what was tried.

    The path is always handed to the SDK explicitly: without one it downloads a runtime.
    """
    variable = config.env.get("COPILOT_CLI_PATH") or environ.get("COPILOT_CLI_PATH")
    cli_path: Path | None = config.cli_path
    key = "copilot.cliPath"
    if cli_path is None and variable:
        cli_path, key = Path(variable), "COPILOT_CLI_PATH"
    elif cli_path is None:
        key = "copilot.cliPath (or COPILOT_CLI_PATH)"
    # The platform package holds the native binary; `.bin/copilot` is a loader that needs Node.
    pinned = sorted(PROJECT_TOOLS.glob("@github/copilot-*/copilot"))
    return binaries.find_cli(
        cli_path,
        pinned,
        "copilot",
        CliSource(
            "the copilot CLI",
            key,
            pins.install_hint("copilot"),
        ),
        search_path=config.env.get("PATH") or environ.get("PATH"),
    )


def child_env(config: CopilotConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The CLI's environment: the daemon's, then `env`, then what the block implies."""
    env = {**environ, **config.env}
    env.setdefault("COPILOT_AUTO_UPDATE", "false")
    if config.home is not None:
        env["COPILOT_HOME"] = str(Path(os.path.expanduser(config.home)).resolve())
    provider = config.provider
    if config.offline and provider is not None and config.model:
        # Offline mode refuses to start without a provider in the environment (a per-session
        # provider is not enough), and a provider there needs a model there too.
        env["COPILOT_OFFLINE"] = "true"
        env["COPILOT_PROVIDER_BASE_URL"] = provider.base_url
        env["COPILOT_PROVIDER_TYPE"] = provider.type
        env["COPILOT_PROVIDER_WIRE_API"] = provider.wire_api
        env["COPILOT_MODEL"] = config.model
        if provider.api_key:
            env["COPILOT_PROVIDER_API_KEY"] = provider.api_key
    return env


@dataclass(eq=False)
class Child:
    """One started CLI process and its client; `exited` is set when the process is gone."""

    client: CopilotClient
    generation: int
    process: subprocess.Popen[bytes] | None = None
    version: str = ""
    exited: anyio.Event = field(default_factory=anyio.Event)
    returncode: int | None = None

    @property
    def alive(self) -> bool:
        if self.exited.is_set():
            return False
        return self.process is None or self.process.poll() is None


class CopilotRuntime:
    """Owns the CLI child. `child()` returns the live one, starting a new one when there is none
    (at first use or after a crash); `on_exit` hears of every child that ends unasked."""

    def __init__(
        self,
        config: CopilotConfig,
        *,
        environ: Mapping[str, str] | None = None,
        on_exit: Callable[[Child], None] = lambda child: None,
    ) -> None:
        self._config = config
        self._environ = dict(os.environ if environ is None else environ)
        self._on_exit = on_exit
        self._lock = anyio.Lock()
        self._current: Child | None = None
        self._generation = 0
        self._tg: TaskGroup | None = None
        self._closing = False

    def bind(self, tg: TaskGroup | None) -> None:
        """The task group that owns the crash watchers (the backend's `serve`; None once it
        ends). The child already running gets its watcher now."""
        self._tg = tg
        child = self._current
        if tg is not None and child is not None and child.process is not None:
            tg.start_soon(self._watch, child, child.process)

    @property
    def current(self) -> Child | None:
        return self._current

    async def child(self) -> Child:
        async with self._lock:
            if self._current is not None and self._current.alive:
                return self._current
            if self._current is not None:
                await _force_stop(self._current)
            self._current = await self._start()
            return self._current

    async def _start(self) -> Child:
        if self._closing:
            raise BackendUnavailableError("the Copilot backend is shutting down")
        try:
            cli = find_cli(self._config, self._environ)
        except CliNotFoundError as exc:
            raise BackendUnavailableError(str(exc)) from exc
        connection = RuntimeConnection.for_stdio(path=str(cli))
        connection.env = child_env(self._config, self._environ)
        byok = self._config.provider is not None
        client = CopilotClient(
            connection=connection,
            working_directory=str(self._config.working_directory.resolve()),
            github_token=None if byok else self._config.github_token,
            use_logged_in_user=not byok and self._config.github_token is None,
        )
        self._generation += 1
        child = Child(client, self._generation)
        try:
            await client.start()
        except Exception as exc:
            child.process = _process_of(client)
            await _force_stop(child)
            raise BackendUnavailableError(f"the copilot CLI did not start: {exc}") from exc
        child.process = _process_of(client)
        if child.process is not None:
            # The SDK started it: record it for the daemon's process hygiene.
            await track(child.process.pid)
        try:
            status = await client.get_status()
            child.version = status.version
        except Exception:  # the version is informative only
            log.warning("copilot.status_failed", exc_info=True)
        if self._tg is not None and child.process is not None:
            self._tg.start_soon(self._watch, child, child.process)
        log.info("copilot.started", generation=child.generation, version=child.version)
        return child

    async def _watch(self, child: Child, process: subprocess.Popen[bytes]) -> None:
        """Wait for the process to end; a thread waits, abandoned when the watch is cancelled
        (the process ends at shutdown anyway)."""
        child.returncode = await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)
        await untrack(process.pid)
        child.exited.set()
        if not self._closing:
            log.warning("copilot.exited", generation=child.generation, returncode=child.returncode)
            self._on_exit(child)

    async def kill(self, child: Child) -> None:
        """Stop this child hard (a turn that does not stop when aborted)."""
        async with self._lock:
            await _force_stop(child)
            if self._current is child:
                self._current = None

    async def aclose(self) -> None:
        self._closing = True
        async with self._lock:
            current, self._current = self._current, None
        if current is None:
            return
        stopped = False
        if current.alive:
            with anyio.move_on_after(STOP_TIMEOUT, shield=True):
                try:
                    await current.client.stop()
                    stopped = True
                except Exception:
                    log.warning("copilot.stop_failed", exc_info=True)
        if not stopped:
            await _force_stop(current)
        _close_pipes(current)


def _process_of(client: CopilotClient) -> subprocess.Popen[bytes] | None:
    """The CLI process the SDK spawned.

    github-copilot-sdk 1.0.25 (pinned) spawns the CLI itself and reports neither the process nor
    a lost connection: when the CLI dies mid-turn no event ever comes. Its Popen is the one way
    to notice; a test kills the CLI mid-turn to keep this honest across upgrades.
    """
    process = getattr(client, "_cli_process", None)
    return process if isinstance(process, subprocess.Popen) else None


async def _force_stop(child: Child) -> None:
    """Kill the CLI and what it started: its shell tools run in sessions of their own, which
    outlive a killed CLI unless killed first."""
    if child.process is not None and child.process.poll() is None:
        procfs.kill_below(child.process.pid, groups=True)
    with anyio.CancelScope(shield=True):
        try:
            await child.client.force_stop()
        except Exception:
            log.warning("copilot.force_stop_failed", exc_info=True)
    _close_pipes(child)


def _close_pipes(child: Child) -> None:
    """The SDK stops the process but leaves its stdout/stderr pipes to the garbage collector."""
    process = child.process
    if process is None or process.poll() is None:
        return
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()
