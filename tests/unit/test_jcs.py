"""RFC 8785 canonicalization against the RFC's own vectors (Appendix B numbers, §3.2.3 key
order): the bytes a card signature covers."""

from __future__ import annotations

import struct

import pytest

from core.wire.jcs import CanonicalizationError, canonicalize


@pytest.mark.parametrize(
    ("bits", "expected"),
    [
        (0x0000000000000000, "0"),
        (0x8000000000000000, "0"),
        (0x0000000000000001, "5e-324"),
        (0x8000000000000001, "-5e-324"),
        (0x7FEFFFFFFFFFFFFF, "1.7976931348623157e+308"),
        (0x4340000000000000, "9007199254740992"),
        (0x4430000000000000, "295147905179352830000"),
        (0x44B52D02C7E14AF5, "9.999999999999997e+22"),
        (0x44B52D02C7E14AF6, "1e+23"),
        (0x3EB0C6F7A0B5ED8D, "0.000001"),
        (0x3EB0C6F7A0B5ED8C, "9.999999999999997e-7"),
        (0x41B3DE4355555555, "333333333.3333333"),
    ],
)
def test_numbers(bits: int, expected: str) -> None:
    value = struct.unpack(">d", bits.to_bytes(8, "big"))[0]
    assert canonicalize(value) == expected


def test_keys_sort_by_utf16_code_units_and_strings_stay_unescaped() -> None:
    names = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
    doc = {name: 1 for name in names}
    order = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert canonicalize(doc) == "{" + ",".join(canonicalize(name) + ":1" for name in order) + "}"
    assert canonicalize({"a": [True, None, "é\n"]}) == '{"a":[true,null,"é\\n"]}'


def test_values_without_a_json_form_are_refused() -> None:
    with pytest.raises(CanonicalizationError):
        canonicalize(float("nan"))
    with pytest.raises(CanonicalizationError):
        canonicalize({1: "x"})
