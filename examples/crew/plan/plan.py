"""The plan: which agents, and the steps as a graph. Data, validated once; the run never re-plans.

    {
      "name": "write-review-revise",
      "deadline": "30m",                      the whole run (ms, or "500ms" / "90s" / "10m" / "2h")
      "contextScope": "job",                  "job": one contextId per job; "step": one per step
      "agents": {"writer": {"card": "${WRITER_URL:-http://127.0.0.1:8001}",
                            "tokenEnv": "WRITER_TOKEN"}},
      "steps": [{"id": "write", "agent": "writer", "prompt": "Write {{input}}",
                 "dependsOn": [], "deadline": "10m", "retries": 1, "onFailure": "abort",
                 "schema": {...JSON Schema of the artifact...},
                 "repeatUntil": {"step": "review", "field": "verdict", "equals": "approve"},
                 "maxRounds": 3, "revises": "write", "applyChanges": ["write"]}]
    }

`${VAR}` / `${VAR:-default}` are substituted in the `agents` block only (prompts are left as
written). See README.md for the meaning of every key.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from examples.crew.daemon import ConfigError, substitute
from examples.crew.plan.template import StepRef, TemplateError, references


class PlanError(ValueError):
    """The plan is unusable; the message says where."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*$")
_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def _milliseconds(value: Any) -> Any:
    """A duration: an integer of milliseconds, or a string such as "500ms", "90s", "10m", "2h"."""
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(f"not a duration: {value!r} (use ms, or e.g. '90s', '10m', '2h')")
        return round(float(match.group(1)) * _UNITS[match.group(2)])
    return value


Millis = Annotated[int, BeforeValidator(_milliseconds), Field(ge=0)]
StepId = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")]


class Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class AgentSpec(Model):
    card: str = Field(description="The agent card URL, or the agent's base URL")
    token_env: str | None = Field(
        default=None, description="Environment variable holding the bearer token"
    )
    protocol: Literal["auto", "1.0", "0.3"] = Field(
        default="auto", description="auto: v1.0 when the card offers it, else v0.3"
    )
    binding: Literal["auto", "JSONRPC", "HTTP+JSON"] = "auto"
    follow: Literal["auto", "stream", "poll", "push"] = Field(
        default="auto",
        description="auto: push when the card offers it and the agent is on this machine, "
        "else stream when the card says it can, else poll",
    )
    poll_interval: Millis = 1000
    daemon: str | None = Field(
        default=None,
        description="An a2a-wrapper daemon config file (relative to the plan's folder) that "
        "`python -m examples.crew up PLAN` starts this agent with, on the card URL's port",
    )
    alternates: list[AgentSpec] = Field(
        default_factory=list,
        description="Agents that take the step over, in order, when this one is unreachable, "
        "rejects the work or fails its retries",
    )

    @model_validator(mode="after")
    def _flat(self) -> AgentSpec:
        if any(a.alternates for a in self.alternates):
            raise ValueError("an alternate has no alternates of its own")
        return self

    @property
    def card_url(self) -> str:
        url = self.card.rstrip("/")
        return url if url.endswith(".json") else url + "/.well-known/agent-card.json"


class RepeatUntil(Model):
    step: StepId = Field(description="The step whose verdict ends the loop (re-run every round)")
    field: str = Field(description="Dotted path of the verdict in that step's JSON output")
    equals: JsonValue | None = None
    in_: list[JsonValue] | None = Field(default=None, alias="in")

    @model_validator(mode="after")
    def _one_test(self) -> RepeatUntil:
        if (self.equals is None) == (self.in_ is None):
            raise ValueError("give exactly one of 'equals' and 'in'")
        return self

    def verdict(self, data: Any) -> Any:
        """The verdict field of a verdict step's JSON output (None when it has none)."""
        value = data
        for key in self.field.split("."):
            if not isinstance(value, Mapping) or key not in value:
                return None
            value = value[key]
        return value

    def met(self, data: Any) -> bool:
        value = self.verdict(data)
        return value == self.equals if self.in_ is None else value in self.in_


class StepSpec(Model):
    id: StepId
    agent: str
    prompt: str
    depends_on: list[StepId] = Field(default_factory=list)
    deadline: Millis | None = Field(
        default=None, description="Wall clock for each remote task of this step"
    )
    retries: int = Field(default=0, ge=0, le=10)
    retry_delay: Millis = 1000
    on_failure: Literal["abort", "continue"] = "abort"
    schema_: dict[str, JsonValue] | None = Field(default=None, alias="schema")
    repeat_until: RepeatUntil | None = None
    max_rounds: int = Field(default=3, ge=1, le=20)
    revises: StepId | None = Field(
        default=None,
        description="This step's output supersedes that step's output in later prompts",
    )
    apply_changes: list[StepId] = Field(
        default_factory=list,
        description="Steps whose patches (and their revisions') go with this step's message",
    )
    answer_deadline: Millis | None = Field(
        default=None,
        description="How long an agent's question waits for an answer; then it expires: the "
        "remote task is canceled and onFailure applies",
    )


class Plan(Model):
    schema_ref: str | None = Field(default=None, alias="$schema")
    name: str = "crew"
    description: str = ""
    deadline: Millis | None = None
    context_scope: Literal["job", "step"] = "job"
    agents: dict[str, AgentSpec]
    steps: list[StepSpec] = Field(min_length=1)

    def candidates(self, role: str) -> list[tuple[str, AgentSpec]]:
        """The agents that may do a role's steps, in order: the role's own (named `role`),
        then its alternates (`role#1`, `role#2`, ...)."""
        spec = self.agents[role]
        return [(role, spec)] + [(f"{role}#{n}", a) for n, a in enumerate(spec.alternates, 1)]

    def agent_spec(self, name: str) -> AgentSpec:
        """The spec of a candidate name (`role` or `role#n`)."""
        role, _, n = name.partition("#")
        spec = self.agents[role]
        return spec.alternates[int(n) - 1] if n else spec

    @model_validator(mode="after")
    def _graph(self) -> Plan:
        ids = [s.id for s in self.steps]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate step ids: {sorted({i for i in ids if ids.count(i) > 1})}")
        for step in self.steps:
            _check_step(self, step)
        order = self.order  # raises on a cycle
        for step in self.steps:
            _check_references(self, step, order)
        return self

    def step(self, step_id: str) -> StepSpec:
        return self._by_id[step_id]

    @cached_property
    def _by_id(self) -> dict[str, StepSpec]:
        return {s.id: s for s in self.steps}

    @cached_property
    def waits_for(self) -> dict[str, frozenset[str]]:
        """Each step's prerequisites: its dependencies, plus every loop or reviser attached to
        a dependency (a step reads the final verdict and the final revision, not a draft),
        unless the step is upstream of that loop (it is then part of it)."""
        attached: dict[str, set[str]] = {}
        for step in self.steps:
            if step.repeat_until is not None:
                attached.setdefault(step.repeat_until.step, set()).add(step.id)
            if step.revises is not None:
                attached.setdefault(step.revises, set()).add(step.id)
        waits: dict[str, frozenset[str]] = {}
        for step in self.steps:
            extra = {
                a
                for d in step.depends_on
                for a in attached.get(d, ())
                if a != step.id and step.id not in self.ancestors(a)
            }
            waits[step.id] = frozenset(step.depends_on) | frozenset(extra)
        return waits

    @cached_property
    def order(self) -> list[str]:
        """Step ids in a dependency order (Kahn's algorithm, plan order among equals)."""
        done: list[str] = []
        left = [s.id for s in self.steps]
        while left:
            ready = [s for s in left if self.waits_for[s] <= set(done)]
            if not ready:
                raise ValueError(f"the steps {left} wait on each other (a cycle)")
            done.extend(ready)
            left = [s for s in left if s not in ready]
        return done

    @cached_property
    def layers(self) -> list[list[str]]:
        """Steps grouped by depth: every step of a layer can run at the same time."""
        depth: dict[str, int] = {}
        for step_id in self.order:
            depth[step_id] = 1 + max((depth[d] for d in self.waits_for[step_id]), default=-1)
        out: list[list[str]] = [[] for _ in range(max(depth.values()) + 1)]
        for step_id in self.order:
            out[depth[step_id]].append(step_id)
        return out

    def ancestors(self, step_id: str) -> set[str]:
        seen: set[str] = set()
        todo = list(self.step(step_id).depends_on)
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo.extend(self.step(current).depends_on)
        return seen

    def digest(self) -> str:
        """What a resumed job must match: the steps, the context scope and the agent names
        (not their URLs, which may change when a daemon restarts on another port)."""
        doc = {
            "contextScope": self.context_scope,
            "agents": sorted(self.agents),
            "steps": [s.model_dump(mode="json", by_alias=True) for s in self.steps],
        }
        canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _check_step(plan: Plan, step: StepSpec) -> None:
    where = f"step {step.id!r}"
    if step.agent not in plan.agents:
        raise ValueError(f"{where}: unknown agent {step.agent!r} (agents: {sorted(plan.agents)})")
    known = {s.id for s in plan.steps}
    for dep in step.depends_on:
        if dep not in known:
            raise ValueError(f"{where}: dependsOn names an unknown step {dep!r}")
        if dep == step.id:
            raise ValueError(f"{where}: depends on itself")
    if step.schema_ is not None:
        try:
            jsonschema.validators.validator_for(step.schema_).check_schema(step.schema_)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"{where}: schema is not a valid JSON Schema: {exc.message}") from exc
    loop = step.repeat_until
    if loop is not None:
        if loop.step not in step.depends_on:
            raise ValueError(f"{where}: repeatUntil.step {loop.step!r} must be in its dependsOn")
        if next(s for s in plan.steps if s.id == loop.step).schema_ is None:
            raise ValueError(
                f"{where}: the verdict step {loop.step!r} needs a schema (verdicts are read "
                "from validated JSON only)"
            )
    if step.revises is not None and step.revises not in known:
        raise ValueError(f"{where}: revises names an unknown step {step.revises!r}")


def _check_references(plan: Plan, step: StepSpec, order: list[str]) -> None:
    where = f"step {step.id!r}"
    try:
        refs = references(step.prompt)
    except TemplateError as exc:
        raise ValueError(f"{where}: prompt: {exc}") from exc
    ancestors = plan.ancestors(step.id)
    if step.revises is not None and step.revises not in ancestors:
        raise ValueError(f"{where}: revises {step.revises!r}, which is not among its dependencies")
    for source in step.apply_changes:
        if source not in ancestors:
            raise ValueError(
                f"{where}: applyChanges names {source!r}, which is not among its dependencies"
            )
    for ref in refs:
        if isinstance(ref, StepRef) and ref.step not in ancestors:
            raise ValueError(
                f"{where}: prompt reads steps.{ref.step}, which is not among its dependencies"
            )


def _describe(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"])
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{path}: {msg}" if path else msg)
    return "; ".join(lines)


def parse_plan(doc: Any, environ: Mapping[str, str] | None = None) -> Plan:
    """Validate a plan document (substituting `${VAR}` in its `agents` block)."""
    if not isinstance(doc, dict):
        raise PlanError("a plan is a JSON object")
    env = os.environ if environ is None else environ
    if isinstance(doc.get("agents"), dict):
        try:
            doc = {**doc, "agents": substitute(doc["agents"], env, "agents")}
        except ConfigError as exc:
            raise PlanError(str(exc)) from exc
    try:
        return Plan.model_validate(doc)
    except ValidationError as exc:
        raise PlanError(_describe(exc)) from exc


def load_plan(path: Path, environ: Mapping[str, str] | None = None) -> Plan:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"cannot read plan {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise PlanError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    try:
        return parse_plan(doc, environ)
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from exc
