"""Apache Kafka KRaft clusters on loopback, each node a real Kafka JVM started from its jars.

A :class:`KafkaCluster` of ``n`` nodes runs ``n`` processes of ``kafka.Kafka``, each both
broker and controller (``process.roles=broker,controller``), with a static controller quorum
of all of them (``controller.quorum.voters``). One node is the smallest Kafka there is; three
give replication factor 3 and survive the loss of one. Every node listens on 127.0.0.1 only,
on ports picked free just before it starts:

- ``PLAINTEXT`` (clients, and replication between brokers), ``CONTROLLER`` (the quorum);
- with ``security`` (a :class:`~connector.local_security.LocalSecurity`), also its protocol's
  listener (``SASL_SSL``: SCRAM-SHA-256/512 users from it, PLAIN refused; PEM key and trust
  store from its throwaway CA). With ``authorizer=True`` Kafka's ``StandardAuthorizer`` checks ACLs on that
  listener; ``User:ANONYMOUS``, the principal of the loopback PLAINTEXT listeners, is a super
  user, so replication and the PLAINTEXT clients of a test are not checked.

Starting formats each node's log directory (``kafka.tools.StorageTool format``) with one
cluster id and the SCRAM users, starts the JVMs, and waits until every node logs ``Kafka
Server started``. The server properties sized for a test (``offsets.topic.num.partitions=5``
and the transaction log likewise, ``group.initial.rebalance.delay.ms=0``, replication
factors of the internal topics capped at the node count) are in :meth:`KafkaCluster._properties`;
``overrides`` replace any of them (Kafka's own names).

Processes: each JVM is this process's child, started with ``PR_SET_PDEATHSIG=SIGKILL`` when
started from the main thread, so it dies with the process that started it even after a
``kill -9``; :meth:`stop` sends SIGTERM to every node at once, waits, then SIGKILLs whatever is
left, by pid. :meth:`kill` (SIGKILL) and :meth:`restart` of one node simulate a crash. Heap
and JIT options default to what a test needs on 2 cores (``jvm_options``); a benchmark passes
Kafka's own production defaults instead (:data:`KAFKA_SERVER_JVM_OPTIONS`).

Output of each node goes to ``<directory>/node-<id>/server.log`` (log4j2, INFO).
"""

from __future__ import annotations

import base64
import ctypes
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reference.jars import java, kafka_jars

if TYPE_CHECKING:
    from connector.local_security import LocalSecurity

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
#: JVM options for a node in the test suite: a small heap, C1 only (fast start, little JIT CPU).
TEST_JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-Xshare:auto")
#: What ``kafka-server-start.sh`` gives a broker (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_SERVER_JVM_OPTIONS = ("-Xms1G", "-Xmx1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                            "-Djava.awt.headless=true")
_STARTED = b"Kafka Server started"
_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:pyq.kafka.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
"""


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports nothing listens on now: the kernel's picks for ephemeral binds,
    all held open until every one is picked (a port closed at once may be picked again)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def die_with_parent() -> None:
    """``preexec_fn``: the kernel SIGKILLs the child when the thread that forked it ends."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class KafkaNode:
    """One KRaft node (broker and controller) of a :class:`KafkaCluster`."""

    node_id: int
    directory: Path
    port: int
    controller_port: int
    secure_port: int | None
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None, f"node {self.node_id} is not running"
        return self.proc.pid

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class KafkaCluster:
    def __init__(self, directory: str | Path, nodes: int = 1, *,
                 security: LocalSecurity | None = None, authorizer: bool = False,
                 overrides: Mapping[str, Any] | None = None,
                 jvm_options: Sequence[str] = TEST_JVM_OPTIONS) -> None:
        if nodes < 1:
            raise ValueError(f"nodes={nodes} is not allowed: a cluster has at least one node")
        if security is not None and security.mechanism == "PLAIN":
            raise ValueError("security.mechanism='PLAIN' is not allowed here: Kafka keeps PLAIN "
                             "users in its JAAS config, which this cluster does not write; use "
                             "SCRAM-SHA-256 or SCRAM-SHA-512")
        if authorizer and security is None:
            raise ValueError("authorizer=True needs security: ACLs are checked on the secured "
                             "listener only")
        self.directory = Path(directory)
        self.security = security
        self.authorizer = authorizer
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self.jvm_options = list(jvm_options)
        self.cluster_id = _kafka_uuid()
        self.jars = kafka_jars()
        self.java = java()
        ports = iter(free_ports(3 * nodes))
        self.nodes = [KafkaNode(i, self.directory / f"node-{i}", next(ports), next(ports),
                                next(ports) if security is not None else None)
                      for i in range(1, nodes + 1)]

    # -- addresses ---------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        """The PLAINTEXT listeners of every node."""
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def secure_bootstrap_servers(self) -> str:
        """The secured listeners (``security``'s protocol) of every node."""
        if self.security is None:
            raise ValueError("this cluster has no secured listener (security=None)")
        return ",".join(f"127.0.0.1:{n.secure_port}" for n in self.nodes)

    def client_options(self, user: str | None = None) -> dict[str, Any]:
        """Options for pyq's client (and librdkafka) on the secured listener as ``user``."""
        if self.security is None:
            raise ValueError("this cluster has no secured listener (security=None)")
        return self.security.client_options(self.secure_bootstrap_servers, user)

    def node(self, node_id: int) -> KafkaNode:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(f"no node {node_id}: the cluster has {[n.node_id for n in self.nodes]}")

    # -- configuration -----------------------------------------------------------------

    def _properties(self, node: KafkaNode) -> dict[str, str]:
        n = len(self.nodes)
        listeners = [f"PLAINTEXT://127.0.0.1:{node.port}", f"CONTROLLER://127.0.0.1:{node.controller_port}"]
        advertised = [f"PLAINTEXT://127.0.0.1:{node.port}"]
        protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
        props = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "controller.quorum.voters": ",".join(
                f"{m.node_id}@127.0.0.1:{m.controller_port}" for m in self.nodes),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node.directory / "data"),
            "offsets.topic.replication.factor": str(min(3, n)),
            "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": str(min(3, n)),
            "transaction.state.log.min.isr": str(min(2, n)),
            "transaction.state.log.num.partitions": "5",
            "share.coordinator.state.topic.replication.factor": str(min(3, n)),
            "share.coordinator.state.topic.min.isr": str(min(2, n)),
            "group.initial.rebalance.delay.ms": "0",
        }
        sec = self.security
        if sec is not None:
            name = sec.protocol
            listeners.append(f"{name}://127.0.0.1:{node.secure_port}")
            advertised.append(f"{name}://127.0.0.1:{node.secure_port}")
            protocols.append(f"{name}:{name}")
            if sec.uses_tls:
                props.update({
                    "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(sec.broker_identity.pem),
                    "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": str(sec.ca.ca_path),
                })
            if sec.protocol == "SSL":
                props["ssl.client.auth"] = "required"
            if sec.uses_sasl:
                props["sasl.enabled.mechanisms"] = sec.mechanism
                props[f"listener.name.{name.lower()}.{sec.mechanism.lower()}.sasl.jaas.config"] = (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;")
        overrides = dict(self.overrides)
        if self.authorizer:
            props["authorizer.class.name"] = STANDARD_AUTHORIZER
            props["allow.everyone.if.no.acl.found"] = "false"
            given = [u for u in overrides.pop("super.users", "").split(";") if u]
            props["super.users"] = ";".join(dict.fromkeys(["User:ANONYMOUS", *given]))
        props["listeners"] = ",".join(listeners)
        props["advertised.listeners"] = ",".join(advertised)
        props["listener.security.protocol.map"] = ",".join(protocols)
        props.update(overrides)
        return props

    def _write_config(self, node: KafkaNode) -> Path:
        node.directory.mkdir(parents=True, exist_ok=True)
        path = node.directory / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self._properties(node).items()))
        (node.directory / "log4j2.properties").write_text(_LOG4J2)
        return path

    def _format(self, node: KafkaNode, config: Path) -> None:
        cmd = [self.java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               "-cp", self.jars.classpath, "kafka.tools.StorageTool", "format",
               f"--cluster-id={self.cluster_id}", "-c", str(config)]
        if self.security is not None:
            for spec in self.security.scram_specs():
                cmd += ["--add-scram", spec]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"formatting Kafka node {node.node_id} failed "
                               f"(exit {done.returncode}):\n{done.stdout}{done.stderr}")

    # -- processes ---------------------------------------------------------------------

    def start(self, timeout: float = 120.0) -> KafkaCluster:
        try:
            for node in self.nodes:
                self._format(node, self._write_config(node))
            for node in self.nodes:
                self._spawn(node)
            for node in self.nodes:
                self._wait_started(node, 0, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _launcher(self, node: KafkaNode) -> list[str]:
        """What the node's JVM command line is prefixed with (e.g. ``ip netns exec NS``, an
        exec-ing wrapper: the node's pid stays the JVM's); nothing here."""
        return []

    def _spawn(self, node: KafkaNode) -> None:
        cmd = [*self._launcher(node), self.java, *self.jvm_options,
               f"-Dlog4j2.configurationFile={node.directory / 'log4j2.properties'}",
               f"-Dpyq.kafka.log={node.log_path}",
               "-cp", self.jars.classpath, "kafka.Kafka", str(node.directory / "server.properties")]
        main = threading.current_thread() is threading.main_thread()
        with open(node.directory / "stdout.log", "ab") as out:
            node.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=die_with_parent if main else None)

    def _wait_started(self, node: KafkaNode, log_offset: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.log_path.exists():
                with open(node.log_path, "rb") as f:
                    f.seek(log_offset)
                    if _STARTED in f.read():
                        return
            assert node.proc is not None
            if node.proc.poll() is not None:
                raise RuntimeError(f"Kafka node {node.node_id} exited with {node.proc.returncode} "
                                   f"before it started:\n{self.output(node.node_id)[-4000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"Kafka node {node.node_id} did not start within {timeout} s:\n"
                           f"{self.output(node.node_id)[-4000:]}")

    def output(self, node_id: int) -> str:
        node = self.node(node_id)
        parts = [p.read_text(errors="replace") for p in (node.directory / "stdout.log", node.log_path)
                 if p.exists()]
        return "\n".join(parts)

    def kill(self, node_id: int) -> None:
        """SIGKILL one node: a crash, nothing flushed."""
        node = self.node(node_id)
        if node.running:
            assert node.proc is not None
            node.proc.kill()
            node.proc.wait()

    def restart(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped or killed node again, on the same ports and log directory."""
        node = self.node(node_id)
        if node.running:
            raise RuntimeError(f"node {node_id} is running (pid {node.pid})")
        offset = node.log_path.stat().st_size if node.log_path.exists() else 0
        self._spawn(node)
        self._wait_started(node, offset, timeout)

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM every running node at once; SIGKILL those still running ``timeout`` s later."""
        running = [n for n in self.nodes if n.running]
        for node in running:
            assert node.proc is not None
            node.proc.terminate()
        deadline = time.monotonic() + timeout
        for node in running:
            assert node.proc is not None
            try:
                node.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.proc.kill()
                node.proc.wait()

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kafka_uuid() -> str:
    """A cluster id as ``kafka-storage random-uuid`` prints it: 16 random bytes, base64url,
    never starting with ``-`` (Kafka draws again then: a command line would read it as an
    option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
