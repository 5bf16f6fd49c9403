"""`python -m examples.crew run PLAN --input "..." [--job ID]` (and `check`, `report`, `apply`,
`serve`, `up`, `down`).

Exit status: 0 every step done; 1 the job failed or finished with gaps; 2 the plan, the job or
an agent is unusable; 3 a step waits for your answer (re-run the job to give it); 130
interrupted (remote tasks go on; re-run the same job to pick them up). `apply --job ID
[--to DIR]`: 0 applied (or nothing to apply), 1 refused (a conflict; nothing changed), 2 no
such job.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import anyio

from examples.crew.agent import serve_overrides
from examples.crew.agents.fleet import READY_TIMEOUT, FleetError, default_state, down, up, wanted
from examples.crew.daemon import ConfigError, load, logs, serve
from examples.crew.ledger.ledger import Ledger, LedgerError
from examples.crew.ledger.states import JobState
from examples.crew.plan.changes import ApplyError, apply_patch, job_patch
from examples.crew.plan.plan import Plan, PlanError, load_plan
from examples.crew.run.job import JobError, JobResult, close, connect, new_job_id, run_job
from examples.crew.show.events import Asker, NobodyAsker, PresetAnswers
from examples.crew.show.report import build_report
from examples.crew.show.view import LineView, TerminalAsker, TerminalView

EXIT = {JobState.DONE: 0, JobState.PARTIAL: 1, JobState.FAILED: 1, JobState.NEEDS_INPUT: 3}


def default_ledger() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "a2a-wrapper" / "crew.sqlite3"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m examples.crew", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run (or resume) a job")
    run.add_argument("plan", type=Path)
    given = run.add_mutually_exclusive_group()
    given.add_argument("--input", help="the job's input (what the crew should do)")
    given.add_argument("--input-file", type=Path, help="read the input from a file")
    run.add_argument("--job", help="job id; an existing id resumes that job")
    run.add_argument("--ledger", type=Path, default=None, help="the SQLite ledger")
    run.add_argument("--report", type=Path, help="also write the Markdown report here")
    run.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="STEP=TEXT",
        help="answer a step's pending question (repeatable)",
    )
    run.add_argument(
        "--non-interactive",
        action="store_true",
        help="never prompt (default when stdin is not a terminal)",
    )
    check = commands.add_parser("check", help="validate a plan and read every agent's card")
    check.add_argument("plan", type=Path)
    check.add_argument(
        "--ledger", type=Path, default=None, help="the ledger whose agent records to show"
    )
    report = commands.add_parser("report", help="print a job's report from the ledger")
    report.add_argument("plan", type=Path)
    report.add_argument("--job", required=True)
    report.add_argument("--ledger", type=Path, default=None)
    apply = commands.add_parser(
        "apply", help="apply a job's combined patch to a checkout (all of it, or nothing)"
    )
    apply.add_argument("--job", required=True)
    apply.add_argument("--to", type=Path, default=Path(), help="the checkout (default: here)")
    apply.add_argument("--ledger", type=Path, default=None)
    for name, what in (
        ("up", "start the daemons the plan's agents name (`daemon`), wait until each is ready"),
        ("down", "stop the daemons `up` started for this plan (by their recorded PIDs)"),
    ):
        fleet = commands.add_parser(name, help=what)
        fleet.add_argument("plan", type=Path)
        fleet.add_argument(
            "--state",
            type=Path,
            default=None,
            help="where the daemons' stores, workspaces, logs and PIDs go "
            "(default: ~/.local/state/a2a-wrapper/crew-up/<plan name>)",
        )
        if name == "up":
            fleet.add_argument(
                "--timeout", type=float, default=READY_TIMEOUT, help="seconds to wait for each"
            )
    serve = commands.add_parser("serve", help="serve the crew as one A2A agent")
    serve.add_argument("plan", type=Path)
    serve.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--ledger", type=Path, default=None, help="the SQLite ledger")
    serve.add_argument("--state", type=Path, default=None, help="the daemon's task store directory")
    return parser


async def _job_patch(path: Path, job_id: str) -> str:
    async with Ledger.opened(path) as ledger:
        if await ledger.job(job_id) is None:
            raise JobError(f"no job {job_id!r} in {ledger.path}")
        return await job_patch(ledger, job_id)


def _apply(args: argparse.Namespace) -> int:
    patch = anyio.run(_job_patch, args.ledger or default_ledger(), args.job)
    if not patch:
        print(f"crew: job {args.job!r} changed no files; nothing to apply", file=sys.stderr)
        return 0
    try:
        files = apply_patch(patch, args.to)
    except ApplyError as exc:
        print(f"crew: {exc}", file=sys.stderr)
        return 1
    print(f"applied job {args.job}'s changes to {args.to.resolve()}: {', '.join(files)}")
    return 0


def _answers(pairs: list[str]) -> dict[str, str]:
    answers = {}
    for pair in pairs:
        step, sep, text = pair.partition("=")
        if not sep or not step:
            raise JobError(f"--answer {pair!r}: write STEP=TEXT")
        answers[step] = text
    return answers


async def _run(args: argparse.Namespace, plan: Plan, ledger: Ledger) -> int:
    job_id = args.job or new_job_id(plan)
    job_input = args.input_file.read_text() if args.input_file else args.input
    interactive = sys.stdin.isatty() and not args.non_interactive
    view: TerminalView | LineView = TerminalView([]) if sys.stderr.isatty() else LineView()
    asker: Asker = (
        TerminalAsker(view if isinstance(view, TerminalView) else None)
        if interactive
        else NobodyAsker()
    )
    asker = PresetAnswers(_answers(args.answer), asker)
    view.message(f"job {job_id} (plan {plan.name}); ledger {ledger.path}")
    result: list[JobResult | JobError] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(view.tick)
        try:
            result.append(
                await run_job(plan, ledger, job_id, job_input, asker=asker, observer=view)
            )
        except JobError as exc:  # raised out of the task group it would come wrapped
            result.append(exc)
        tg.cancel_scope.cancel()
    if isinstance(result[0], JobError):
        raise result[0]
    outcome = result[0]
    if args.report:
        args.report.write_text(outcome.report)
    print(outcome.report, end="")
    view.message(f"job {job_id}: {outcome.outcome.state}")
    if outcome.outcome.state is not JobState.DONE:
        view.message(f"resume with: python -m examples.crew run {args.plan} --job {job_id}")
    return EXIT[outcome.outcome.state]


async def _check(plan: Plan, path: Path) -> int:
    """One line per agent and alternate: usable or not (and why), what it speaks and how it
    would be used, and its record in the ledger (success rate, latency). Exit 2 when a role
    has no usable agent (after every agent's line)."""
    problems: dict[str, str] = {}
    links = await connect(plan, set(plan.agents), problems=problems, all_of_them=True)
    ledger = Ledger(path) if await anyio.Path(path).exists() else None
    if ledger is not None:
        await ledger.open()
    dead = []
    try:
        for role in sorted(plan.agents):
            if not any(name in links for name, _ in plan.candidates(role)):
                dead.append(role)
            for name, spec in plan.candidates(role):
                link = links.get(name)
                if link is None:
                    why = problems.get(name, "?").removeprefix(
                        f"agent {name!r} ({spec.card_url}): "
                    )
                    line = f"{name}: unusable at {spec.card_url}: {why}"
                else:
                    line = (
                        f"{name}: ok at {spec.card_url}: {link.card.name!r} speaks "
                        f"{', '.join(link.versions)}; would use v{link.protocol} "
                        f"{link.binding} ({link.mode})"
                    )
                if ledger is not None:
                    line += f"; record: {(await ledger.agent_record(spec.card_url)).describe()}"
                print(line)
    finally:
        await close(links)
        if ledger is not None:
            await ledger.close()
    if dead:
        print(f"plan {plan.name!r}: no usable agent for {', '.join(dead)}", file=sys.stderr)
        return 2
    print(f"plan {plan.name!r}: ok; layers: " + " -> ".join("+".join(la) for la in plan.layers))
    return 0


async def _up(args: argparse.Namespace, plan: Plan) -> int:
    state = args.state or default_state(plan)
    names = wanted(plan, args.plan)
    if not names:
        print(f"crew: no agent of {args.plan} names a daemon config (`daemon`)", file=sys.stderr)
        return 2
    try:
        daemons = await up(plan, args.plan, state, ready_within=args.timeout)
    except FleetError as exc:
        print(f"crew: {exc}", file=sys.stderr)
        return 2
    for daemon in daemons:
        print(
            f"{daemon.agent}: {daemon.url} ready (pid {daemon.pid}, config {daemon.config}, "
            f"log {daemon.log})"
        )
    print(f"state: {state}; stop them with: python -m examples.crew down {args.plan}", end="")
    print(f" --state {state}" if args.state else "")
    return 0


async def _down(args: argparse.Namespace, plan: Plan) -> int:
    try:
        said = await down(args.state or default_state(plan))
    except FleetError as exc:
        print(f"crew: {exc}", file=sys.stderr)
        return 2
    for line in said:
        print(line)
    if not said:
        print(f"crew: no daemons recorded for plan {plan.name!r}")
    return 0


def _serve(args: argparse.Namespace, plan: Plan) -> int:
    """The crew behind our own daemon (examples/crew/agent.py); stops on SIGINT/SIGTERM."""
    ledger = args.ledger or default_ledger()
    state = args.state or ledger.parent
    overrides = serve_overrides(
        args.plan, plan, ledger=ledger, state=state, host=args.host, port=args.port
    )
    try:
        settings = load(None, overrides=overrides)
    except ConfigError as exc:
        raise JobError(f"cannot serve: {exc}") from exc
    logs.configure("info")
    asyncio.run(serve(settings, lambda url: print(f"crew listening on {url}", flush=True)))
    return 0


async def _report(args: argparse.Namespace, plan: Plan, ledger: Ledger) -> int:
    job = await ledger.job(args.job)
    if job is None:
        raise JobError(f"no job {args.job!r} in {ledger.path}")
    print(await build_report(plan, job, ledger, {}), end="")
    return 0


def _check_plan(args: argparse.Namespace, plan: Plan) -> int:
    return anyio.run(_check, plan, args.ledger or default_ledger())


async def _with_ledger(args: argparse.Namespace, plan: Plan) -> int:
    async with Ledger.opened(args.ledger or default_ledger()) as ledger:
        if args.command == "report":
            return await _report(args, plan, ledger)
        return await _run(args, plan, ledger)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "apply":
            return _apply(args)
        plan = load_plan(args.plan)
        by_plan = {"check": _check_plan, "serve": _serve}
        if args.command in by_plan:
            return by_plan[args.command](args, plan)
        if args.command in ("up", "down"):
            return anyio.run(_up if args.command == "up" else _down, args, plan)
        return anyio.run(_with_ledger, args, plan)
    except (PlanError, JobError, LedgerError) as exc:
        print(f"crew: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "\ncrew: interrupted; remote tasks go on. Resume with the same --job.",
            file=sys.stderr,
        )
        return 130
