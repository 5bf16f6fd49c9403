"""RFC 8785 JSON Canonicalization Scheme: the exact bytes an agent card signature covers.

`json.dumps` is not enough: JCS orders keys by UTF-16 code units and writes numbers as
ECMAScript's `Number.prototype.toString` does (`1e-7`, `1e+21`, `0.000001`).
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 128


class CanonicalizationError(ValueError):
    """The value has no canonical form (NaN, infinity, a non-JSON type, too deep)."""


def canonicalize(value: Any) -> str:
    return _encode(value, 0)


def _encode(value: Any, depth: int) -> str:
    if depth > MAX_DEPTH:
        raise CanonicalizationError(f"nesting deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, bool | str):
        # JCS strings are JSON's minimal escaping, non-ASCII left as it is.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return _number(float(value)) if abs(value) >= 2**53 else str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_encode(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise CanonicalizationError("object keys must be strings")
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        members = (
            f"{json.dumps(k, ensure_ascii=False)}:{_encode(value[k], depth + 1)}" for k in keys
        )
        return "{" + ",".join(members) + "}"
    raise CanonicalizationError(f"{type(value).__name__} is not a JSON value")


def _number(value: float) -> str:
    """ECMA-262 Number::toString over the shortest round-trip digits (RFC 8785 §3.2.2.3)."""
    if not math.isfinite(value):
        raise CanonicalizationError("NaN and infinity have no JSON form")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # n: the position of the decimal point relative to the digits (ECMA-262's n).
    n = (
        len(whole.lstrip("0")) + int(exp_text or 0)
        if whole != "0"
        else (int(exp_text or 0) - (len(fraction) - len(fraction.lstrip("0"))))
    )
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exponent = n - 1
    shown = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{shown}e{'+' if exponent > 0 else '-'}{abs(exponent)}"
