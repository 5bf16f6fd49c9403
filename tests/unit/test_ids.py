"""The daemon's own ids are RFC 4122 version-4 UUIDs, as `uuid.uuid4()` would give."""

from __future__ import annotations

import uuid

from core.wire.ids import new_id


def test_new_ids_are_distinct_version_4_uuids_in_canonical_form() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
