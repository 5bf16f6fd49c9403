"""The final report, in Markdown, built from the ledger alone (so it can be rebuilt any time):
every step's result, the gaps, the questions waiting for an answer, every remote task, usage."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import anyio

from examples.crew.ledger.ledger import JobRow, Ledger, RunRow, StepRow
from examples.crew.ledger.states import RunState, StepState
from examples.crew.plan.changes import PATCH_FILE, combine, job_changes, job_dir, summary
from examples.crew.plan.plan import Plan, StepSpec

MAX_RESULT_CHARS = 6000


@dataclass(frozen=True)
class AgentInfo:
    """What the card said, for the report."""

    card_url: str
    name: str
    versions: tuple[str, ...]
    protocol: str
    binding: str
    mode: str  # how the crew waits on its tasks: push, stream or poll


def _seconds(start: str, end: str | None) -> float | None:
    if not end:
        return None
    parse = datetime.fromisoformat
    return (parse(end.replace("Z", "+00:00")) - parse(start.replace("Z", "+00:00"))).total_seconds()


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _fence(text: str, lang: str = "text") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n… ({len(text) - MAX_RESULT_CHARS} more characters)"
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _changes(
    ledger: Ledger, job: JobRow, runs: list[RunRow], saved_exists: bool, advice: str | None
) -> list[str]:
    """The job's combined patch: which turns made it, what it changes, where it is saved."""
    made = job_changes(runs)
    if not made:
        return []
    saved = job_dir(ledger, job.job_id) / PATCH_FILE
    out = ["", "## Changes", ""]
    out += [
        f"- {c.step_id} round {c.round} ({c.agent}): "
        + ", ".join(f"{f.path} {f.status}" for f in c.files)
        for c in made
    ]
    out += ["", summary(made), ""]
    if saved_exists and advice is None:  # other advice: the file does not outlive the run
        out.append(f"The combined patch is saved as `{saved}`.")
    out += [
        advice
        or f"Apply it to your checkout with `python -m examples.crew apply --job {job.job_id}`"
        f" (`--ledger {ledger.path}`, `--to DIR`); it refuses if any of it conflicts.",
        "",
        _fence(combine(made).rstrip("\n"), "diff"),
    ]
    return out


def _loops(plan: Plan, by_step: Mapping[str, list[RunRow]]) -> list[str]:
    """Each loop's verdicts, round by round (the last one is the final verdict)."""
    out: list[str] = []
    for spec in plan.steps:
        loop = spec.repeat_until
        if loop is None:
            continue
        done = [r for r in by_step.get(loop.step, []) if r.state is RunState.DONE]
        verdicts = [
            f"round {r.round}: {_cell(json.dumps(loop.verdict(r.output_data)))}"
            + (" (met)" if loop.met(r.output_data) else "")
            for r in sorted(done, key=lambda r: r.round)
        ]
        wanted = json.dumps(loop.equals) if loop.in_ is None else f"one of {json.dumps(loop.in_)}"
        out.append(
            f"- **{spec.id}** until {loop.step}.{loop.field} is {wanted}: "
            + ("; ".join(verdicts) or "no verdict yet")
        )
    return ["", "## Verdicts", "", *out] if out else []


def _usage(runs: list[RunRow]) -> tuple[int, int, float]:
    tokens_in = sum(int(r.usage.get("inputTokens", 0) or 0) for r in runs)
    tokens_out = sum(int(r.usage.get("outputTokens", 0) or 0) for r in runs)
    cost = sum(float(r.usage.get("costUsd", 0) or 0) for r in runs)
    return tokens_in, tokens_out, cost


def step_backend(runs: list[RunRow], agent: AgentInfo | None) -> str:
    """Who did the work: the backend a2a-wrapper daemons report, else the card's name."""
    backends = sorted({r.backend for r in runs if r.backend})
    if backends:
        return ", ".join(backends)
    return agent.name if agent is not None else ""


async def build_report(
    plan: Plan,
    job: JobRow,
    ledger: Ledger,
    agents: Mapping[str, AgentInfo],
    *,
    apply_advice: str | None = None,
) -> str:
    """The report of the job as the ledger has it (reads it; never blocks the event loop).
    `apply_advice` replaces the line on how to apply the job's patch (the demo's, whose
    ledger does not outlive it)."""
    steps = await ledger.steps(job.job_id)
    runs = await ledger.runs(job.job_id)
    saved = await anyio.Path(job_dir(ledger, job.job_id) / PATCH_FILE).is_file()
    return render_report(plan, job, steps, runs, agents, ledger, saved, apply_advice)


def render_report(  # noqa: PLR0917 - the report's inputs, read once by build_report
    plan: Plan,
    job: JobRow,
    steps: Mapping[str, StepRow],
    runs: list[RunRow],
    agents: Mapping[str, AgentInfo],
    ledger: Ledger,
    saved: bool,
    apply_advice: str | None = None,
) -> str:
    by_step: dict[str, list[RunRow]] = {s.id: [] for s in plan.steps}
    for run in runs:
        by_step.setdefault(run.step_id, []).append(run)
    out: list[str] = [f"# Crew job `{job.job_id}`: {job.state}", ""]
    first_line = job.input.strip().splitlines()[0] if job.input.strip() else ""
    out += [
        f"- plan: **{plan.name}** (digest `{job.plan_digest}`), {len(plan.steps)} steps in "
        f"{len(plan.layers)} layers",
        f"- input: {_cell(first_line[:200])}",
        f"- contextId: `{job.context_id}` (scope: {plan.context_scope})",
        f"- started {job.created_at}, last change {job.updated_at}",
        "",
        "## Steps",
        "",
        "| step | agent | backend | state | rounds | attempts | time | tokens in/out | cost |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for spec in plan.steps:
        row = steps.get(spec.id)
        step_runs = by_step.get(spec.id, [])
        state = row.state if row is not None else StepState.PENDING
        times = [_seconds(r.started_at, r.ended_at) for r in step_runs]
        spent = sum(t for t in times if t is not None) if step_runs else None
        tin, tout, cost = _usage(step_runs)
        out.append(
            f"| {spec.id} | {spec.agent} | {_cell(step_backend(step_runs, agents.get(spec.agent)))}"
            f" | {state} | {row.rounds if row else 0} | {len(step_runs)} | {_duration(spent)}"
            f" | {tin}/{tout} | {f'${cost:.4f}' if cost else ''} |"
        )
    gaps: list[tuple[StepSpec, StepRow | None]] = [
        (s, steps.get(s.id))
        for s in plan.steps
        if s.id not in steps or steps[s.id].state is not StepState.DONE
    ]
    waiting = [(s, r) for s, r in gaps if r is not None and r.state is StepState.NEEDS_INPUT]
    if gaps:
        out += ["", "## Gaps", ""]
        for spec, step_row in gaps:
            state = step_row.state if step_row else StepState.PENDING
            detail = step_row.detail if step_row and step_row.detail else ""
            out.append(f"- **{spec.id}** ({spec.agent}): {state}{': ' + detail if detail else ''}")
    if waiting:
        out += ["", "## Waiting for your answer", ""]
        for spec, step_row in waiting:
            out.append(f"- **{spec.id}**: {step_row.detail}")
        out += [
            "",
            f"Answer by running the job again: `--job {job.job_id}` on a terminal, or "
            f'`--job {job.job_id} --answer STEP="..."`.',
        ]
    out += _loops(plan, by_step)
    out += ["", "## Results"]
    for spec in plan.steps:
        done = [r for r in by_step.get(spec.id, []) if r.state is RunState.DONE]
        if not done:
            continue
        final = done[-1]
        agent = agents.get(spec.agent)
        how = f" · {final.via}" if final.via else ""
        out += [
            "",
            f"### {spec.id}: {spec.agent} ({step_backend([final], agent)}), round {final.round}",
            "",
            f"task `{final.task_id or '(direct reply)'}` · message `{final.message_id}`{how}",
        ]
        earlier = [r for r in done if r is not final]
        if earlier:
            out.append(
                "earlier rounds: "
                + ", ".join(f"round {r.round} task `{r.task_id}`" for r in earlier)
            )
        out += ["", _fence(final.output_text or "(no text)")]
    out += [
        "",
        "## Remote tasks",
        "",
        "| step | round | attempt | agent | task | state | detail |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in runs:
        out.append(
            f"| {run.step_id} | {run.round} | {run.attempt} | {run.agent} | "
            f"`{run.task_id or '-'}` | {run.state} | {_cell((run.detail or '')[:160])} |"
        )
    out += _changes(ledger, job, runs, saved, apply_advice)
    tin, tout, cost = _usage(runs)
    out += [
        "",
        "## Usage",
        "",
        f"{tin} input tokens, {tout} output tokens"
        + (f", ${cost:.4f}" if cost else "")
        + f" over {len(runs)} remote tasks.",
        "",
        "## Agents",
        "",
        "| agent | card | name | speaks | used |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, spec_agent in plan.agents.items():
        info = agents.get(name)
        if info is None:
            out.append(f"| {name} | {spec_agent.card_url} | | | not contacted in this run |")
            continue
        out.append(
            f"| {name} | {info.card_url} | {_cell(info.name)} | {', '.join(info.versions)} | "
            f"v{info.protocol} {info.binding}, {info.mode} |"
        )
    return "\n".join(out) + "\n"
