"""A consumer group as the CLI shows it (``pyq groups``, ``pyq lag``): described by
whichever API knows it, its one-line summary, which member owns which partition.

A group's TYPE is ``consumer`` for consumer groups and ``simple`` for groups that only hold
offsets (the Spark source's ``groupId``, ``pyq`` itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connector.client import Admin, TopicPartition
    from connector.client.group_admin import GroupDescription


def group_type(protocol_type: str) -> str:
    return protocol_type or "simple"


def describe_any(admin: Admin, group_ids: list[str]) -> dict[str, GroupDescription]:
    """Each group as DescribeGroups sees it; a group on the consumer protocol (KIP-848),
    which DescribeGroups reports Dead as Kafka does, through ConsumerGroupDescribe instead
    (PROTOCOL is then its server-side assignor)."""
    from broker_sim.protocol.errors import GroupIdNotFound
    from connector.client import GroupDescription, MemberDescription

    described = admin.describe_groups(group_ids) if group_ids else {}
    for group_id, d in list(described.items()):
        if d.state != "Dead":
            continue
        try:
            c = admin.describe_consumer_groups([group_id])[group_id]
        except GroupIdNotFound:
            continue
        described[group_id] = GroupDescription(
            group_id, c.state, "consumer", c.assignor, c.coordinator,
            [MemberDescription(m.member_id, m.instance_id, m.client_id, m.client_host,
                               m.assignment) for m in c.members])
    return described


def summary_line(d: GroupDescription) -> str:
    protocol = f"  PROTOCOL {d.protocol}" if d.protocol else ""
    return (f"GROUP {d.group_id}  TYPE {group_type(d.protocol_type)}  STATE {d.state}  "
            f"MEMBERS {len(d.members)}{protocol}  COORDINATOR {d.coordinator}")


def summary(d: GroupDescription) -> dict[str, object]:
    """:func:`summary_line` as a JSON object."""
    return {"group": d.group_id, "type": group_type(d.protocol_type), "state": d.state,
            "members": len(d.members), "protocol": d.protocol or None,
            "coordinator": d.coordinator}


def owners(d: GroupDescription) -> dict[TopicPartition, tuple[str, str, str]]:
    """Partition -> (member id, host, client id) of the member it is assigned to."""
    return {tp: (m.member_id, m.client_host, m.client_id) for m in d.members for tp in m.assignment}
