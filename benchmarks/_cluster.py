"""Cluster helpers shared by the benchmarks: what each broker says about a topic's replicas."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable

from broker_sim.network.blocking_client import read_frame
from broker_sim.protocol import api


def partition_states(port: int, topic: str) -> dict[int, tuple[int, list[int]]]:
    """{partition: (leader, sorted isr)} as one broker's Metadata (v8) answers it; {} if the
    broker does not know the topic (yet)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(api.encode_request(3, 8, 1, "bench", {
            "topics": [{"name": topic}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False}))
        _, r = api.decode_response(3, 8, read_frame(s))
    t = r.topics[0]
    if t.error_code:
        return {}
    return {p.partition_index: (p.leader_id, sorted(p.isr_nodes)) for p in t.partitions}


def wait_in_sync(ports: Iterable[int], topic: str, partitions: int, replicas: int = 3,
                 timeout: float = 60.0) -> dict[int, tuple[int, list[int]]]:
    """Until every broker (one per port) reports all ``partitions`` of ``topic`` with a leader
    and ``replicas`` in-sync replicas, all brokers agreeing; returns that common view.

    Benchmarks start timing only then, so acks=all runs with the full ISR from the first
    record and no phase pays for a follower still catching up with a new topic.
    """
    ports = list(ports)
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            views = [partition_states(port, topic) for port in ports]
            states = views[0]
            if (len(states) == partitions
                    and all(leader >= 0 and len(isr) == replicas for leader, isr in states.values())
                    and all(v == states for v in views)):
                return states
            last = views
        except OSError as e:
            last = e
        time.sleep(0.1)
    raise TimeoutError(f"{topic}: replicas not in sync on every broker after {timeout:.0f} s "
                       f"(last: {last!r})")
