"""A job from start (or resume) to report: open it in the ledger, read the agents' cards, run
the crew, close the clients."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio

from examples.crew.agents.client import AgentError, AgentLink, trace_id_of
from examples.crew.agents.push import PushReceiver
from examples.crew.ledger.ledger import JobRow, Ledger
from examples.crew.ledger.states import JobState, StepState
from examples.crew.plan.changes import save_job_patch
from examples.crew.plan.plan import Plan
from examples.crew.run.runner import Crew, JobOutcome
from examples.crew.show.events import Asker, Observer
from examples.crew.show.report import AgentInfo, build_report


class JobError(Exception):
    """The job cannot run as asked (another plan, another input, an agent unreachable)."""


@dataclass(frozen=True)
class JobResult:
    outcome: JobOutcome
    report: str


def new_job_id(plan: Plan) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{plan.name}-{stamp}-{uuid.uuid4().hex[:4]}"


async def open_job(ledger: Ledger, plan: Plan, job_id: str, job_input: str | None) -> JobRow:
    """Create the job, or check that a re-run asks for the same job (the run never re-plans).
    A new job gets a contextId of its own: contexts are never shared between jobs."""
    job = await ledger.job(job_id)
    if job is None:
        if job_input is None:
            raise JobError(f"job {job_id!r} is new: give it an --input")
        context_id = f"crew-{job_id}-{uuid.uuid4().hex[:12]}"
        return await ledger.create_job(job_id, plan.name, plan.digest(), job_input, context_id)
    if job.plan_digest != plan.digest():
        raise JobError(
            f"job {job_id!r} was started with another plan (digest {job.plan_digest}, this one "
            f"is {plan.digest()}); a job never changes its plan: start a new job"
        )
    if job_input is not None and job_input != job.input:
        raise JobError(f"job {job_id!r} was started with another input; leave --input out")
    return job


async def connect(
    plan: Plan,
    names: set[str],
    environ: Mapping[str, str] | None = None,
    *,
    trace_id: str | None = None,
    problems: dict[str, str] | None = None,
    all_of_them: bool = False,
) -> dict[str, AgentLink]:
    """Read the cards of every named role's agents (its own and its alternates, `role#n`) at
    once; fail (closing the others) if a role has no usable agent, unless `all_of_them` (for
    `check`, which shows every agent). What was unusable goes into `problems` (by agent
    name): each names the agent, its URL and why."""
    links: dict[str, AgentLink] = {}
    errors: dict[str, str] = {}

    async def one(name: str) -> None:
        try:
            links[name] = await AgentLink.connect(
                name, plan.agent_spec(name), environ, trace_id=trace_id
            )
        except AgentError as exc:
            errors[name] = str(exc)

    async with anyio.create_task_group() as tg:
        for role in sorted(names):
            for name, _ in plan.candidates(role):
                tg.start_soon(one, name)
    dead = [
        role
        for role in sorted(names)
        if not any(name in links for name, _ in plan.candidates(role))
    ]
    if dead and not all_of_them:
        await close(links)
        raise JobError(
            "; ".join(errors[n] for role in dead for n, _ in plan.candidates(role) if n in errors)
        )
    if problems is not None:
        problems.update(errors)
    return links


async def close(links: Mapping[str, AgentLink]) -> None:
    with anyio.CancelScope(shield=True):
        for link in links.values():
            await link.aclose()


def agent_info(link: AgentLink) -> AgentInfo:
    return AgentInfo(
        card_url=link.spec.card_url,
        name=link.card.name,
        versions=tuple(link.versions),
        protocol=link.protocol,
        binding=link.binding,
        mode=link.mode,
    )


async def run_job(
    plan: Plan,
    ledger: Ledger,
    job_id: str,
    job_input: str | None,
    *,
    asker: Asker,
    observer: Observer,
    environ: Mapping[str, str] | None = None,
    apply_advice: str | None = None,
) -> JobResult:
    """Run (or resume) a job to its report. JobError, naming every unusable agent with its
    URL and why, when a step's role has no usable agent (nothing is sent then)."""
    job = await open_job(ledger, plan, job_id, job_input)
    await ledger.set_job_state(job_id, JobState.RUNNING)
    done = {s for s, row in (await ledger.steps(job_id)).items() if row.state is StepState.DONE}
    needed = {s.agent for s in plan.steps if s.id not in done}
    problems: dict[str, str] = {}
    links = await connect(plan, needed, environ, trace_id=trace_id_of(job_id), problems=problems)
    for name, problem in sorted(problems.items()):
        observer.message(f"agent {name} is unusable, its alternates take over: {problem}")
    for link in links.values():
        observer.message(
            f"agent {link.name}: {link.card.name!r} speaks {', '.join(link.versions)}; using "
            f"v{link.protocol} {link.binding} ({link.mode})"
        )
    async with AsyncExitStack() as stack:
        if any(link.pushable for link in links.values()):
            try:
                receiver = await stack.enter_async_context(PushReceiver(job_id).running())
            except BaseException:
                await close(links)
                raise
            for link in links.values():
                link.push = receiver if link.pushable else None
        return await _run_crew(
            plan, ledger, job, links, asker=asker, observer=observer, advice=apply_advice
        )


def waiting_section(job_id: str, links: Mapping[str, AgentLink]) -> str:
    """The job's trace id; how the job waited on each agent, and what push saved."""
    lines = [
        "",
        "## Trace",
        "",
        f"Trace id `{trace_id_of(job_id)}`: every A2A call of this job carries it (a W3C "
        "`traceparent` header); a daemon with tracing on continues it.",
        "",
        "## Waiting on agents",
        "",
        "| agent | mode | GetTask calls | by push: tasks, time waited | polling would make |",
        "| --- | --- | --- | --- | --- |",
    ]
    saved = 0
    for name, link in sorted(links.items()):
        would = ""
        if link.push_tasks:
            interval = link.spec.poll_interval / 1000
            polls = len(link.push_tasks) + int(link.push_seconds / interval) if interval else 0
            saved += max(polls - link.gets, 0)
            would = f"~{polls} GetTask ({interval:g} s apart)"
        waited = f"{len(link.push_tasks)}, {link.push_seconds:.1f} s" if link.push_tasks else ""
        lines.append(f"| {name} | {link.mode} | {link.gets} | {waited} | {would} |")
    receivers = {id(k.push): k.push for k in links.values() if k.push is not None}
    for receiver in receivers.values():
        lines.append("")
        lines.append(
            f"Push saved ~{saved} requests: {receiver.counts.received} notifications received, "
            f"{receiver.counts.refused} refused (wrong token or job)."
        )
    return "\n".join(lines) + "\n"


async def _run_crew(
    plan: Plan,
    ledger: Ledger,
    job: JobRow,
    links: dict[str, AgentLink],
    *,
    asker: Asker,
    observer: Observer,
    advice: str | None,
) -> JobResult:
    job_id = job.job_id
    try:
        crew = Crew(
            plan,
            ledger,
            links,
            job_id=job_id,
            job_input=job.input,
            context_id=job.context_id,
            asker=asker,
            observer=observer,
        )
        outcome = await crew.run()
    finally:
        await close(links)
    await save_job_patch(ledger, job_id)
    final = await ledger.job(job_id) or job
    infos = {n: agent_info(k) for n, k in links.items()}
    report = await build_report(plan, final, ledger, infos, apply_advice=advice)
    return JobResult(outcome, report + waiting_section(job_id, links))
