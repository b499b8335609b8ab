"""Broker configuration: Kafka's option names and defaults, typed and validated once.

Options arrive as strings (command line ``--override name=value`` or a dict); each is
parsed by its declared type and checked against its rule here, at construction, with an
error naming the option, the value given and what is allowed:

>>> BrokerConfig.from_properties({"num.io.threads": "0"})
Traceback (most recent call last):
...
broker_sim.protocol.errors.ConfigError: num.io.threads=0 is not allowed: must be at least 1
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..controller.leader_balance import KAFKA_DEFAULTS, LeaderBalanceConfig
from ..controller.leader_balance import OPTIONS as LEADER_BALANCE_OPTIONS
from ..coordinator.group.config import PROPERTIES as GROUP_PROPERTIES
from ..coordinator.group.config import GroupConfig
from ..coordinator.transaction.config import PROPERTIES as TXN_PROPERTIES
from ..coordinator.transaction.config import TransactionConfig
from ..log.config import BROKER_LOG_PROPERTIES, LogConfig
from ..network.listener import Listener, parse_listeners, parse_protocol_map
from ..protocol.errors import ConfigError as ConfigError  # one class for every option
from ..protocol.errors import KafkaError
from ..registry.listener import RegistryListener, parse_authentication, parse_registry_listener
from ..security.oauthbearer import OPTIONS as OAUTHBEARER_OPTIONS
from ..security.oauthbearer import OAuthBearerConfig
from ..security.sasl_server import DEFAULT_MECHANISMS, SUPPORTED_MECHANISMS
from ..security.stores import STORE_TYPES, StoreError, key_entry, trusted_pem
from ..security.tls import CLIENT_AUTH


def _parse_overrides(text: str) -> dict[str, int]:
    """``"127.0.0.1:5,10.0.0.1:200"`` -> {ip: limit}."""
    out: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        ip, _, n = item.rpartition(":")
        out[ip] = int(n)
    return out


def _parse_mechanisms(text: str) -> tuple[str, ...]:
    names = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    bad = [m for m in names if m not in SUPPORTED_MECHANISMS]
    if bad or not names:
        raise ValueError("must be a comma-separated list of " + ", ".join(SUPPORTED_MECHANISMS))
    return names


def _parse_super_users(text: str) -> tuple[str, ...]:
    """``User:admin;User:CN=broker,O=pyq`` (semicolons: a certificate's name has commas)."""
    users = tuple(u.strip() for u in text.split(";") if u.strip())
    for u in users:
        kind, sep, name = u.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"{u!r} is not a principal TYPE:NAME (e.g. User:admin); "
                             "separate principals with ';'")
    return users


def _parse_client_auth(text: str) -> str:
    value = text.strip().lower()
    if value not in CLIENT_AUTH:
        raise ValueError("must be one of " + ", ".join(CLIENT_AUTH))
    return value


def _parse_store_type(text: str) -> str:
    if text.strip().upper() not in STORE_TYPES:
        raise ValueError("must be one of " + ", ".join(STORE_TYPES))
    return text.strip().upper()


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ValueError("must be true or false")


#: Kafka option name -> (BrokerConfig field, parser of the string value).
SIMPLE_PROPERTIES: dict[str, tuple[str, Any]] = {
    "broker.id": ("broker_id", int), "node.id": ("broker_id", int),
    "host": ("host", str), "port": ("port", int),
    "log.dirs": ("data_dir", Path), "log.dir": ("data_dir", Path),
    "advertised.host.name": ("advertised_host", str),
    "num.network.threads": ("num_network_threads", int),
    "num.io.threads": ("num_io_threads", int),
    "queued.max.requests": ("queued_max_requests", int),
    "socket.request.max.bytes": ("socket_request_max_bytes", int),
    "max.connections.per.ip": ("max_connections_per_ip", int),
    "max.connections.per.ip.overrides": ("max_connections_per_ip_overrides", _parse_overrides),
    "auto.create.topics.enable": ("auto_create_topics_enable", _parse_bool),
    "num.partitions": ("num_partitions", int),
    "default.replication.factor": ("default_replication_factor", int),
    "replica.lag.time.max.ms": ("replica_lag_time_max_ms", int),
    "broker.heartbeat.interval.ms": ("heartbeat_interval_ms", int),
    "broker.session.timeout.ms": ("session_timeout_ms", int),
    "controller": ("controller", str),
    "message.max.bytes": ("message_max_bytes", int),
    "log.retention.check.interval.ms": ("log_retention_check_interval_ms", int),
    "log.cleaner.enable": ("log_cleaner_enable", _parse_bool),
    "log.cleaner.threads": ("log_cleaner_threads", int),
    "log.cleaner.backoff.ms": ("log_cleaner_backoff_ms", int),
    "log.cleaner.dedupe.buffer.size": ("log_cleaner_dedupe_buffer_size", int),
    "cluster.id": ("cluster_id", str),
    "inter.broker.listener.name": ("inter_broker_listener_name", lambda v: v.strip().upper()),
    "ssl.keystore.type": ("ssl_keystore_type", _parse_store_type),
    "ssl.keystore.location": ("ssl_keystore_location", str),
    "ssl.keystore.password": ("ssl_keystore_password", str),
    "ssl.key.password": ("ssl_key_password", str),
    "ssl.truststore.type": ("ssl_truststore_type", _parse_store_type),
    "ssl.truststore.location": ("ssl_truststore_location", str),
    "ssl.truststore.password": ("ssl_truststore_password", str),
    "ssl.client.auth": ("ssl_client_auth", _parse_client_auth),
    "sasl.enabled.mechanisms": ("sasl_enabled_mechanisms", _parse_mechanisms),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "metrics.port": ("metrics_port", int),
    "fetch.zero.copy.enable": ("fetch_zero_copy", _parse_bool),
    "max.incremental.fetch.session.cache.slots": ("fetch_session_cache_slots", int),
    "listener.security.protocol.map": ("listener_security_protocol_map", parse_protocol_map),
    "authorizer.class.name": ("authorizer_class_name", str.strip),
    "super.users": ("super_users", _parse_super_users),
    "allow.everyone.if.no.acl.found": ("allow_everyone_if_no_acl_found", _parse_bool),
    "schema.registry.listeners": ("schema_registry_listener", parse_registry_listener),
    "schema.registry.authentication": ("schema_registry_authentication", parse_authentication),
}

#: Broker-wide log defaults: Kafka's "log." prefixed names -> the topic-level name.
LOG_PROPERTIES: dict[str, str] = BROKER_LOG_PROPERTIES

#: Options whose value DescribeConfigs never shows.
SENSITIVE_PROPERTIES = frozenset({"ssl.key.password", "ssl.keystore.password",
                                  "ssl.truststore.password"})


def _format(value: Any) -> str | None:
    """A BrokerConfig field's value in its option's string form."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class BrokerConfig:
    broker_id: int = 0
    host: str = "127.0.0.1"
    port: int = 9092
    data_dir: Path = Path("pyq-data")
    advertised_host: str | None = None
    num_network_threads: int = 2
    num_io_threads: int = 4
    queued_max_requests: int = 500
    socket_request_max_bytes: int = 100 * 1024 * 1024
    max_connections_per_ip: int = 1000
    max_connections_per_ip_overrides: dict[str, int] = field(default_factory=dict)
    auto_create_topics_enable: bool = False
    num_partitions: int = 1
    default_replication_factor: int = -1  # -1: the controller's default (3, at most the live brokers)
    replica_lag_time_max_ms: int = 10_000
    heartbeat_interval_ms: int = 250
    controller: str | None = None  # HOST:PORT of the cluster's controller; None: embedded
    session_timeout_ms: int = 3000
    message_max_bytes: int = 1048588
    log_retention_check_interval_ms: int = 300_000
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    log: LogConfig = field(default_factory=LogConfig)
    cluster_id: str = "pyq-cluster"
    #: Empty: one PLAINTEXT listener on ``host:port``.
    listeners: tuple[Listener, ...] = ()
    listener_security_protocol_map: dict[str, str] = field(default_factory=dict)
    #: The PLAINTEXT listener replicas fetch from; None: the one named PLAINTEXT, else the first.
    inter_broker_listener_name: str | None = None
    #: PEM, PKCS12 or JKS (:mod:`broker_sim.security.stores`); a PKCS12 or JKS store is
    #: opened at construction, so a wrong password or type fails there.
    ssl_keystore_type: str = "PEM"
    ssl_keystore_location: str | None = None
    ssl_keystore_password: str | None = field(default=None, repr=False)
    ssl_key_password: str | None = field(default=None, repr=False)
    ssl_truststore_type: str = "PEM"
    ssl_truststore_location: str | None = None
    ssl_truststore_password: str | None = field(default=None, repr=False)
    ssl_client_auth: str = "none"
    sasl_enabled_mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS
    #: ``sasl.oauthbearer.*``: how OAUTHBEARER tokens are validated (no JWKS URL: unsecured
    #: tokens, Kafka's development mode).
    oauthbearer: OAuthBearerConfig = field(default_factory=OAuthBearerConfig)
    connections_max_idle_ms: int = 600_000
    #: Port of the Prometheus metrics endpoint on ``host`` (0: a free one); None: no endpoint.
    metrics_port: int | None = None
    #: pyq's own option: Fetch responses on plaintext listeners send record bytes straight
    #: from the segment files (``os.sendfile``); false reads them into memory first (the
    #: copying path every TLS listener takes). The bytes on the wire are the same.
    fetch_zero_copy: bool = True
    #: Incremental fetch sessions (KIP-227) held at once, for followers (0: none; every
    #: follower fetch then names all its partitions).
    fetch_session_cache_slots: int = 1000
    #: Any non-empty value turns on pyq's ACL authorizer (Kafka names a class here).
    authorizer_class_name: str = ""
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False
    #: pyq's own: serve the schema registry's REST API here (``http://`` or ``https://``
    #: HOST:PORT, port 0: a free one); None: no registry on this broker.
    schema_registry_listener: RegistryListener | None = None
    #: ``basic``: the registry asks HTTP basic credentials of the cluster's SCRAM users.
    schema_registry_authentication: str = "none"
    #: The embedded controller's automatic preferred-leader rebalance (a single broker
    #: only; a cluster's controller takes these options itself).
    leader_balance: LeaderBalanceConfig = KAFKA_DEFAULTS
    #: The group coordinator's settings (``offsets.topic.*``, ``group.*``).
    group: GroupConfig = field(default_factory=GroupConfig)
    #: The transaction coordinator's settings (``transaction.state.log.*``,
    #: ``transaction.max.timeout.ms``).
    transaction: TransactionConfig = field(default_factory=TransactionConfig)

    def __post_init__(self) -> None:
        rules = [
            ("broker.id", self.broker_id, 0), ("port", self.port, 0),
            ("num.network.threads", self.num_network_threads, 1),
            ("num.io.threads", self.num_io_threads, 1),
            ("queued.max.requests", self.queued_max_requests, 1),
            ("socket.request.max.bytes", self.socket_request_max_bytes, 1024),
            ("max.connections.per.ip", self.max_connections_per_ip, 1),
            ("num.partitions", self.num_partitions, 1),
            ("default.replication.factor", self.default_replication_factor, -1),
            ("replica.lag.time.max.ms", self.replica_lag_time_max_ms, 1),
            ("broker.heartbeat.interval.ms", self.heartbeat_interval_ms, 1),
            ("broker.session.timeout.ms", self.session_timeout_ms, 1),
            ("message.max.bytes", self.message_max_bytes, 0),
            ("log.retention.check.interval.ms", self.log_retention_check_interval_ms, 1),
            ("log.cleaner.threads", self.log_cleaner_threads, 1),
            ("log.cleaner.backoff.ms", self.log_cleaner_backoff_ms, 1),
            ("log.cleaner.dedupe.buffer.size", self.log_cleaner_dedupe_buffer_size, 1024 * 1024),
            ("connections.max.idle.ms", self.connections_max_idle_ms, 1),
        ]
        for name, value, minimum in rules:
            if value < minimum:
                raise ConfigError(f"{name}={value} is not allowed: must be at least {minimum}")
        if self.port > 65535:
            raise ConfigError(f"port={self.port} is not allowed: must be at most 65535")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ConfigError(f"metrics.port={self.metrics_port} is not allowed: must be 0..65535 "
                              "(0 picks a free port)")
        self._check_listeners()
        registry = self.schema_registry_listener
        if registry is not None and registry.uses_tls and not self.ssl_keystore_location:
            raise ConfigError(f"schema.registry.listeners={registry} is not allowed without "
                              "ssl.keystore.location: https serves the broker's certificate")

    def _check_listeners(self) -> None:
        listeners = self.effective_listeners
        names = [lst.name for lst in listeners]
        inter = self.inter_broker_listener
        if self.inter_broker_listener_name is not None and self.inter_broker_listener_name not in names:
            raise ConfigError(f"inter.broker.listener.name={self.inter_broker_listener_name} is not "
                              f"allowed: must name one of the listeners {names}")
        if self.controller is not None and inter.security_protocol != "PLAINTEXT":
            raise ConfigError(f"inter.broker.listener.name={inter.name} is not allowed: replication "
                              f"runs over a PLAINTEXT listener, and {inter.name} is "
                              f"{inter.security_protocol}; add one, e.g. "
                              "listeners=PLAINTEXT://127.0.0.1:0,...")
        if any(lst.uses_tls for lst in listeners):
            if not self.ssl_keystore_location:
                tls = [lst.name for lst in listeners if lst.uses_tls]
                raise ConfigError(f"ssl.keystore.location=None is not allowed: listeners {tls} use TLS "
                                  "and need the broker's key and certificate chain (a PEM file, "
                                  "or a PKCS12 or JKS store with ssl.keystore.type)")
            for name, path in (("ssl.keystore.location", self.ssl_keystore_location),
                               ("ssl.truststore.location", self.ssl_truststore_location)):
                if path is not None and not Path(path).is_file():
                    raise ConfigError(f"{name}={path} is not allowed: no such file")
            self._check_stores()

    def _check_stores(self) -> None:
        for prefix, kind, location, password in (
                ("ssl.keystore", self.ssl_keystore_type, self.ssl_keystore_location,
                 self.ssl_keystore_password),
                ("ssl.truststore", self.ssl_truststore_type, self.ssl_truststore_location,
                 self.ssl_truststore_password)):
            if kind == "PEM":
                if password is not None:
                    raise ConfigError(f"{prefix}.type=PEM is not allowed with {prefix}.password: "
                                      "PEM files have no store password (a PEM key's password is "
                                      "ssl.key.password)")
                continue
            if location is None:
                raise ConfigError(f"{prefix}.type={kind} is not allowed without {prefix}.location")
            try:
                if prefix == "ssl.keystore":
                    key_entry(location, kind, password, self.ssl_key_password)
                else:
                    trusted_pem(location, kind, password)
            except StoreError as e:
                raise ConfigError(str(e)) from None

    @property
    def effective_listeners(self) -> tuple[Listener, ...]:
        """The configured listeners, or one PLAINTEXT listener on ``host:port``."""
        return self.listeners or (Listener("PLAINTEXT", "PLAINTEXT", self.host, self.port),)

    @property
    def inter_broker_listener(self) -> Listener:
        listeners = self.effective_listeners
        wanted = self.inter_broker_listener_name or "PLAINTEXT"
        return next((lst for lst in listeners if lst.name == wanted), listeners[0])

    @property
    def advertised(self) -> str:
        return self.advertised_host or self.host

    @classmethod
    def from_properties(cls, props: dict[str, str], **explicit: Any) -> BrokerConfig:
        """Build from Kafka-named string properties; ``explicit`` keyword values win."""
        values: dict[str, Any] = {}
        log_props: dict[str, str] = {}
        group_props: dict[str, Any] = {}
        txn_props: dict[str, int] = {}
        balance_props: dict[str, str] = {}
        oauth_props: dict[str, str] = {}
        for name, raw in props.items():
            if name in LEADER_BALANCE_OPTIONS:
                balance_props[name] = raw
            elif name in OAUTHBEARER_OPTIONS:
                oauth_props[name] = raw
            elif name in SIMPLE_PROPERTIES:
                attr, parse = SIMPLE_PROPERTIES[name]
                try:
                    values[attr] = parse(raw)
                except ValueError as e:
                    raise ConfigError(f"{name}={raw!r} is not allowed: {e}") from e
            elif name in LOG_PROPERTIES:
                log_props[LOG_PROPERTIES[name]] = raw
            elif name == "log.retention.hours":
                log_props["retention.ms"] = str(int(raw) * 3_600_000)
            elif name == "group.consumer.assignors":
                group_props[GROUP_PROPERTIES[name]] = tuple(
                    a.strip() for a in raw.split(",") if a.strip())
            elif name in TXN_PROPERTIES:
                try:
                    txn_props[TXN_PROPERTIES[name]] = int(raw)
                except ValueError as e:
                    raise ConfigError(f"{name}={raw!r} is not allowed: an integer") from e
            elif name in GROUP_PROPERTIES:
                try:
                    group_props[GROUP_PROPERTIES[name]] = int(raw)
                except ValueError as e:
                    raise ConfigError(f"{name}={raw!r} is not allowed: an integer") from e
            elif name == "listeners":
                continue  # parsed below, once the protocol map is known
            else:
                known = sorted(set(SIMPLE_PROPERTIES) | set(LOG_PROPERTIES) | set(GROUP_PROPERTIES)
                               | set(TXN_PROPERTIES) | set(LEADER_BALANCE_OPTIONS)
                               | set(OAUTHBEARER_OPTIONS)
                               | {"log.retention.hours", "listeners"})
                raise ConfigError(f"unknown broker option {name!r}; known options: {', '.join(known)}")
        if "listeners" in props:
            try:
                values["listeners"] = parse_listeners(props["listeners"],
                                                      values.get("listener_security_protocol_map"))
            except ValueError as e:
                raise ConfigError(f"listeners={props['listeners']!r} is not allowed: {e}") from e
        if log_props:
            try:
                values["log"] = LogConfig.from_properties(log_props)
            except KafkaError as e:  # InvalidConfig, naming the option
                raise ConfigError(str(e)) from e
        if txn_props:
            try:
                values["transaction"] = TransactionConfig(**txn_props)
            except ValueError as e:
                raise ConfigError(str(e)) from e
        if group_props:
            try:
                values["group"] = GroupConfig(**group_props)
            except ValueError as e:
                raise ConfigError(str(e)) from e
        if balance_props:
            if "controller" in props:
                raise ConfigError(f"{', '.join(sorted(balance_props))} is not allowed on a broker of a "
                                  "cluster: it is the controller's option (pyq-broker controller "
                                  "--override; pyq-broker cluster routes it there)")
            try:
                values["leader_balance"] = LeaderBalanceConfig.from_options(balance_props)
            except KafkaError as e:  # InvalidConfig, naming the option
                raise ConfigError(e.message) from e
        if oauth_props:
            try:
                values["oauthbearer"] = OAuthBearerConfig.from_options(oauth_props)
            except KafkaError as e:  # InvalidConfig, naming the option
                raise ConfigError(e.message) from e
        values.update(explicit)
        return cls(**values)

    def replace(self, **changes: Any) -> BrokerConfig:
        return dataclasses.replace(self, **changes)

    def static_properties(self) -> dict[str, tuple[str | None, bool]]:
        """Every option this broker was started with, by Kafka name: (value as a string,
        whether it differs from pyq's default). What DescribeConfigs reports for a broker
        as read-only STATIC_BROKER_CONFIG (or DEFAULT_CONFIG when not changed)."""
        default = BrokerConfig()
        out: dict[str, tuple[str | None, bool]] = {}

        def put(name: str, value: Any, base: Any) -> None:
            out[name] = (_format(value), value != base)

        for name, (attr, _parse) in SIMPLE_PROPERTIES.items():
            put(name, getattr(self, attr), getattr(default, attr))
        out["super.users"] = (";".join(self.super_users), self.super_users != default.super_users)
        balance, base = self.leader_balance, default.leader_balance
        put("auto.leader.rebalance.enable", balance.enable, base.enable)
        put("leader.imbalance.check.interval.seconds", balance.check_interval_s, base.check_interval_s)
        put("leader.imbalance.per.broker.percentage", balance.per_broker_percentage,
            base.per_broker_percentage)
        for name, value in self.oauthbearer.options().items():
            base_value = default.oauthbearer.options()[name]
            out[name] = (value, value != base_value)
        for name, prop in LOG_PROPERTIES.items():
            put(name, self.log.to_properties()[prop], default.log.to_properties()[prop])
        for name, attr in GROUP_PROPERTIES.items():
            put(name, getattr(self.group, attr), getattr(default.group, attr))
        for name, attr in TXN_PROPERTIES.items():
            put(name, getattr(self.transaction, attr), getattr(default.transaction, attr))
        listeners = ",".join(f"{lst.name}://{lst.host}:{lst.port}" for lst in self.effective_listeners)
        out["listeners"] = (listeners, bool(self.listeners))
        return dict(sorted(out.items()))
