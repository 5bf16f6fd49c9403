"""The one JSON decoder and encoder of both bindings: strict RFC 8259 JSON, nothing more.

Python's `json` is lenient where a hostile body can hurt: it accepts `NaN`/`Infinity` (and
turns `1e309` into infinity), which strict clients cannot parse when echoed; it decodes lone
UTF-16 surrogates (`"\\ud800"`) into strings that later fail to encode; and it recurses once per
nesting level, so a body nested 100,000 deep raises RecursionError. `loads` refuses all of
these with `ParseError` before they reach a model; `dumps` never writes a non-finite number.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from itertools import accumulate
from typing import Any

from pydantic_core import to_json

from core.wire.errors import ParseError

# Far deeper than any A2A body (a data part nested 90 levels still fits) and far below the
# recursion limit of the parser, the models and the encoder.
MAX_DEPTH = 100

# A string literal, possessive so the scan stays linear; an unterminated one runs to the end
# (the body is invalid anyway, json.loads says where).
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_NOT_BRACKET = bytes(sorted(set(range(256)) - set(b"[]{}")))
# Opening brackets become +1 and closing ones -1 once read as signed bytes.
_STEP = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def nesting_depth(raw: bytes) -> int:
    """The deepest bracket nesting outside string literals, without recursion."""
    steps = _STRING.sub(b"", raw).translate(_STEP, _NOT_BRACKET)
    return max(accumulate(array("b", steps)), default=0)


def _no_constant(name: str) -> Any:
    raise ParseError(f"Invalid JSON payload: {name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ParseError(f"Invalid JSON payload: the number {text[:40]} is out of range")
    return value


# Made once: `json.loads`/`json.dumps` with any option build a new decoder or encoder per call.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
_ENCODER = json.JSONEncoder(allow_nan=False)
_COMPACT_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def loads(raw: bytes) -> Any:
    """Decode a request body (UTF-8 JSON); raise `ParseError` saying what is wrong."""
    try:
        text = raw.decode("utf-8-sig")  # a leading BOM may be ignored (RFC 8259 §8.1)
    except UnicodeDecodeError as exc:
        raise ParseError(f"Invalid JSON payload: not UTF-8 (byte {exc.start} is invalid)") from exc
    # A body is at most as deep as it has opening brackets; counting them is far cheaper than
    # the scan, and most bodies have far fewer than MAX_DEPTH.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting_depth(raw) > MAX_DEPTH:
        raise ParseError(f"Invalid JSON payload: nested deeper than {MAX_DEPTH} levels")
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, ParseError):
            raise
        raise ParseError(f"Invalid JSON payload: {exc}") from exc
    if _SURROGATE_ESCAPE.search(text):
        # A paired escape decodes to one character; only a lone half fails to encode.
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ParseError(
                "Invalid JSON payload: a string holds a lone UTF-16 surrogate, which is not "
                "a Unicode character"
            ) from exc
    return value


def dumps(value: Any, *, compact: bool = False) -> str:
    """Strict JSON text for a response. A non-finite float (no request can bring one in, but a
    backend's number could be one) is written as null, as the stores write it."""
    try:
        return (_COMPACT_ENCODER if compact else _ENCODER).encode(value)
    except ValueError:
        return to_json(value, inf_nan_mode="null").decode()
