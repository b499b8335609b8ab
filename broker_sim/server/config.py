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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..common.options import (
    BOOL,
    OPTIONAL_STRING,
    STRING,
    OptionSpec,
    Refused,
    choice,
    custom,
    declared,
    format_value,
    integer,
    names,
    option,
)
from ..controller.leader_balance import KAFKA_DEFAULTS, LeaderBalanceConfig
from ..controller.leader_balance import OPTIONS as LEADER_BALANCE_OPTIONS
from ..coordinator.group.config import PROPERTIES as GROUP_PROPERTIES
from ..coordinator.group.config import GroupConfig, at_least
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


def _from_text(parse: Callable[[str], Any], *typed: type) -> Callable[[Any], Any]:
    """A parser of the string form that passes values of the ``typed`` classes through; a
    ``ValueError`` of ``parse`` states the precise rule (:class:`Refused`)."""

    def run(value: Any) -> Any:
        if value is None or isinstance(value, typed):
            return value
        try:
            return parse(str(value))
        except ValueError as e:
            raise Refused(str(e)) from None

    return run


def _parse_overrides(text: str) -> dict[str, int]:
    """``"127.0.0.1:5,10.0.0.1:200"`` -> {ip: limit}."""
    out: dict[str, int] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        ip, _, n = item.rpartition(":")
        out[ip] = int(n)
    return out


def _parse_mechanisms(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(m.strip().upper() for m in items if m.strip())
    if not names or any(m not in SUPPORTED_MECHANISMS for m in names):
        raise ValueError(value)
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


def _upper_or_none(value: Any) -> str | None:
    return None if value is None else str(value).strip().upper()


PATH = custom("path", lambda v: v if isinstance(v, Path) else Path(str(v)), "a directory path")
STORE_TYPE = choice(STORE_TYPES, case="upper")
MECHANISMS = custom("list", _parse_mechanisms,
                    "a comma-separated list of " + ", ".join(SUPPORTED_MECHANISMS))
PRINCIPALS = custom("list", _from_text(_parse_super_users, tuple),
                    "principals TYPE:NAME separated by ';'")
LISTENERS = custom("list", _from_text(parse_listeners, tuple),
                   "a comma-separated list of NAME://HOST:PORT")
PROTOCOL_MAP = custom("map", _from_text(parse_protocol_map, dict),
                      "a comma-separated list of NAME:PROTOCOL")
IP_LIMITS = custom("map", _from_text(_parse_overrides, dict), "a comma-separated list of IP:LIMIT")
REGISTRY_LISTENER = custom("url", _from_text(parse_registry_listener, RegistryListener),
                           "one URL http://HOST:PORT or https://HOST:PORT (port 0: a free one)")
REGISTRY_AUTH = custom("choice", _from_text(parse_authentication), "one of none, basic")
SECRET = OPTIONAL_STRING
ms = at_least  # a duration in ms, at least ``low``


@dataclass(frozen=True)
class BrokerConfig:
    """A broker's options, each declared once (Kafka's name, kind, default, meaning) with
    :func:`broker_sim.common.options.option`; ``docs/options.md`` lists them, and those of
    the parts this config holds (:class:`LogConfig` for the ``log.*`` defaults,
    :class:`GroupConfig`, :class:`TransactionConfig`, :class:`LeaderBalanceConfig`,
    :class:`OAuthBearerConfig`).

    Invariant: construction parses every option field (a string or a typed value) by its
    kind and checks the rules between options (listeners, TLS stores, the registry's
    https), raising :class:`ConfigError` naming the option, the value and what is allowed.
    Frozen: shared by every thread of the broker; nothing changes it while it runs (the
    dynamic ``log.*`` configs live in the cluster image)."""

    broker_id: int = option("broker.id", 0, at_least(0), aliases=("node.id",),
                            doc="This broker's id in the cluster.")
    host: str = option("host", "127.0.0.1", STRING,
                       doc="The address the default PLAINTEXT listener binds (pyq's own).")
    port: int = option("port", 9092, integer(0, 65535, allowed="0..65535"),
                       doc="The port of the default PLAINTEXT listener (0: a free one; pyq's own).")
    data_dir: Path = option("log.dirs", Path("pyq-data"), PATH, aliases=("log.dir",),
                            doc="The directory holding the partitions' logs and the broker's state.")
    advertised_host: str | None = option(
        "advertised.host.name", None, OPTIONAL_STRING, default_doc="`host`",
        doc="The host name given to clients in metadata.")
    num_network_threads: int = option("num.network.threads", 2, at_least(1),
                                      doc="Threads reading requests from and writing responses to sockets.")
    num_io_threads: int = option("num.io.threads", 4, at_least(1), doc="Threads handling requests.")
    queued_max_requests: int = option(
        "queued.max.requests", 500, at_least(1),
        doc="Requests waiting for a handler before the network threads stop reading.")
    socket_request_max_bytes: int = option("socket.request.max.bytes", 100 * 1024 * 1024,
                                           at_least(1024), doc="The largest request accepted.")
    max_connections_per_ip: int = option("max.connections.per.ip", 1000, at_least(1),
                                         doc="Connections one IP address may hold open.")
    max_connections_per_ip_overrides: dict[str, int] = option(
        "max.connections.per.ip.overrides", default_factory=dict, kind=IP_LIMITS,
        doc="Per-IP exceptions to max.connections.per.ip.")
    auto_create_topics_enable: bool = option(
        "auto.create.topics.enable", False, BOOL,
        doc="Whether metadata requests for an unknown topic create it.")
    num_partitions: int = option("num.partitions", 1, at_least(1),
                                 doc="Partitions of a topic created without a count.")
    default_replication_factor: int = option(
        "default.replication.factor", -1, at_least(-1),
        doc="Replicas of a topic created without a factor (-1: the controller's default, 3 "
            "or the live brokers if fewer).")
    replica_lag_time_max_ms: int = option(
        "replica.lag.time.max.ms", 10_000, ms(1),
        doc="How long a follower may lag before it leaves the ISR.")
    heartbeat_interval_ms: int = option("broker.heartbeat.interval.ms", 250, ms(1),
                                        doc="How often the broker heartbeats to the controller.")
    controller: str | None = option(
        "controller", None, OPTIONAL_STRING, default_doc="embedded",
        doc="HOST:PORT of the cluster's controller; unset: an embedded single-broker controller "
            "(pyq's own).")
    session_timeout_ms: int = option(
        "broker.session.timeout.ms", 3000, ms(1),
        doc="How long the controller waits for a heartbeat before it fences the broker.")
    message_max_bytes: int = option("message.max.bytes", 1048588, at_least(0),
                                    doc="The largest record batch the broker accepts.")
    log_retention_check_interval_ms: int = option(
        "log.retention.check.interval.ms", 300_000, ms(1),
        doc="How often retention looks for segments to delete.")
    log_retention_hours: int | None = option(
        "log.retention.hours", None, integer(None, None, optional=True),
        doc="log.retention.ms in hours (log.retention.ms wins when both are set, as in Kafka).")
    log_cleaner_enable: bool = option("log.cleaner.enable", True, BOOL,
                                      doc="Whether the log cleaner compacts compacted topics.")
    log_cleaner_threads: int = option("log.cleaner.threads", 1, at_least(1),
                                      doc="Threads of the log cleaner.")
    log_cleaner_backoff_ms: int = option("log.cleaner.backoff.ms", 15_000, ms(1),
                                         doc="How long the cleaner sleeps when no log needs it.")
    log_cleaner_dedupe_buffer_size: int = option(
        "log.cleaner.dedupe.buffer.size", 128 * 1024 * 1024, at_least(1024 * 1024),
        doc="Memory of the cleaner's key map.")
    log: LogConfig = field(default_factory=LogConfig)
    cluster_id: str = option("cluster.id", "pyq-cluster", STRING, doc="The cluster's id.")
    listeners: tuple[Listener, ...] = option(
        "listeners", (), LISTENERS, default_doc="PLAINTEXT://`host`:`port`",
        doc="The broker's listeners; a name that is not a security protocol needs "
            "listener.security.protocol.map.")
    listener_security_protocol_map: dict[str, str] = option(
        "listener.security.protocol.map", default_factory=dict, kind=PROTOCOL_MAP,
        doc="Listener name -> security protocol, for listeners not named after theirs.")
    inter_broker_listener_name: str | None = option(
        "inter.broker.listener.name", None, custom("string", _upper_or_none, "a listener name"),
        default_doc="PLAINTEXT, else the first",
        doc="The PLAINTEXT listener replicas fetch from.")
    #: PEM, PKCS12 or JKS (:mod:`broker_sim.security.stores`); a PKCS12 or JKS store is
    #: opened at construction, so a wrong password or type fails there.
    ssl_keystore_type: str = option("ssl.keystore.type", "PEM", STORE_TYPE,
                                    doc="The format of ssl.keystore.location.")
    ssl_keystore_location: str | None = option(
        "ssl.keystore.location", None, OPTIONAL_STRING,
        doc="The broker's key and certificate chain, for TLS listeners and an https registry.")
    ssl_keystore_password: str | None = option("ssl.keystore.password", None, SECRET, secret=True,
                                               doc="The keystore's password (PKCS12, JKS).")
    ssl_key_password: str | None = option("ssl.key.password", None, SECRET, secret=True,
                                          doc="The password of the key.")
    ssl_truststore_type: str = option("ssl.truststore.type", "PEM", STORE_TYPE,
                                      doc="The format of ssl.truststore.location.")
    ssl_truststore_location: str | None = option(
        "ssl.truststore.location", None, OPTIONAL_STRING,
        doc="The certificates client certificates are checked against.")
    ssl_truststore_password: str | None = option("ssl.truststore.password", None, SECRET,
                                                 secret=True, doc="The truststore's password.")
    ssl_client_auth: str = option("ssl.client.auth", "none", choice(CLIENT_AUTH),
                                  doc="Whether TLS clients must present a certificate.")
    sasl_enabled_mechanisms: tuple[str, ...] = option(
        "sasl.enabled.mechanisms", DEFAULT_MECHANISMS, MECHANISMS,
        doc="The SASL mechanisms SASL listeners offer.")
    #: ``sasl.oauthbearer.*``: how OAUTHBEARER tokens are validated (no JWKS URL: unsecured
    #: tokens, Kafka's development mode).
    oauthbearer: OAuthBearerConfig = field(default_factory=OAuthBearerConfig)
    connections_max_idle_ms: int = option("connections.max.idle.ms", 600_000, ms(1),
                                          doc="How long an idle connection stays open.")
    metrics_port: int | None = option(
        "metrics.port", None, integer(0, 65535, optional=True, allowed="0..65535 (0 picks a free port)"),
        doc="Port of the Prometheus metrics endpoint on host (0: a free one); unset: none "
            "(pyq's own).")
    fetch_zero_copy: bool = option(
        "fetch.zero.copy.enable", True, BOOL,
        doc="Whether Fetch responses on plaintext listeners send record bytes straight from "
            "the segment files (os.sendfile); false reads them into memory first (pyq's own).")
    fetch_session_cache_slots: int = option(
        "max.incremental.fetch.session.cache.slots", 1000, at_least(0),
        doc="Incremental fetch sessions (KIP-227) held at once, for followers (0: none).")
    authorizer_class_name: str = option(
        "authorizer.class.name", "", custom("string", lambda v: str(v).strip(), "a string"),
        doc="Any non-empty value turns on pyq's ACL authorizer (Kafka names a class here).")
    super_users: tuple[str, ...] = option("super.users", (), PRINCIPALS,
                                          doc="Principals every ACL check allows.")
    allow_everyone_if_no_acl_found: bool = option(
        "allow.everyone.if.no.acl.found", False, BOOL,
        doc="Whether a resource no ACL names is open to everyone.")
    schema_registry_listener: RegistryListener | None = option(
        "schema.registry.listeners", None, REGISTRY_LISTENER,
        doc="Serve the schema registry's REST API here; unset: no registry on this broker "
            "(pyq's own).")
    schema_registry_authentication: str = option(
        "schema.registry.authentication", "none", REGISTRY_AUTH,
        doc="basic: the registry asks HTTP basic credentials of the cluster's SCRAM users.")
    #: The embedded controller's automatic preferred-leader rebalance (a single broker
    #: only; a cluster's controller takes these options itself).
    leader_balance: LeaderBalanceConfig = KAFKA_DEFAULTS
    #: The group coordinator's settings (``offsets.topic.*``, ``group.*``).
    group: GroupConfig = field(default_factory=GroupConfig)
    #: The transaction coordinator's settings (``transaction.state.log.*``,
    #: ``transaction.max.timeout.ms``).
    transaction: TransactionConfig = field(default_factory=TransactionConfig)

    def __post_init__(self) -> None:
        for spec in declared(BrokerConfig).values():
            object.__setattr__(self, spec.attr, _parse(spec, getattr(self, spec.attr)))
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
        own = names(BrokerConfig)
        values: dict[str, Any] = {}
        log_props: dict[str, str] = {}
        group_props: dict[str, Any] = {}
        txn_props: dict[str, Any] = {}
        balance_props: dict[str, str] = {}
        oauth_props: dict[str, str] = {}
        for name, raw in props.items():
            if name in LEADER_BALANCE_OPTIONS:
                balance_props[name] = raw
            elif name in OAUTHBEARER_OPTIONS:
                oauth_props[name] = raw
            elif name in own:
                values[own[name].attr] = raw if name == "listeners" else _parse(own[name], raw)
            elif name in BROKER_LOG_PROPERTIES:
                log_props[BROKER_LOG_PROPERTIES[name]] = raw
            elif name in TXN_PROPERTIES:
                txn_props[TXN_PROPERTIES[name]] = raw
            elif name in GROUP_PROPERTIES:
                group_props[GROUP_PROPERTIES[name]] = raw
            else:
                known = sorted(BROKER_OPTIONS)
                raise ConfigError(f"unknown broker option {name!r}; known options: {', '.join(known)}")
        if "listeners" in props:  # parsed once the protocol map is known
            try:
                values["listeners"] = parse_listeners(props["listeners"],
                                                      values.get("listener_security_protocol_map"))
            except ValueError as e:
                raise ConfigError(f"listeners={props['listeners']!r} is not allowed: {e}") from e
        # log.retention.ms wins over log.retention.hours, as in Kafka, whatever their order
        if values.get("log_retention_hours") is not None and "retention.ms" not in log_props:
            log_props["retention.ms"] = str(values["log_retention_hours"] * 3_600_000)
        if log_props:
            try:
                values["log"] = LogConfig.from_properties(log_props)
            except KafkaError as e:  # InvalidConfig, naming the option
                raise ConfigError(str(e)) from e
        for attr, part, part_props in (("transaction", TransactionConfig, txn_props),
                                       ("group", GroupConfig, group_props)):
            if part_props:
                try:
                    values[attr] = part(**part_props)
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
        for part, base in ((self, default), (self.leader_balance, default.leader_balance),
                           (self.oauthbearer, default.oauthbearer), (self.group, default.group),
                           (self.transaction, default.transaction)):
            for spec in declared(type(part)).values():
                value = getattr(part, spec.attr)
                for name in (spec.name, *spec.aliases):  # node.id and log.dir too, as Kafka
                    out[name] = (_format(spec, value), value != getattr(base, spec.attr))
        for spec in declared(LogConfig).values():
            if spec.synonym is not None:
                value, base_value = getattr(self.log, spec.attr), getattr(default.log, spec.attr)
                out[spec.synonym] = (str(value), value != base_value)
        listeners = ",".join(f"{lst.name}://{lst.host}:{lst.port}" for lst in self.effective_listeners)
        out["listeners"] = (listeners, bool(self.listeners))
        return dict(sorted(out.items()))


def _parse(spec: OptionSpec, value: Any) -> Any:
    """``value`` (a string or a typed value) parsed by the option's kind; ConfigError
    naming the option, the value and what is allowed otherwise."""
    try:
        return spec.kind.parse(value)
    except Refused as e:
        raise ConfigError(f"{spec.name}={value!r} is not allowed: {e}") from None
    except (ValueError, TypeError):
        shown: Any = repr(value) if isinstance(value, str) else value
        if isinstance(value, str) and spec.kind.name == "int":
            try:
                shown = int(value.strip())  # an integer out of range shows as one
            except ValueError:
                shown = repr(value)
        raise ConfigError(f"{spec.name}={shown} is not allowed: must be {spec.kind.allowed}") from None


def _format(spec: OptionSpec, value: Any) -> str | None:
    """A field's value in its option's string form (None: unset)."""
    if value is None:
        return None
    if spec.kind is PRINCIPALS:
        return ";".join(value)
    if spec.kind is LISTENERS:
        return ",".join(f"{lst.name}://{lst.host}:{lst.port}" for lst in value)
    return format_value(value) if value != () else None


#: Every option a broker accepts, by name and alias: BrokerConfig's, the broker-wide
#: ``log.*`` defaults (each a LogConfig option's synonym, under that name), and those of
#: the parts BrokerConfig holds.
BROKER_OPTIONS: dict[str, OptionSpec] = {
    **names(BrokerConfig),
    **{spec.synonym: dataclasses.replace(spec, name=spec.synonym, synonym=None)
       for spec in declared(LogConfig).values() if spec.synonym},
    **declared(GroupConfig), **declared(TransactionConfig), **declared(LeaderBalanceConfig),
    **declared(OAuthBearerConfig)}

#: Options whose value DescribeConfigs never shows.
SENSITIVE_PROPERTIES = frozenset(name for name, spec in BROKER_OPTIONS.items() if spec.secret)
