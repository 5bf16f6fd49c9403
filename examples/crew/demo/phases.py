"""`make crew-demo`: whole crews on this machine, no API key needed.

    python -m examples.crew.demo [--all | --fix-until-green | --review | --scripted |
                                  --manifest PATH] [--keep]

A phase reads a manifest (`demo/demo.json`: write, review, revise, then test and document;
`demo/fix-until-green.json`; `demo/review.json`: the cross-vendor review; `demo/scripted.json`:
the first with scripted stand-ins) that names the plan, the job input, one daemon config per
agent and the mock model servers they talk to. Then: starts the mock models (in this process)
and scripts them, writes the plan with each agent's `daemon` config and a free port, runs
`python -m examples.crew up` on it, runs the job, prints the report, checks that every step was
done by the backend its agent's config names (and, for a project, that the job's patch applies
to a fresh clone where the tests pass), then `python -m examples.crew down` and checks that no
daemon it started is left running. `--all` (what `make crew-demo` runs) runs the first three.

Everything about the agents is configuration: switching from scripted to real backends changes
the manifest and the daemon configs, not this file. Exit status 0 when every phase passed.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import anyio

from examples.crew.agents.fleet import alive, recorded
from examples.crew.demo.mock_models import MockModelError, Script, running
from examples.crew.ledger.ledger import Ledger
from examples.crew.ledger.states import RunState, StepState
from examples.crew.plan.plan import Plan, PlanError, load_plan
from examples.crew.run.job import JobError, run_job
from examples.crew.run.runner import JobOutcome
from examples.crew.show.events import NobodyAsker
from examples.crew.show.view import LineView

HERE = Path(__file__).resolve().parent  # examples/crew/demo: the manifests are beside it
REPO = HERE.parents[2]
BUILTIN = ("claude", "codex", "opencode", "copilot")
JOB = "crew-demo"
PHASES = ("demo", "fix-until-green", "review")


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


def free_port() -> int:
    """A port nothing listens on now (bound, then closed): the plan's port for an agent."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fleet_plan(manifest: Manifest, work: Path, env: dict[str, str]) -> Path:
    """The manifest's plan with each agent's daemon config (`daemon`) and a free port (its
    URL in the environment variable the plan reads), for `up`."""
    doc = json.loads(manifest.plan.read_text())
    for agent in manifest.agents:
        env[agent.url_env] = f"http://127.0.0.1:{free_port()}"
        doc["agents"][agent.name]["daemon"] = str(agent.config)
    path = work / manifest.plan.name
    path.write_text(json.dumps(doc, indent=2))
    return path


async def crew_command(env: Mapping[str, str], *argv: str) -> str:
    """`python -m examples.crew ARGV` (up, down, apply): its output; DemoError on failure."""
    done = await anyio.run_process(
        [sys.executable, "-m", "examples.crew", *argv], cwd=REPO, env=env, check=False
    )
    output = (done.stdout + done.stderr).decode(errors="replace").strip()
    for line in output.splitlines():
        print(f"demo: {argv[0]}: {line}", file=sys.stderr)
    if done.returncode != 0:
        raise DemoError(f"python -m examples.crew {argv[0]}: exit {done.returncode}")
    return output


def _advice(keep: bool, ledger: Path, root: Path) -> str | None:
    """The report's line on applying the job's patch: the demo's ledger (under `root`, the
    demo's temporary directory) is gone after it unless it is kept, and `apply` needs it."""
    if keep:
        return None  # the report's own advice names the kept ledger
    return (
        "This demo's ledger is in a temporary directory deleted when the demo ends: run the "
        f"demo again with `--keep` to apply the patch afterwards (`python -m examples.crew "
        f"apply --job {JOB} --ledger <the kept directory>/{ledger.relative_to(root)} --to DIR`)."
    )


async def run_demo(
    manifest: Manifest, work: Path, *, keep: bool = False, root: Path | None = None
) -> int:
    """One phase in `work` (inside `root`, the demo's temporary directory; default `work`)."""
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
    ledger_path = work / "state" / "crew.sqlite3"
    fleet = work / "state" / "daemons"
    async with running(list(manifest.models)) as models:
        for kind, model in models.items():
            env[manifest.models[kind]] = model.url
            for script in manifest.scripts.get(kind, []):
                model.answer(script)
            model.play(_with_python(manifest.turns.get(kind, [])))
            if kind in manifest.judges:
                model.judge_pytest()
            print(f"demo: mock model {kind} at {model.url}", file=sys.stderr)
        plan_path = fleet_plan(manifest, work, env)
        started = {}
        try:
            await crew_command(env, "up", str(plan_path), "--state", str(fleet))
            started = recorded(fleet)
            plan = load_plan(plan_path, env)
            async with Ledger.opened(ledger_path) as ledger:
                result = await run_job(
                    plan,
                    ledger,
                    JOB,
                    manifest.input,
                    asker=NobodyAsker(),
                    observer=LineView(),
                    environ=env,
                    apply_advice=_advice(keep, ledger_path, root or work),
                )
                wrong = await problems(plan, result.outcome, ledger, manifest.agents)
        finally:
            started = started or recorded(fleet)
            with anyio.CancelScope(shield=True):
                await crew_command(env, "down", str(plan_path), "--state", str(fleet))
    wrong += [
        f"{d.agent}: pid {d.pid} still running after down" for d in started.values() if alive(d)
    ]
    if manifest.project is not None and not wrong:
        wrong += await check_apply(origin, work, ledger_path, env)
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


async def check_apply(origin: Path, work: Path, ledger: Path, env: Mapping[str, str]) -> list[str]:
    """`apply` the job's combined patch to a fresh clone, as a person would, and run the
    project's tests there."""
    scratch = work / "scratch"
    _git(work, "clone", "-q", str(origin), str(scratch))
    try:
        await crew_command(
            env, "apply", "--job", JOB, "--ledger", str(ledger), "--to", str(scratch)
        )
    except DemoError:
        return [f"apply in the scratch checkout {scratch}"]
    print(f"demo: apply in {scratch}: exit 0", file=sys.stderr)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = await anyio.run_process(command, cwd=scratch, check=False)
    output = (done.stdout + done.stderr).decode(errors="replace").strip()
    print(
        f"demo: pytest after apply in {scratch}: exit {done.returncode}\n{output}", file=sys.stderr
    )
    if done.returncode != 0:
        return [f"pytest after apply in the scratch checkout: exit {done.returncode}"]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.crew.demo", description=__doc__)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="every phase: " + ", ".join(PHASES))
    which.add_argument("--scripted", action="store_true", help="scripted stand-in agents")
    which.add_argument(
        "--fix-until-green",
        action="store_true",
        help="fix-until-green.json: Codex and OpenCode, each in worktrees of its own",
    )
    which.add_argument(
        "--review", action="store_true", help="review.json: Codex writes, Claude reviews"
    )
    which.add_argument("--manifest", type=Path, help="another demo manifest")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    if args.manifest:
        manifests = [args.manifest]
    else:
        names = (
            PHASES
            if args.all
            else ["scripted"]
            if args.scripted
            else ["fix-until-green"]
            if args.fix_until_green
            else ["review"]
            if args.review
            else ["demo"]
        )
        manifests = [HERE / f"{name}.json" for name in names]
    work = Path(tempfile.mkdtemp(prefix="crew-demo-"))
    failed = []
    try:
        for n, path in enumerate(manifests, 1):
            print(f"demo: phase {n}/{len(manifests)}: {path.name}", file=sys.stderr)
            phase = work / path.stem if len(manifests) > 1 else work
            try:
                run = partial(run_demo, keep=args.keep, root=work)
                code = anyio.run(run, Manifest.load(path), phase)
            except (DemoError, MockModelError, PlanError, JobError) as exc:
                print(f"demo: {exc}", file=sys.stderr)
                code = 2
            if code:
                failed.append((path.name, code))
    finally:
        if args.keep:
            print(f"demo: work directory kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    for name, code in failed:
        print(f"demo: phase {name} failed (exit {code})", file=sys.stderr)
    return max((code for _, code in failed), default=0)
