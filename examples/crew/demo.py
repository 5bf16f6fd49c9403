"""`make crew-demo`: a whole crew on this machine, no API key needed.

    python -m examples.crew.demo [--scripted] [--manifest PATH] [--keep]

Reads a manifest (`demo/demo.json`, or `demo/scripted.json` with `--scripted`) that names the
plan, the job input, one daemon config per agent and the mock model servers they talk to. Then:
starts the mock models (in this process), starts one `a2a-wrapper serve CONFIG --port 0` per
agent on 127.0.0.1 (each in its own process group; its URL goes into the environment variable
the plan reads), runs the plan, prints the report, checks that every step was done by the
backend its agent's config names, and stops everything it started, by PID.

Everything about the agents is configuration: switching from scripted to real backends changes
the manifest and the daemon configs, not this file. Exit status 0 when every step was done by
its intended backend.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import anyio

from examples.crew.events import NobodyAsker
from examples.crew.job import JobError, run_job
from examples.crew.ledger import Ledger
from examples.crew.mock_models import MockModelError, Script, running
from examples.crew.plan import Plan, PlanError, load_plan
from examples.crew.runner import JobOutcome
from examples.crew.states import RunState, StepState
from examples.crew.view import LineView

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXE = Path(sys.executable).with_name("a2a-wrapper")
BUILTIN = ("claude", "codex", "opencode", "copilot")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class DemoError(Exception):
    pass


@dataclass(frozen=True)
class DemoAgent:
    name: str
    config: Path
    url_env: str

    def intended_backend(self) -> str:
        """The backend the config names (for a third-party backend: its `options.name`)."""
        doc = json.loads(self.config.read_text())
        backend = str(doc["backend"])
        if backend in BUILTIN:
            return backend
        return str(doc.get("options", {}).get("name", backend))


@dataclass(frozen=True)
class Manifest:
    plan: Path
    input: str
    agents: list[DemoAgent]
    models: dict[str, str]  # kind -> environment variable that receives its URL
    scripts: dict[str, list[Script]]
    turns: dict[str, list[list[dict[str, str]]]] = field(default_factory=dict)
    judges: frozenset[str] = frozenset()  # mock kinds that judge pytest output
    project: dict[str, str] | None = None  # a git project's files: each agent gets a clone
    tokens: tuple[str, ...] = ()  # environment variables that get a fresh bearer token

    @classmethod
    def load(cls, path: Path) -> Manifest:
        doc = json.loads(path.read_text())
        base = path.parent
        models = doc.get("models", {})
        return cls(
            plan=(base / doc["plan"]).resolve(),
            input=doc["input"],
            agents=[
                DemoAgent(name, (base / a["config"]).resolve(), a["urlEnv"])
                for name, a in doc["agents"].items()
            ],
            models={kind: m["urlEnv"] for kind, m in doc.get("models", {}).items()},
            scripts={
                kind: [Script(s["match"], s["reply"]) for s in m.get("answers", [])]
                for kind, m in models.items()
            },
            turns={kind: m["turns"] for kind, m in models.items() if "turns" in m},
            judges=frozenset(k for k, m in models.items() if m.get("judge") == "pytest"),
            project=dict(doc["project"]) if "project" in doc else None,
            tokens=tuple(doc.get("tokens", [])),
        )


class DaemonProcess:
    """One `a2a-wrapper serve`, in a process group of its own, stopped by its PID."""

    def __init__(self, agent: DemoAgent, env: Mapping[str, str], log: Path) -> None:
        self.agent = agent
        self._env = dict(env)
        self._log_path = log
        self._log: IO[str] | None = None
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> str:
        self._log = self._log_path.open("w")
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
            [str(EXE), "serve", str(self.agent.config), "--port", "0"],
            cwd=REPO,
            env=self._env,
            stdout=subprocess.PIPE,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        if self.proc.stdout is None:
            raise DemoError("no stdout pipe")
        line = self.proc.stdout.readline()
        if not line.startswith("a2a-wrapper listening on "):
            self.stop()
            log = self._log_path.read_text()[-2000:]
            raise DemoError(f"daemon {self.agent.name} did not start ({line.strip()!r}):\n{log}")
        self.url = line.split()[-1]
        return self.url

    def stop(self) -> int | None:
        """SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL the daemon's process group."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if self._log is not None:
            self._log.close()
        return proc.returncode


@asynccontextmanager
async def daemons(agents: list[DemoAgent], env: dict[str, str], logs: Path) -> AsyncIterator[None]:
    """Start every agent's daemon (its URL into `env[agent.url_env]`); stop them all after.
    Starting and stopping block, so they run in a thread: the mock models in this event loop
    must keep answering meanwhile."""
    started = [DaemonProcess(agent, env, logs / f"{agent.name}.log") for agent in agents]

    async def start(daemon: DaemonProcess) -> None:
        with anyio.fail_after(START_TIMEOUT):
            url = await anyio.to_thread.run_sync(daemon.start, abandon_on_cancel=True)
        env[daemon.agent.url_env] = url
        pid = daemon.proc.pid if daemon.proc else "?"
        print(
            f"demo: {daemon.agent.name}: {daemon.agent.intended_backend()} daemon, pid {pid}, "
            f"{url}",
            file=sys.stderr,
        )

    try:
        async with anyio.create_task_group() as tg:
            for daemon in started:
                tg.start_soon(start, daemon)
        yield
    finally:
        with anyio.CancelScope(shield=True):
            for daemon in reversed(started):
                code = await anyio.to_thread.run_sync(daemon.stop)
                print(f"demo: stopped {daemon.agent.name} (exit {code})", file=sys.stderr)


async def problems(
    plan: Plan, outcome: JobOutcome, ledger: Ledger, agents: list[DemoAgent]
) -> list[str]:
    """What is wrong: a step not done, or done by another backend than its agent's config."""
    intended = {a.name: a.intended_backend() for a in agents}
    found = []
    for step in plan.steps:
        state = outcome.steps[step.id]
        runs = await ledger.runs(outcome.job_id, step.id)
        backends = {r.backend for r in runs if r.state is RunState.DONE and r.backend}
        if state is not StepState.DONE:
            found.append(f"step {step.id}: {state}")
        elif backends != {intended[step.agent]}:
            found.append(f"step {step.id}: done by {sorted(backends)}, not {intended[step.agent]}")
    return found


async def run_demo(manifest: Manifest, work: Path) -> int:
    for name in ("state", "home", "work", "logs"):
        (work / name).mkdir(parents=True, exist_ok=True)
    origin = work / "project"
    if manifest.project is not None:
        make_project(manifest.project, origin)
    for agent in manifest.agents:
        (work / "work" / agent.name).mkdir(exist_ok=True)
        (work / "home" / agent.name).mkdir(exist_ok=True)
        if manifest.project is not None:  # as on machines of their own: a clone each
            _git(work, "clone", "-q", str(origin), str(work / "work" / agent.name))
    env = {
        **os.environ,
        "CREW_DEMO_STATE": str(work / "state"),
        "CREW_DEMO_HOME": str(work / "home"),
        "CREW_DEMO_WORK": str(work / "work"),
        "CREW_DEMO_REPO": str(REPO),
        "PYTHONUNBUFFERED": "1",
    }
    for name in manifest.tokens:  # the daemons require them, the plan's tokenEnv sends them
        env[name] = secrets.token_hex(16)
    async with running(list(manifest.models)) as models:
        for kind, model in models.items():
            env[manifest.models[kind]] = model.url
            for script in manifest.scripts.get(kind, []):
                model.answer(script)
            model.play(_with_python(manifest.turns.get(kind, [])))
            if kind in manifest.judges:
                model.judge_pytest()
            print(f"demo: mock model {kind} at {model.url}", file=sys.stderr)
        async with daemons(manifest.agents, env, work / "logs"):
            plan = load_plan(manifest.plan, env)
            async with Ledger.opened(work / "state" / "crew.sqlite3") as ledger:
                result = await run_job(
                    plan,
                    ledger,
                    "crew-demo",
                    manifest.input,
                    asker=NobodyAsker(),
                    observer=LineView(),
                    environ=env,
                )
                wrong = await problems(plan, result.outcome, ledger, manifest.agents)
    if manifest.project is not None and not wrong:
        wrong += await check_apply(origin, work, ledger.path)
    print(result.report, end="")
    for problem in wrong:
        print(f"demo: FAIL {problem}", file=sys.stderr)
    if not wrong:
        print("demo: ok, every step was done by its intended backend", file=sys.stderr)
    return 1 if wrong else 0


# ----- a project the agents work on (fix-until-green) -------------------------------------------

IDENTITY = ("-c", "user.name=crew-demo", "-c", "user.email=crew-demo@localhost")


def _git(cwd: Path, *argv: str) -> None:
    done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell
        ["git", *IDENTITY, *argv],  # noqa: S607 - git from PATH
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise DemoError(f"git {' '.join(argv)}: {done.stderr.strip()}")


def make_project(files: Mapping[str, str], origin: Path) -> None:
    """A git repository of the project's files, one commit on branch main."""
    for name, text in files.items():
        path = origin / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    _git(origin, "init", "-q", "-b", "main")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-q", "-m", "the project before the crew")


def _with_python(turns: list[list[dict[str, str]]]) -> list[list[dict[str, str]]]:
    """`${PYTHON}` in a scripted step is this interpreter (the one that has pytest)."""
    return [
        [{k: v.replace("${PYTHON}", sys.executable) for k, v in s.items()} for s in t]
        for t in turns
    ]


async def check_apply(origin: Path, work: Path, ledger: Path) -> list[str]:
    """`apply` the job's combined patch to a fresh clone, as a person would, and run the
    project's tests there."""
    scratch = work / "scratch"
    _git(work, "clone", "-q", str(origin), str(scratch))
    argv = ["-m", "examples.crew", "apply", "--job", "crew-demo", "--ledger", str(ledger)]
    for what, command, cwd in (
        ("apply", [*argv, "--to", str(scratch)], REPO),
        ("pytest after apply", ["-m", "pytest", "-q", "-p", "no:cacheprovider"], scratch),
    ):
        done = await anyio.run_process([sys.executable, *command], cwd=cwd, check=False)
        output = (done.stdout + done.stderr).decode(errors="replace").strip()
        print(f"demo: {what} in {scratch}: exit {done.returncode}\n{output}", file=sys.stderr)
        if done.returncode != 0:
            return [f"{what} in the scratch checkout: exit {done.returncode}"]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.crew.demo", description=__doc__)
    parser.add_argument("--scripted", action="store_true", help="scripted stand-in agents")
    parser.add_argument(
        "--fix-until-green",
        action="store_true",
        help="fix-until-green.json: Codex and OpenCode, each in worktrees of its own",
    )
    parser.add_argument("--manifest", type=Path, help="another demo manifest")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    name = "scripted" if args.scripted else "fix-until-green" if args.fix_until_green else "demo"
    default = HERE / "demo" / f"{name}.json"
    manifest = Manifest.load(args.manifest or default)
    work = Path(tempfile.mkdtemp(prefix="crew-demo-"))
    try:
        return anyio.run(run_demo, manifest, work)
    except (DemoError, MockModelError, PlanError, JobError) as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"demo: work directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
