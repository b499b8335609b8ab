"""The partition machinery itself: a blocked direction drops packets one way only, healing
restores it, and closing the network leaves no namespace behind (the partition nemeses and
their teardown rely on all three). UDP, so one direction can be seen without the other."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults import netns

_SEND_AND_RECEIVE = """
import socket, sys
me, peer = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((me, 7100))
s.settimeout(0.1)
got = False
for _ in range(10):
    s.sendto(b"x", (peer, 7100))
    try:
        got = got or s.recvfrom(16)[0] == b"x"
    except TimeoutError:
        pass
print("heard" if got else "silence")
"""


@pytest.fixture()
def network() -> Iterator[netns.Network]:
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(reason)
    net = netns.Network()
    try:
        yield net
    finally:
        net.close()


def _hears(net: netns.Network, a: str, b: str) -> tuple[bool, bool]:
    """(a heard b, b heard a), both sending to each other at once."""
    procs = [subprocess.Popen([*net.exec_prefix(x), sys.executable, "-c", _SEND_AND_RECEIVE,
                               net.address[x], net.address[y]], stdout=subprocess.PIPE, text=True)
             for x, y in ((a, b), (b, a))]
    heard = [p.communicate(timeout=30)[0].strip() == "heard" for p in procs]
    return heard[0], heard[1]


def test_a_blocked_direction_drops_one_way_heals_and_leaves_nothing_behind(
        network: netns.Network) -> None:
    a, b = network.add("a"), network.add("b")
    assert _hears(network, a, b) == (True, True)
    network.block(a, b)  # a cannot reach b; b still reaches a
    assert _hears(network, a, b) == (True, False)
    network.heal()
    assert _hears(network, a, b) == (True, True)
    made = [network.bridge_ns, a, b]
    network.close()
    assert not [ns for ns in made if (Path("/var/run/netns") / ns).exists()]
