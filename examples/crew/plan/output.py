"""A finished task's artifacts -> the step's output, checked against the step's schema.

The orchestrator never acts on what an agent wrote: text is kept as text, JSON is read only to
validate it and to pick the fields a plan names (a verdict, a template field).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from examples.crew.plan.changes import CHANGES_ARTIFACT
from examples.crew.plan.template import Output

_FENCED = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)\n\s*```", re.S)


@dataclass(frozen=True)
class PartView:
    """One part of an artifact, whatever the protocol version: text, data, or a file."""

    text: str | None = None
    data: Any = None
    url: str | None = None
    filename: str | None = None
    media_type: str | None = None
    size: int | None = None
    content: str | None = None  # the text of a patch file part (see client._part)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass(frozen=True)
class ArtifactView:
    artifact_id: str
    name: str
    parts: tuple[PartView, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Any]:
        return {
            "artifactId": self.artifact_id,
            "name": self.name,
            "parts": [p.to_json() for p in self.parts],
        }


def parse_json_text(text: str) -> Any:
    """The JSON in an agent's text answer: the whole text, or its one fenced block (agents
    often wrap JSON in ```json fences, sometimes with a sentence around it). None if neither."""
    for candidate in (text.strip(), *(m.group(1) for m in _FENCED.finditer(text))):
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def to_output(artifacts: list[ArtifactView]) -> Output:
    """Text: every text part, in order. Data: the last data part, else the text as JSON. The
    `changes` artifact (what the agent edited) is not the answer: it is read apart, by
    examples.crew.plan.changes."""
    artifacts = [a for a in artifacts if a.name != CHANGES_ARTIFACT]
    texts = [p.text for a in artifacts for p in a.parts if p.text is not None]
    datas = [p.data for a in artifacts for p in a.parts if p.data is not None]
    text = "\n".join(texts)
    data = datas[-1] if datas else parse_json_text(text)
    return Output(text=text, data=data)


def schema_problem(output: Output, schema: dict[str, Any] | None) -> str | None:
    """Why the output does not satisfy the schema (None when it does, or there is none)."""
    if schema is None:
        return None
    if output.data is None:
        return "the artifact is not JSON, and the step's schema requires JSON"
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(output.data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(root)"
    return f"the artifact does not match the step's schema at {where}: {error.message}"
