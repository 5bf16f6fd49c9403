"""Code between steps: the `changes` artifacts agents report, the patches a step sends on
(`applyChanges`), the job's combined patch and `apply` to the user's checkout.

An a2a-wrapper daemon with a workspace per context (`workspace.mode: worktree` or `copy`)
reports, after every turn that edited files, an artifact named `changes`: a data part (the
files, with status and +/- lines) and a file part `changes.patch` (`text/x-diff`, the turn's
own edits as a unified diff, without the patches it was sent). The crew keeps both with the
run in the ledger. A step's *chain* of changes is every turn patch of that step and of the
steps that revise it, in the order they ended: applied in that order on the base they started
from, they give the step's code. The job's combined patch is every turn patch of the job, in
the order the turns ended.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from examples.crew.ledger.ledger import Ledger, RunRow
from examples.crew.ledger.states import RunState
from examples.crew.plan.plan import Plan, StepSpec

CHANGES_ARTIFACT = "changes"
PATCH_MEDIA_TYPE = "text/x-diff"
PATCH_MEDIA_TYPES = frozenset({"text/x-diff", "text/x-patch", "application/x-git-patch"})
PATCH_FILE = "changes.patch"
GIT_TIMEOUT = 60.0


class ApplyError(Exception):
    """The patch was not applied (nothing was changed); the message says why."""


def is_patch_media(media_type: str | None) -> bool:
    return (media_type or "").split(";")[0].strip().lower() in PATCH_MEDIA_TYPES


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str  # added | modified | deleted
    additions: int | None  # None for a binary file
    deletions: int | None


@dataclass(frozen=True)
class ChangeSet:
    """One turn's edits, as one run of a step reported them."""

    step_id: str
    attempt: int
    round: int
    agent: str
    context_id: str
    ended_at: str
    files: tuple[FileChange, ...]
    patch: str

    @property
    def source(self) -> str:
        """What the ledger records when this patch is sent on: `<step>:<attempt>`."""
        return f"{self.step_id}:{self.attempt}"


def _files(data: Mapping[str, Any]) -> tuple[FileChange, ...]:
    found = []
    for item in data.get("files") or []:
        if isinstance(item, Mapping) and isinstance(item.get("path"), str):
            add, rem = item.get("additions"), item.get("deletions")
            found.append(
                FileChange(
                    path=item["path"],
                    status=str(item.get("status", "modified")),
                    additions=int(add) if isinstance(add, int | float) else None,
                    deletions=int(rem) if isinstance(rem, int | float) else None,
                )
            )
    return tuple(found)


def run_changes(run: RunRow) -> ChangeSet | None:
    """The `changes` artifact of a run (as stored in the ledger), or None."""
    for artifact in run.artifacts:
        if artifact.get("name") != CHANGES_ARTIFACT:
            continue
        parts = artifact.get("parts") or []
        data: Mapping[str, Any] = next(
            (p["data"] for p in parts if isinstance(p.get("data"), Mapping)), {}
        )
        patch = next(
            (p["content"] for p in parts if is_patch_media(p.get("media_type")) and "content" in p),
            None,
        )
        if patch is None or not patch.strip():
            continue
        return ChangeSet(
            step_id=run.step_id,
            attempt=run.attempt,
            round=run.round,
            agent=run.agent,
            context_id=run.context_id,
            ended_at=run.ended_at or "",
            files=_files(data),
            patch=patch if patch.endswith("\n") else patch + "\n",
        )
    return None


def job_changes(runs: Iterable[RunRow]) -> list[ChangeSet]:
    """Every turn patch of the runs, in the order the turns ended."""
    found = [c for c in (run_changes(r) for r in runs) if c is not None]
    return sorted(found, key=lambda c: (c.ended_at, c.step_id, c.attempt))


def chain(runs: Iterable[RunRow], steps: set[str]) -> list[ChangeSet]:
    """The turn patches of `steps` (a step and those that revise it), in the order they ended."""
    return job_changes(r for r in runs if r.step_id in steps)


def family(plan: Plan, step_id: str) -> set[str]:
    """A step and every step that revises it (directly or not): one chain of edits."""
    found = {step_id}
    grown = True
    while grown:
        more = {s.id for s in plan.steps if s.revises in found} - found
        found |= more
        grown = bool(more)
    return found


def summaries(plan: Plan, runs: list[RunRow], steps: Iterable[str]) -> dict[str, str]:
    """`{{steps.<id>.changes}}` of each step: the summary of its chain."""
    return {s: summary(chain(runs, family(plan, s))) for s in steps}


# A receiving run whose task failed with this did not get the patches (the daemon changed
# nothing); any other run with a task did (the daemon applies them before the turn).
_NOT_APPLIED = "does not apply"


def to_send(
    plan: Plan,
    spec: StepSpec,
    run: RunRow,
    runs: list[RunRow],
    sent: Mapping[tuple[str, int], set[str]],
) -> list[ChangeSet]:
    """The patches `run` (of `spec`) carries: the chains of its `applyChanges` steps, in that
    order, less what its agent's workspace has already: patches made in that same workspace
    (same agent and context) and patches an earlier message there delivered."""
    delivered: set[str] = set()
    for other in runs:
        if (other.agent, other.context_id) != (run.agent, run.context_id) or not other.task_id:
            continue
        if other.state is RunState.FAILED and _NOT_APPLIED in (other.detail or ""):
            continue
        delivered |= sent.get((other.step_id, other.attempt), set())
    out: list[ChangeSet] = []
    for source in spec.apply_changes:
        for change in chain(runs, family(plan, source)):
            same_place = (change.agent, change.context_id) == (run.agent, run.context_id)
            if not same_place and change.source not in delivered and change not in out:
                out.append(change)
    return out


def combine(changes: Iterable[ChangeSet]) -> str:
    """One patch of many: git applies a file's successive patches in order."""
    return "".join(c.patch for c in changes)


def summary(changes: list[ChangeSet]) -> str:
    """The files the patches touch, with their status and +/- lines over all of them."""
    if not changes:
        return "(no changes)"
    totals: dict[str, list[Any]] = {}
    for change in changes:
        for f in change.files:
            known = totals.get(f.path)
            if known is None:
                totals[f.path] = [f.status, f.additions, f.deletions]
                continue
            known[0] = _status(known[0], f.status)
            known[1] = None if known[1] is None or f.additions is None else known[1] + f.additions
            known[2] = None if known[2] is None or f.deletions is None else known[2] + f.deletions
    turns = len(changes)
    lines = [f"{len(totals)} file(s) changed in {turns} turn{'s' if turns > 1 else ''}:"]
    for path, (status, add, rem) in totals.items():
        counts = "binary" if add is None or rem is None else f"+{add} -{rem}"
        lines.append(f"- {path}: {status} ({counts})")
    return "\n".join(lines)


def _status(first: str, then: str) -> str:
    """A file's status over two patches: added then modified is still added, and so on."""
    if first == "added":
        return "added" if then != "deleted" else "deleted"
    if first == "deleted" and then == "added":
        return "modified"
    return then


# ----- the job's patch, saved beside the ledger ------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def job_dir(ledger: Ledger, job_id: str) -> Path:
    """Where a job's files are kept: `crew-jobs/<job>/` beside the ledger file."""
    return ledger.path.parent / "crew-jobs" / _UNSAFE.sub("_", job_id)


async def job_patch(ledger: Ledger, job_id: str) -> str:
    return combine(job_changes(await ledger.runs(job_id)))


async def save_job_patch(ledger: Ledger, job_id: str) -> Path | None:
    """Write the job's combined patch to its directory (None, and no file, if it has none).
    On a worker thread: a served crew's event loop never waits on the disk."""
    patch = await job_patch(ledger, job_id)
    target = job_dir(ledger, job_id) / PATCH_FILE

    def write() -> Path | None:
        if not patch:
            target.unlink(missing_ok=True)
            return None
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(patch, encoding="utf-8")
        return target

    return await anyio.to_thread.run_sync(write)


# ----- apply to a checkout ---------------------------------------------------------------------


def _git(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(  # noqa: S603 - a fixed argument list, no shell
            ["git", *args],  # noqa: S607 - git from PATH, as every git tool runs
            cwd=cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ApplyError(f"git could not run in {cwd}: {exc}") from exc


def apply_patch(patch: str, to: Path) -> list[str]:
    """Apply `patch` to the checkout at `to`, all or nothing: `git apply --check` first, and
    on any conflict ApplyError with git's reasons, nothing changed. Returns the files patched.
    Paths are relative to the repository's root, so `to` must be a checkout's root (or a
    directory outside any repository)."""
    if not to.is_dir():
        raise ApplyError(f"{to} is not a directory")
    top = _git(["rev-parse", "--show-toplevel"], to)
    if top.returncode == 0 and Path(top.stdout.strip()).resolve() != to.resolve():
        raise ApplyError(
            f"{to} is inside the checkout {top.stdout.strip()}: the patch's paths are "
            "relative to a checkout's root; give that with --to"
        )
    check = _git(["apply", "--check", "--whitespace=nowarn", "-"], to, patch)
    if check.returncode != 0:
        reasons = [line for line in check.stderr.splitlines() if line.strip()]
        raise ApplyError(
            "the patch does not apply; nothing was changed:\n" + "\n".join(reasons[:20])
        )
    stat = _git(["apply", "--numstat", "-"], to, patch)
    done = _git(["apply", "--whitespace=nowarn", "-"], to, patch)
    if done.returncode != 0:  # --check passed: only a race with another writer gets here
        raise ApplyError(f"git apply failed after its check: {done.stderr.strip()}")
    return list(dict.fromkeys(line.split("\t")[-1] for line in stat.stdout.splitlines() if line))
