"""`python -m examples.crew up PLAN` / `down PLAN`: start (and stop) the daemons a plan's agents
name, so a plan runs against agents on this machine without starting each by hand.

An agent (or alternate) with `daemon` (an a2a-wrapper config file, relative to the plan's
folder) is started as `a2a-wrapper serve CONFIG --host H --port P`, H and P from its card URL,
in a process group of its own, with its task store and workspaces under one state directory
(`<state>/<agent>/tasks.sqlite3`, `<state>/<agent>/workspaces`; the environment variable
`CREW_AGENT_STATE` names `<state>/<agent>` for the config to use, e.g. for `home`). `up`
waits until each answers `/ready`, records its PID in `<state>/daemons.json` and prints where
it listens; `down` stops the recorded ones by PID (SIGTERM to the group, SIGKILL past the
grace period), never by name, and only a process that is still the daemon it started.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio
import httpx

from examples.crew.plan.plan import Plan

EXE = Path(sys.executable).with_name("a2a-wrapper")
RECORD = "daemons.json"
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0


class FleetError(Exception):
    """A daemon could not be started (or its record read); the message says which and why."""


@dataclass(frozen=True)
class Daemon:
    agent: str
    pid: int
    url: str
    config: str
    log: str


def default_state(plan: Plan) -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "a2a-wrapper" / "crew-up" / plan.name


def wanted(plan: Plan, plan_path: Path) -> dict[str, tuple[Path, str]]:
    """Every agent and alternate that names a daemon config: name -> (config, base URL)."""
    found = {}
    for role in plan.agents:
        for name, spec in plan.candidates(role):
            if spec.daemon is not None:
                config = (plan_path.parent / spec.daemon).resolve()
                url = httpx.URL(spec.card_url)
                found[name] = (config, f"{url.scheme}://{url.host}:{url.port or 80}")
    return found


def recorded(state: Path) -> dict[str, Daemon]:
    """The daemons `up` started and `down` has not stopped, by agent."""
    path = state / RECORD
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text())
        return {name: Daemon(**item) for name, item in doc.items()}
    except (ValueError, TypeError) as exc:
        raise FleetError(f"{path} is not a record of daemons: {exc}") from exc


def _write(state: Path, daemons: Mapping[str, Daemon]) -> None:
    path = state / RECORD
    if not daemons:
        path.unlink(missing_ok=True)
        return
    path.write_text(json.dumps({n: asdict(d) for n, d in daemons.items()}, indent=2) + "\n")


def alive(daemon: Daemon) -> bool:
    """Whether the PID is still that daemon (not gone, not a zombie, not a reused PID)."""
    proc = Path(f"/proc/{daemon.pid}")
    try:
        stat = (proc / "stat").read_text()
        argv = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    zombie = stat.rpartition(")")[2].split()[0] == "Z"
    return not zombie and daemon.config.encode() in argv and b"serve" in argv


async def _ready(url: str, proc: subprocess.Popen[bytes], log: Path, within: float) -> None:
    """Until the daemon answers /ready 200; FleetError if it exits or takes too long."""
    async with httpx.AsyncClient(timeout=5.0) as http:
        with anyio.move_on_after(within):
            while proc.poll() is None:
                try:
                    if (await http.get(f"{url}/ready")).status_code == httpx.codes.OK:
                        return
                except httpx.HTTPError:
                    pass  # not listening yet
                await anyio.sleep(0.2)
    tail = (await anyio.Path(log).read_text(errors="replace"))[-2000:]
    why = f"exited with {proc.returncode}" if proc.poll() is not None else "is not ready"
    raise FleetError(f"the daemon at {url} {why} (log {log}):\n{tail}")


async def up(
    plan: Plan,
    plan_path: Path,
    state: Path,
    environ: Mapping[str, str] | None = None,
    *,
    ready_within: float = READY_TIMEOUT,
) -> list[Daemon]:
    """Start every daemon the plan names that is not up yet, and wait until each is ready.
    On a failure, the daemons this call started are stopped again."""
    env = dict(os.environ if environ is None else environ)
    await anyio.Path(state).mkdir(parents=True, exist_ok=True)
    record = recorded(state)
    started: dict[str, Daemon] = {}
    try:
        async with anyio.create_task_group() as tg:
            for name, (config, url) in wanted(plan, plan_path).items():
                known = record.get(name)
                if known is not None and alive(known):
                    continue
                tg.start_soon(_start, name, config, url, state, env, ready_within, started)
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await _stop(list(started.values()))
        if isinstance(exc, BaseExceptionGroup):
            failed, rest = exc.split(FleetError)
            if failed is not None and rest is None:  # every error is a daemon's: say them all
                raise FleetError("\n".join(str(e) for e in failed.exceptions)) from None
        raise
    record.update(started)
    _write(state, record)
    return [record[n] for n in sorted(record)]


async def _start(  # noqa: PLR0917 - one daemon's start, from up()'s loop
    name: str,
    config: Path,
    url: str,
    state: Path,
    env: dict[str, str],
    within: float,
    started: dict[str, Daemon],
) -> None:
    home = state / name.replace("#", "-")
    await anyio.Path(home).mkdir(parents=True, exist_ok=True)
    log = home / "daemon.log"
    parsed = httpx.URL(url)
    daemon_env = {
        **env,
        "CREW_AGENT_STATE": str(home),
        "A2A_WRAPPER__STORAGE__PATH": str(home / "tasks.sqlite3"),
        "A2A_WRAPPER__WORKSPACE__ROOT": str(home / "workspaces"),
        "PYTHONUNBUFFERED": "1",
    }
    argv = [str(EXE), "serve", str(config), "--host", parsed.host, "--port", str(parsed.port)]
    with log.open("ab") as out:
        proc = subprocess.Popen(  # noqa: S603, ASYNC220 - a fixed argument list, no shell; returns at once
            argv,
            env=daemon_env,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    daemon = Daemon(name, proc.pid, url, str(config), str(log))
    started[name] = daemon
    try:
        await _ready(url, proc, log, within)
    except FleetError as exc:
        raise FleetError(f"{name}: {exc}") from None


async def _stop(daemons: list[Daemon]) -> list[str]:
    """SIGTERM each daemon's process group, wait, SIGKILL what is left; what happened."""
    said = []
    for daemon in daemons:
        if not alive(daemon):
            said.append(f"{daemon.agent}: pid {daemon.pid} was not running")
            continue
        os.killpg(daemon.pid, signal.SIGTERM)
        with anyio.move_on_after(STOP_TIMEOUT):
            while alive(daemon):  # noqa: ASYNC110 - another process's exit: nothing to await
                await anyio.sleep(0.1)
        if alive(daemon):
            os.killpg(daemon.pid, signal.SIGKILL)
            said.append(f"{daemon.agent}: pid {daemon.pid} killed (no exit after SIGTERM)")
        else:
            said.append(f"{daemon.agent}: pid {daemon.pid} stopped")
    return said


async def down(state: Path) -> list[str]:
    """Stop every daemon recorded in the state directory; forget them."""
    record = recorded(state)
    said = await _stop([record[n] for n in sorted(record)])
    _write(state, {})
    return said
