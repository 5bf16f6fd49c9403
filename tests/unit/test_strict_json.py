"""The strict JSON decoder/encoder both bindings use (the wire behaviour is in
tests/protocol/test_parser_edges.py)."""

from __future__ import annotations

import json
import math

import pytest

from core.wire import strict_json
from core.wire.errors import ParseError


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"1", 0),
        (b"[]", 1),
        (b'{"a": [[1], {"b": []}]}', 4),
        (b'["[[[[", "]]]"]', 1),
        (b'["\\"[[[", "\\\\", [[]]]', 3),
        (b'"unterminated [[[', 0),
        (b"[" * 100_000, 100_000),
    ],
)
def test_nesting_depth_ignores_brackets_in_strings(raw: bytes, depth: int) -> None:
    assert strict_json.nesting_depth(raw) == depth


def test_depth_limit_is_inclusive() -> None:
    limit = strict_json.MAX_DEPTH
    assert strict_json.loads(b"[" * limit + b"]" * limit) is not None
    with pytest.raises(ParseError, match="deeper than"):
        strict_json.loads(b"[" * (limit + 1) + b"]" * (limit + 1))


def test_dumps_writes_non_finite_numbers_as_null() -> None:
    text = strict_json.dumps({"a": [math.nan, math.inf, -math.inf, 1.5], "b": "é"})
    assert json.loads(text, parse_constant=pytest.fail) == {
        "a": [None, None, None, 1.5],
        "b": "é",
    }


def test_dumps_is_json_dumps_otherwise() -> None:
    value = {"a": [1, "x"], "b": None}
    assert strict_json.dumps(value) == json.dumps(value)
    assert strict_json.dumps(value, compact=True) == json.dumps(value, separators=(",", ":"))
