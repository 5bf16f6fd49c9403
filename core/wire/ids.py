"""Identifiers the daemon mints (task, context, message and artifact ids): random UUIDs.

`uuid.uuid4()` builds a UUID object only to print it; on the hot path (several ids a turn)
this formats the same RFC 4122 version-4 string from 16 random bytes directly, at about a
third of the cost. The bytes come from the OS's CSPRNG, as uuid4's do.
"""

from __future__ import annotations

import os

_VARIANT = "89ab"


def new_id() -> str:
    """A random (version 4, RFC 4122 variant) UUID as a lower-case string."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"
