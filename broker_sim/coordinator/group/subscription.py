"""The consumer protocol's subscription, as far as the coordinator reads it.

For groups of protocol type ``consumer`` a member's metadata is a ConsumerProtocol
subscription: ``version int16, topics [string], user_data nullable bytes`` and, from v1,
fields the coordinator does not need. OffsetDelete refuses to delete the offsets of
topics a member is still subscribed to, so it reads the topic list.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .group import GroupMetadata

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def topics_of(subscription: bytes) -> list[str]:
    """The topic names of one ConsumerProtocol subscription ([] if it does not parse)."""
    try:
        pos = 2  # version
        (count,) = _I32.unpack_from(subscription, pos)
        pos += 4
        topics = []
        for _ in range(max(count, 0)):
            (n,) = _I16.unpack_from(subscription, pos)
            pos += 2
            topics.append(subscription[pos:pos + n].decode())
            pos += n
        return topics
    except (struct.error, UnicodeDecodeError):
        return []


def subscribed_topics(group: GroupMetadata) -> set[str]:
    protocol = group.protocol_name
    if not protocol:
        return set()
    return {t for m in group.members.values() for t in topics_of(m.metadata(protocol))}
