"""OffsetFetch for one group, whichever version the connection negotiated.

Up to v7 the request names one group and its topics at the top level and the answer
carries that group's topics and error code at the top level; from v8 both are batches of
groups (``groups [group_id, topics]`` and ``groups [group_id, topics, error_code]``).
:func:`offset_fetch_body` builds a body that encodes correctly at every version (the codec
writes only the fields a version has), and :func:`group_answer` returns the part of an
answer that belongs to the one group asked about, with ``topics`` and ``error_code`` in
both shapes.
"""

from __future__ import annotations

from typing import Any


def offset_fetch_body(group_id: str, topics: list[dict[str, Any]] | None,
                      member_id: str | None = None, member_epoch: int = -1) -> dict[str, Any]:
    """``topics``: ``[{"name": ..., "partition_indexes": [...]}]``, or None for every
    committed offset of the group. ``member_id``/``member_epoch`` reach the wire at v9+
    only (a KIP-848 member's identity; a classic member or an admin leaves them out)."""
    return {"group_id": group_id, "topics": topics, "require_stable": False,
            "groups": [{"group_id": group_id, "member_id": member_id,
                        "member_epoch": member_epoch, "topics": topics}]}


def group_answer(response: Any) -> Any:
    """The answer for the one group asked about: an object with ``topics`` (each with
    ``name`` and ``partitions``) and ``error_code``."""
    groups = response.get("groups")
    return groups[0] if groups else response
