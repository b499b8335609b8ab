"""A private network of Linux network namespaces for the fault tests, and the partitions cut
into it.

:class:`Network` gives every process of a test (each broker, a controller, the clients) a
namespace of its own with one interface, ``eth0``, holding an address on ``10.77.0.0/24``.
Each ``eth0`` is one end of a veth pair whose other end is a port of a bridge that lives in
a namespace of its own, so the nodes reach each other through the bridge and nothing else:
no interface, route or address of the host's is touched, and nothing on the host can reach
them (clients of a test run in a namespace too, see :meth:`Network.exec_prefix`).

A partition drops packets on the sender's side: each node's ``eth0`` has an htb root qdisc
whose default class passes traffic and whose second class ends in a ``pfifo limit 0`` (it
drops everything it is given); :meth:`Network.block` adds a u32 filter sending packets for
one destination address into that class. ``block(a, b)`` alone is an asymmetric partition
(``a`` cannot reach ``b``, ``b`` still reaches ``a``); both directions make a symmetric one.
:meth:`Network.heal` deletes every node's filters. (This machine's kernel has no ``prio``
qdisc, no ``gact`` action and no iptables: the qdisc/filter pair above is what it has.)

Names are unique per run (``pyqf<creator pid>x<counter>...``) so concurrent runs never
collide; :meth:`Network.close` deletes every namespace it made (their veths and the bridge
go with them), after a failure too, and :func:`sweep_stale` deletes namespaces left by a
run whose process died before it could. Processes inside a namespace are started with
``ip netns exec NS ...``, which execs the command: the pid the caller holds is the process's
own, so stopping by pid works as on loopback. The caller stops them before :meth:`close`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

SUBNET = "10.77.0"
_PREFIX = "pyqf"
_counter = itertools.count()


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")


def unavailable() -> str | None:
    """Why this machine cannot run the partition tests, or None when it can."""
    if os.geteuid() != 0:
        return f"network partitions need root (ip netns add, tc); the tests run as uid {os.geteuid()}"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"network partitions need the {tool!r} command (Debian's iproute2), not installed"
    probe = Network()
    try:
        a, b = probe.add("probe-a"), probe.add("probe-b")
        probe.block(a, b)
        probe.heal()
    except (RuntimeError, OSError) as e:
        return f"network namespaces with a veth bridge and tc filters do not work here: {e}"
    finally:
        probe.close()
    return None


def sweep_stale() -> None:
    """Delete namespaces of this module's naming whose creating process no longer exists."""
    names = Path("/var/run/netns")
    if not names.is_dir():
        return
    for entry in names.iterdir():
        if not entry.name.startswith(_PREFIX):
            continue
        pid = entry.name[len(_PREFIX):].split("x", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(["ip", "netns", "del", entry.name], capture_output=True, timeout=30)


class Network:
    """Namespaces joined by a bridge; one address each; partitions by tc filters.

    Not thread-safe: one test thread builds, cuts, heals and closes it. Every namespace it
    creates is recorded before the next command runs, so :meth:`close` removes whatever a
    failed build left half-made.
    """

    def __init__(self) -> None:
        self.tag = f"{_PREFIX}{os.getpid()}x{next(_counter)}"
        self.bridge_ns = f"{self.tag}-br"
        self.address: dict[str, str] = {}  # namespace -> its eth0 address
        self._namespaces: list[str] = []
        self._filters: dict[str, int] = {}  # namespace -> filters added since the last heal

    def _ns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._namespaces.append(name)

    def add(self, name: str) -> str:
        """A new namespace ``<tag>-<name>`` plugged into the bridge; its name."""
        if not self._namespaces:
            self._ns(self.bridge_ns)
            _ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.bridge_ns, "link", "set", "br0", "up")
        ns = f"{self.tag}-{name}"
        host = len(self.address) + 1
        self._ns(ns)
        port = f"p{host}"
        _ip("-n", self.bridge_ns, "link", "add", port, "type", "veth", "peer", "name", "eth0",
            "netns", ns)
        _ip("-n", self.bridge_ns, "link", "set", port, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{SUBNET}.{host}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        self._tc(ns, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "1")
        for cls in ("1:1", "1:2"):
            self._tc(ns, "class", "add", "dev", "eth0", "parent", "1:", "classid", cls,
                     "htb", "rate", "10gbit", "quantum", "200000")
        self._tc(ns, "qdisc", "add", "dev", "eth0", "parent", "1:2", "handle", "2:", "pfifo",
                 "limit", "0")
        self.address[ns] = f"{SUBNET}.{host}"
        return ns

    def _tc(self, ns: str, *args: str) -> None:
        _ip("netns", "exec", ns, "tc", *args)

    def exec_prefix(self, ns: str) -> list[str]:
        """The command prefix running a program inside ``ns``."""
        return ["ip", "netns", "exec", ns]

    def block(self, src: str, dst: str) -> None:
        """Drop every packet ``src`` sends to ``dst`` (``dst`` still reaches ``src``)."""
        self._filters[src] = self._filters.get(src, 0) + 1
        self._tc(src, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio",
                 "1", "u32", "match", "ip", "dst", f"{self.address[dst]}/32", "flowid", "1:2")

    def isolate(self, group: list[str], others: list[str]) -> None:
        """A symmetric partition: nothing crosses between ``group`` and ``others``."""
        for a in group:
            for b in others:
                self.block(a, b)
                self.block(b, a)

    def heal(self) -> None:
        for ns in [ns for ns, n in self._filters.items() if n]:
            self._tc(ns, "filter", "del", "dev", "eth0", "parent", "1:")
            self._filters[ns] = 0

    def close(self) -> None:
        """Delete every namespace made (veths and the bridge with them); errors collected."""
        errors = []
        for ns in reversed(self._namespaces):
            done = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True,
                                  timeout=30)
            if done.returncode != 0:
                errors.append(f"{ns}: {done.stderr.strip()}")
        self._namespaces.clear()
        if errors:
            raise RuntimeError("could not delete network namespaces: " + "; ".join(errors))
