"""Kafka's command-line tools, run by their main classes from the cached jars.

``kafka-topics.sh`` and its siblings are thin shell wrappers around ``kafka-run-class.sh
<main class>``; :func:`run_tool` does the same with the jars :mod:`reference.jars` fetched,
so a test names a tool as an operator would (``run_tool("kafka-topics", "--bootstrap-server",
..., "--list")``). :data:`TOOLS` maps each script's name to its main class in Kafka 4.
The tools log WARN and above to stderr, as with Kafka's ``tools-log4j2.yaml``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

from reference.jars import java, kafka_jars

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-storage": "kafka.tools.StorageTool",
}
#: A tool is a short-lived JVM: C1 only and a small heap start it fastest.
TOOL_JVM_OPTIONS = ("-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m")
_LOG4J2 = """\
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
"""


def java_client_properties(options: Mapping[str, object]) -> str:
    """A ``--command-config`` file's text for Kafka's Java clients from the librdkafka-style
    options pyq's client takes (``LocalSecurity.client_options``): ``sasl.username`` and
    ``sasl.password`` become a SCRAM ``sasl.jaas.config`` line, ``ssl.ca.location`` a PEM
    trust store. ``bootstrap.servers`` is left out (the tools take ``--bootstrap-server``)."""
    lines = []
    for name in ("security.protocol", "sasl.mechanism"):
        if name in options:
            lines.append(f"{name}={options[name]}")
    if "sasl.username" in options:
        mechanism = str(options.get("sasl.mechanism", "SCRAM-SHA-512"))
        module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "org.apache.kafka.common.security.scram.ScramLoginModule")
        lines.append(f'sasl.jaas.config={module} required username="{options["sasl.username"]}" '
                     f'password="{options["sasl.password"]}";')
    if "ssl.ca.location" in options:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={options['ssl.ca.location']}"]
    return "\n".join(lines) + "\n"


def tool_command(tool: str, *args: str) -> list[str]:
    """The command line that runs ``tool`` (a script's name, or a main class) with ``args``."""
    jars = kafka_jars()
    log_config = jars.directory.parent / "tools-log4j2.properties"
    if not log_config.exists():
        log_config.write_text(_LOG4J2)
    return [java(), *TOOL_JVM_OPTIONS, f"-Dlog4j2.configurationFile={log_config}",
            "-cp", jars.classpath, TOOLS.get(tool, tool), *args]


def run_tool(tool: str, *args: str, input: str | None = None, timeout: float = 120.0,
             env: Mapping[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a Kafka tool to completion; with ``check`` a non-zero exit raises with its output."""
    done = subprocess.run(tool_command(tool, *args), input=input, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})},
                          stdin=None if input is not None else subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise AssertionError(f"{tool} {' '.join(args)} exited {done.returncode}\n"
                             f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}")
    return done

