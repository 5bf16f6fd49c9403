"""A2A-Version parsing and comparison (§3.6): Major.Minor, missing or empty means 0.3."""

from __future__ import annotations

from core.wire.errors import VersionNotSupportedError

Version = tuple[int, int]

V1_0: Version = (1, 0)
V0_3: Version = (0, 3)
SUPPORTED = (V1_0, V0_3)


def parse_version(header: str | None) -> Version:
    text = (header or "").strip()
    if not text:
        return V0_3
    pieces = text.split(".")
    try:
        major = int(pieces[0])
        minor = int(pieces[1]) if len(pieces) > 1 else 0
    except ValueError as exc:
        raise VersionNotSupportedError(f"A2A version {text!r} is not a valid version") from exc
    return (major, minor)


def require(version: Version, expected: Version) -> None:
    """Major.Minor must match; any 0.x is served as 0.3, the only pre-1.0 dialect we speak."""
    if version != expected and not (expected[0] == 0 and version[0] == 0):
        shown = f"{version[0]}.{version[1]}"
        want = f"{expected[0]}.{expected[1]}"
        # The usual cause: a v1.0 method called without the header, which means 0.3.
        absent = " (a request without an A2A-Version header is 0.3)" if version == V0_3 else ""
        raise VersionNotSupportedError(
            f"A2A version '{shown}'{absent} is not supported by this method. Expected version "
            f"'{want}': send the header 'A2A-Version: {want}'.",
            metadata={"supportedVersions": "0.3,1.0"},
        )
