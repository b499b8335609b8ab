"""Typed client configuration with Kafka's option names and defaults, validated once.

Each option is declared once, as a field of the class that takes it, with
:func:`broker_sim.common.options.option`: its Kafka name, its kind (:mod:`.option_kinds`:
the parser and the rule an error states), its default and a one-sentence doc.
``docs/options.md`` is generated from these declarations (every name, default and rule:
:class:`ClientConfig`'s connection and security options, then what :class:`ProducerConfig`,
:class:`FetcherConfig` and :class:`ConsumerConfig` add); ``from_options``, ``option_names``,
``to_options``, the ``kafka.*`` options of the Spark connector and the CLI's ``-X`` read
them too, so none of them keeps a list of its own. :class:`ClientConfig` parses every field
in ``__post_init__`` and then checks the rules between options (the security options in
:mod:`.security_config`), so an instance that exists is valid (and, being frozen, may be
shared between threads). Values may arrive typed (Python code) or as strings (Spark
options, properties files): parsing happens here and nowhere else. Names may be Kafka's
dotted names or Python keywords::

    >>> cfg = ProducerConfig.from_options({"bootstrap.servers": "h1:9092,h2", "acks": "all"},
    ...                                   linger_ms=10)
    >>> cfg.acks, cfg.linger_ms, cfg.bootstrap_servers
    (-1, 10, (('h1', 9092), ('h2', 9092)))
    >>> ProducerConfig(bootstrap_servers="h:1", batch_size=-5)
    Traceback (most recent call last):
    ...
    broker_sim.protocol.errors.ConfigError: Invalid value -5 for configuration batch.size: must be an integer in [0, 2147483647]

Cross-field rules: ``delivery.timeout.ms >= linger.ms + request.timeout.ms``;
``enable.idempotence=true`` requires ``acks=all``, ``retries > 0`` and
``max.in.flight.requests.per.connection <= 5``; for the fetcher
``request.timeout.ms > fetch.max.wait.ms`` (a long poll must not time out its request);
for the consumer, ``heartbeat.interval.ms < session.timeout.ms``, and each group protocol
refuses the other's options (as Kafka's Java consumer: ``group.protocol=consumer`` with
``session.timeout.ms``, ``heartbeat.interval.ms`` or ``partition.assignment.strategy`` set,
``classic`` with ``group.remote.assignor`` set).
``linger.ms`` defaults to 5, Apache Kafka's default since 4.0 (KIP-1030).
Security options must match ``security.protocol``: a SASL protocol needs a mechanism, a
user and a password; a TLS or SASL setting the protocol would not use is refused rather
than ignored; a PKCS12 or JKS store is opened at construction (:mod:`.security_config`).
Secret options (passwords, client secrets, ``sasl.jaas.config``) never appear in ``repr`` or :meth:`ClientConfig.to_options`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from broker_sim.common.options import (
    BOOL,
    INT32_MAX,
    INT64_MAX,
    OPTIONAL_STRING,
    STRING,
    OptionSpec,
    declared,
    integer,
    option,
    parse_declared,
)
from broker_sim.protocol.records.compression import CODEC_IDS

from . import option_kinds as k
from .errors import ConfigError
from .oauthbearer import OAuthBearerSettings
from .option_kinds import REMOTE_ASSIGNORS
from .security_config import check_security

C = TypeVar("C", bound="ClientConfig")


@dataclass(frozen=True)
class ClientConfig:
    """Options every client (producer, fetcher, consumer, admin) shares: where the cluster is,
    timeouts and backoffs, TLS and SASL. ``AdminConfig`` is this class.

    Cross-option rules (module docstring): ``reconnect.backoff.max.ms >= reconnect.backoff.ms``;
    security options must match ``security.protocol`` (:mod:`.security_config`)."""

    bootstrap_servers: tuple[tuple[str, int], ...] = option(
        "bootstrap.servers", (), k.SERVERS, default_doc="(required)",
        doc="Brokers to ask for the cluster's metadata first (port 9092 when left out).")
    client_id: str = option("client.id", "pyq", STRING,
                            doc="The name this client gives brokers (their logs, quotas, metrics).")
    request_timeout_ms: int = option("request.timeout.ms", 30_000, integer(),
                                     doc="How long to wait for a broker's answer to a request.")
    retry_backoff_ms: int = option("retry.backoff.ms", 100, integer(),
                                   doc="How long to wait before retrying a failed request.")
    reconnect_backoff_ms: int = option(
        "reconnect.backoff.ms", 50, integer(),
        doc="How long to wait before reconnecting to a broker the first time.")
    reconnect_backoff_max_ms: int = option(
        "reconnect.backoff.max.ms", 1000, integer(),
        doc="The longest wait between reconnections (the wait doubles up to it).")
    socket_connection_setup_timeout_ms: int = option(
        "socket.connection.setup.timeout.ms", 10_000, integer(),
        doc="How long a new connection may take to be established.")
    metadata_max_age_ms: int = option(
        "metadata.max.age.ms", 300_000, integer(),
        doc="Refresh the cluster's metadata at least this often.")
    max_in_flight_requests_per_connection: int = option(
        "max.in.flight.requests.per.connection", 5, integer(1),
        doc="How many requests may wait for an answer on one connection.")
    default_api_timeout_ms: int = option(
        "default.api.timeout.ms", 60_000, integer(),
        doc="How long a blocking call (admin, offsets, commits) may take in all.")
    security_protocol: str = option(
        "security.protocol", "PLAINTEXT", k.SECURITY_PROTOCOL,
        doc="How to talk to brokers: in the clear, over TLS, with SASL, or both.")
    ssl_ca_location: str | None = option(
        "ssl.ca.location", None, k.PATH,
        doc="A PEM file of the CAs that sign the brokers' certificates (librdkafka's name).")
    ssl_certificate_location: str | None = option(
        "ssl.certificate.location", None, k.PATH,
        doc="The client's PEM certificate, for brokers that require TLS client authentication.")
    ssl_key_location: str | None = option(
        "ssl.key.location", None, k.PATH, doc="The PEM private key of ssl.certificate.location.")
    ssl_key_password: str | None = option(
        "ssl.key.password", None, OPTIONAL_STRING, secret=True,
        doc="The password of the private key (PEM or in the key store).")
    ssl_endpoint_identification_algorithm: str = option(
        "ssl.endpoint.identification.algorithm", "https", k.ENDPOINT_ID,
        doc="https checks the broker's host name against its certificate; none skips the check.")
    ssl_truststore_location: str | None = option(
        "ssl.truststore.location", None, k.PATH,
        doc="Java's trust store of the brokers' CAs (instead of ssl.ca.location).")
    ssl_truststore_type: str = option("ssl.truststore.type", "PEM", k.STORE_TYPE,
                                      doc="The format of ssl.truststore.location.")
    ssl_truststore_password: str | None = option(
        "ssl.truststore.password", None, OPTIONAL_STRING, secret=True,
        doc="The password of a PKCS12 or JKS trust store.")
    ssl_keystore_location: str | None = option(
        "ssl.keystore.location", None, k.PATH,
        doc="Java's key store of the client's certificate and key (instead of "
            "ssl.certificate.location).")
    ssl_keystore_type: str = option("ssl.keystore.type", "PEM", k.STORE_TYPE,
                                    doc="The format of ssl.keystore.location.")
    ssl_keystore_password: str | None = option(
        "ssl.keystore.password", None, OPTIONAL_STRING, secret=True,
        doc="The password of a PKCS12 or JKS key store.")
    sasl_mechanism: str | None = option(
        "sasl.mechanism", None, k.SASL_MECHANISM,
        doc="The SASL mechanism a SASL security.protocol authenticates with.")
    sasl_username: str | None = option("sasl.username", None, OPTIONAL_STRING,
                                       doc="The user of PLAIN or SCRAM (librdkafka's name).")
    sasl_password: str | None = option("sasl.password", None, OPTIONAL_STRING, secret=True,
                                       doc="The password of PLAIN or SCRAM (librdkafka's name).")
    sasl_jaas_config: str | None = option(
        "sasl.jaas.config", None, OPTIONAL_STRING, secret=True,
        doc="Java's login module line (PlainLoginModule, ScramLoginModule or "
            "OAuthBearerLoginModule) with the user and password or the OAuth client.")
    sasl_oauthbearer_method: str | None = option(
        "sasl.oauthbearer.method", None, OPTIONAL_STRING,
        doc="Where OAUTHBEARER tokens come from: default (an unsecured token made here) or "
            "oidc (a token endpoint).")
    sasl_oauthbearer_token_endpoint_url: str | None = option(
        "sasl.oauthbearer.token.endpoint.url", None, OPTIONAL_STRING,
        doc="The OAuth token endpoint that oidc posts its client-credentials grant to.")
    sasl_oauthbearer_client_id: str | None = option(
        "sasl.oauthbearer.client.id", None, OPTIONAL_STRING,
        doc="The OAuth client id of the client-credentials grant.")
    sasl_oauthbearer_client_secret: str | None = option(
        "sasl.oauthbearer.client.secret", None, OPTIONAL_STRING, secret=True,
        doc="The OAuth client secret of the client-credentials grant.")
    sasl_oauthbearer_scope: str | None = option(
        "sasl.oauthbearer.scope", None, OPTIONAL_STRING,
        doc="The scope the client-credentials grant asks for.")
    sasl_oauthbearer_config: str | None = option(
        "sasl.oauthbearer.config", None, OPTIONAL_STRING,
        doc="librdkafka's settings of the unsecured token (principal=...).")
    sasl_login_callback_handler_class: str | None = option(
        "sasl.login.callback.handler.class", None, OPTIONAL_STRING,
        doc="Java's login callback handler; only Kafka's OIDC handler is understood.")
    # Kafka 4.1+ (KIP-1139) spellings of the client id and secret, and its retriever class
    sasl_oauthbearer_client_credentials_client_id: str | None = option(
        "sasl.oauthbearer.client.credentials.client.id", None, OPTIONAL_STRING,
        doc="Kafka 4.1's name of sasl.oauthbearer.client.id.")
    sasl_oauthbearer_client_credentials_client_secret: str | None = option(
        "sasl.oauthbearer.client.credentials.client.secret", None, OPTIONAL_STRING, secret=True,
        doc="Kafka 4.1's name of sasl.oauthbearer.client.secret.")
    sasl_oauthbearer_jwt_retriever_class: str | None = option(
        "sasl.oauthbearer.jwt.retriever.class", None, OPTIONAL_STRING,
        doc="Kafka 4.1's token retriever class; only its client-credentials retriever is "
            "understood.")
    #: Derived: where OAUTHBEARER tokens come from (None unless sasl.mechanism=OAUTHBEARER).
    oauthbearer: OAuthBearerSettings | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.bootstrap_servers:
            raise ConfigError("Missing required configuration bootstrap.servers: "
                              "must be a non-empty comma-separated list of host:port")
        parse_declared(self, _invalid)
        self._check_cross_fields()

    def _check_cross_fields(self) -> None:
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError(
                f"Invalid value {self.reconnect_backoff_max_ms} for configuration "
                f"reconnect.backoff.max.ms: must be at least reconnect.backoff.ms "
                f"({self.reconnect_backoff_ms})")
        check_security(self)

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    # ---- construction from options ----------------------------------------------------
    @classmethod
    def option_names(cls) -> dict[str, str]:
        """Kafka dotted name -> Python attribute, for every option of this class."""
        return {spec.name: spec.attr for spec in declared(cls).values()}

    @classmethod
    def from_options(cls: type[C], options: Mapping[str, Any] | None = None, *,
                     ignore_unknown: bool = False, **kwargs: Any) -> C:
        """Build from dotted names (``"linger.ms"``) or keywords (``linger_ms``).

        Values may be strings. Unknown names raise ConfigError naming the option and the
        closest known names, unless ``ignore_unknown`` (options meant for another client).
        """
        names = cls.option_names()
        attrs = set(names.values())
        values: dict[str, Any] = {}
        for key, value in {**(options or {}), **kwargs}.items():
            attr = names.get(key) or key.replace(".", "_").replace("-", "_")
            if attr not in attrs:
                if ignore_unknown:
                    continue
                close = difflib.get_close_matches(key, list(names), n=3)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ConfigError(f"Unknown configuration {key!r} for {cls.__name__}{hint}")
            values[attr] = value
        return cls(**values)

    @classmethod
    def coerce(cls: type[C], config: C | Mapping[str, Any] | None = None, **kwargs: Any) -> C:
        """An instance as is, or one built from a mapping and/or keywords."""
        if isinstance(config, ClientConfig):
            if not isinstance(config, cls):
                raise TypeError(f"a {cls.__name__} is needed, not a {type(config).__name__}")
            return dataclasses.replace(config, **kwargs) if kwargs else config
        return cls.from_options(config, **kwargs)

    def to_options(self) -> dict[str, Any]:
        """Dotted name -> value (for logging the effective configuration); secrets masked."""
        return {name: "[hidden]" if spec.secret and getattr(self, spec.attr) is not None
                else getattr(self, spec.attr) for name, spec in declared(type(self)).items()}


def _invalid(spec: OptionSpec, value: Any, rule: str) -> ConfigError:
    return ConfigError(f"Invalid value {value!r} for configuration {spec.name}: must be {rule}")


def _too_small(name: str, value: int, rule: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {name}: must be {rule}")


@dataclass(frozen=True)
class ProducerConfig(ClientConfig):
    """A producer's options (:class:`~connector.client.producer.Producer`); ``acks`` is
    stored as -1, 0 or 1.

    Cross-option rules: see the module docstring."""

    acks: int = option("acks", -1, k.ACKS, default_doc="all",
                       doc="How many replicas must have a batch before it counts as written.")
    batch_size: int = option("batch.size", 16_384, integer(),
                             doc="The most bytes of records one partition's batch holds.")
    linger_ms: int = option("linger.ms", 5, integer(),
                            doc="How long a batch that is not full waits for more records.")
    buffer_memory: int = option("buffer.memory", 32 * 1024 * 1024, integer(0, INT64_MAX),
                                doc="The bytes of records waiting to be sent; send() blocks "
                                    "when they are used up.")
    max_block_ms: int = option("max.block.ms", 60_000, integer(0, INT64_MAX),
                               doc="How long send() may block for metadata or buffer space.")
    max_request_size: int = option("max.request.size", 1024 * 1024, integer(1),
                                   doc="The largest record (and produce request) sent.")
    delivery_timeout_ms: int = option(
        "delivery.timeout.ms", 120_000, integer(),
        doc="How long a record may take from send() to its acknowledgement, retries included.")
    retries: int = option("retries", INT32_MAX, integer(),
                          doc="How often a failed batch is sent again (within "
                              "delivery.timeout.ms).")
    enable_idempotence: bool | None = option(
        "enable.idempotence", None, k.OPTIONAL_BOOL,
        default_doc="(on unless acks, retries or max.in.flight conflict)",
        doc="Write each record once, in order, despite retries (producer id and sequences).")
    compression_type: str = option("compression.type", "none", k.COMPRESSION,
                                   doc="How batches are compressed.")
    #: set: a transactional producer (see :mod:`connector.client.transaction_manager`).
    transactional_id: str | None = option(
        "transactional.id", None, OPTIONAL_STRING,
        doc="Makes a transactional producer; a new one with the same id fences the old.")
    transaction_timeout_ms: int = option(
        "transaction.timeout.ms", 60_000, integer(1),
        doc="How long the coordinator lets a transaction stay open before aborting it.")

    def _check_cross_fields(self) -> None:
        super()._check_cross_fields()
        floor = self.linger_ms + self.request_timeout_ms
        if self.delivery_timeout_ms < floor:
            raise _too_small("delivery.timeout.ms", self.delivery_timeout_ms,
                             f"at least linger.ms + request.timeout.ms = "
                             f"{self.linger_ms} + {self.request_timeout_ms} = {floor}")
        conflicts = []
        if self.acks != -1:
            conflicts.append(f"acks={self.acks} (must be all)")
        if self.retries == 0:
            conflicts.append("retries=0 (must be > 0)")
        if self.max_in_flight_requests_per_connection > 5:
            conflicts.append(f"max.in.flight.requests.per.connection="
                             f"{self.max_in_flight_requests_per_connection} (must be <= 5)")
        if self.transactional_id is not None and self.enable_idempotence is False:
            raise ConfigError("Invalid value False for configuration enable.idempotence: a "
                              f"transactional producer (transactional.id={self.transactional_id}) "
                              "is idempotent")
        if self.transactional_id is not None and conflicts:
            raise ConfigError(f"Invalid configuration for transactional.id="
                              f"{self.transactional_id}: transactions need acks=all, retries > 0 "
                              "and max.in.flight.requests.per.connection <= 5; got "
                              + ", ".join(conflicts))
        if self.enable_idempotence is None:  # Kafka: on by default unless it conflicts
            object.__setattr__(self, "enable_idempotence", not conflicts)
        elif self.enable_idempotence and conflicts:
            raise ConfigError("Invalid value True for configuration enable.idempotence: "
                              "idempotence requires acks=all, retries > 0 and "
                              "max.in.flight.requests.per.connection <= 5; got "
                              + ", ".join(conflicts))

    @property
    def compression_codec(self) -> int:
        return CODEC_IDS[self.compression_type]

    @property
    def guarantees_order(self) -> bool:
        """One batch per partition in flight at a time (partitions are muted meanwhile)."""
        return self.max_in_flight_requests_per_connection == 1


@dataclass(frozen=True)
class FetcherConfig(ClientConfig):
    """A fetcher's options (:class:`~connector.client.fetcher.Fetcher`, and every consumer):
    how fetches wait and how much they bring back.

    Cross-option rules: see the module docstring."""

    fetch_max_wait_ms: int = option(
        "fetch.max.wait.ms", 500, integer(),
        doc="How long a broker may hold a fetch while it has less than fetch.min.bytes.")
    fetch_min_bytes: int = option("fetch.min.bytes", 1, integer(),
                                  doc="The bytes a fetch waits for before it is answered.")
    fetch_max_bytes: int = option("fetch.max.bytes", 50 * 1024 * 1024, integer(1),
                                  doc="The most bytes one fetch answer holds.")
    max_partition_fetch_bytes: int = option(
        "max.partition.fetch.bytes", 1024 * 1024, integer(1),
        doc="The most bytes one fetch answer holds for one partition.")
    check_crcs: bool = option("check.crcs", True, BOOL,
                              doc="Check each fetched batch's CRC32C.")
    #: read_committed: only records of committed transactions (and non-transactional ones),
    #: up to the last stable offset; aborted data and markers are dropped per batch.
    isolation_level: str = option(
        "isolation.level", "read_uncommitted", k.ISOLATION_LEVEL,
        doc="read_committed reads up to the last stable offset and drops aborted "
            "transactions' records.")

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"

    def _check_cross_fields(self) -> None:
        super()._check_cross_fields()
        if self.request_timeout_ms <= self.fetch_max_wait_ms:
            raise _too_small("request.timeout.ms", self.request_timeout_ms,
                             f"greater than fetch.max.wait.ms ({self.fetch_max_wait_ms})")
        if self.fetch_min_bytes > self.fetch_max_bytes:
            raise ConfigError(f"Invalid value {self.fetch_min_bytes} for configuration "
                              f"fetch.min.bytes: must be at most fetch.max.bytes "
                              f"({self.fetch_max_bytes})")


AdminConfig = ClientConfig


#: The classic protocol's session.timeout.ms and heartbeat.interval.ms when not set (Kafka's).
CLASSIC_SESSION_TIMEOUT_MS = 45_000
CLASSIC_HEARTBEAT_INTERVAL_MS = 3000


@dataclass(frozen=True)
class ConsumerConfig(FetcherConfig):
    """A consumer group member's options (see :mod:`connector.client.consumer`), with
    Kafka's names and defaults.

    ``group.protocol`` picks the rebalance protocol: ``classic`` (JoinGroup/SyncGroup, the
    default) or ``consumer`` (KIP-848's ConsumerGroupHeartbeat, with the assignor
    ``group.remote.assignor`` on the coordinator). With ``consumer`` the coordinator sets the
    session timeout and the heartbeat interval and runs the assignor, so, as Kafka's Java
    consumer does, setting ``session.timeout.ms``, ``heartbeat.interval.ms`` or
    ``partition.assignment.strategy`` is refused; with ``classic``, ``group.remote.assignor``
    is. Those three hold None when not set; :attr:`session_timeout`,
    :attr:`heartbeat_interval` and :attr:`assignment_strategy` are the classic values in
    use (Kafka's defaults: 45000, 3000, range).
    """

    group_id: str = option("group.id", "", STRING, default_doc="(required)",
                           doc="The consumer group this consumer joins.")
    group_instance_id: str | None = option(
        "group.instance.id", None, OPTIONAL_STRING,
        doc="A static member's id: a restart within the session keeps its partitions.")
    group_protocol: str = option(
        "group.protocol", "classic", k.GROUP_PROTOCOL,
        doc="classic (JoinGroup/SyncGroup) or consumer (KIP-848's heartbeats, assigned by "
            "the coordinator).")
    group_remote_assignor: str | None = option(
        "group.remote.assignor", None, k.REMOTE_ASSIGNOR, default_doc="(the coordinator's first)",
        doc="The coordinator's assignor under group.protocol=consumer.")
    session_timeout_ms: int | None = option(
        "session.timeout.ms", None, integer(1, optional=True), default_doc="45000",
        doc="A classic member that sends no heartbeat for this long leaves the group.")
    heartbeat_interval_ms: int | None = option(
        "heartbeat.interval.ms", None, integer(1, optional=True), default_doc="3000",
        doc="How often a classic member sends a heartbeat.")
    max_poll_interval_ms: int = option(
        "max.poll.interval.ms", 300_000, integer(1),
        doc="A member that does not poll for this long leaves the group.")
    auto_offset_reset: str = option(
        "auto.offset.reset", "latest", k.OFFSET_RESET,
        doc="Where a partition with no committed offset (or one out of range) starts.")
    enable_auto_commit: bool = option("enable.auto.commit", True, BOOL,
                                      doc="Commit the polled offsets in the background.")
    auto_commit_interval_ms: int = option("auto.commit.interval.ms", 5000, integer(),
                                          doc="How often enable.auto.commit commits.")
    partition_assignment_strategy: str | None = option(
        "partition.assignment.strategy", None, k.ASSIGNOR, default_doc="range",
        doc="The classic protocol's assignor, run by the group's leader.")

    @property
    def session_timeout(self) -> int:
        """``session.timeout.ms`` of a classic member (Kafka's default when not set)."""
        return (CLASSIC_SESSION_TIMEOUT_MS if self.session_timeout_ms is None
                else self.session_timeout_ms)

    @property
    def heartbeat_interval(self) -> int:
        """``heartbeat.interval.ms`` of a classic member (Kafka's default when not set)."""
        return (CLASSIC_HEARTBEAT_INTERVAL_MS if self.heartbeat_interval_ms is None
                else self.heartbeat_interval_ms)

    @property
    def assignment_strategy(self) -> str:
        """The classic protocol's client-side assignor (range when not set)."""
        return self.partition_assignment_strategy or "range"

    @property
    def uses_consumer_protocol(self) -> bool:
        return self.group_protocol == "consumer"

    def _check_cross_fields(self) -> None:
        super()._check_cross_fields()
        if not self.group_id:
            raise ConfigError("Missing required configuration group.id: a consumer that "
                              "subscribes belongs to a group")
        if self.uses_consumer_protocol:
            refused = [f"{name}={value}" for name, value in [
                ("partition.assignment.strategy", self.partition_assignment_strategy),
                ("heartbeat.interval.ms", self.heartbeat_interval_ms),
                ("session.timeout.ms", self.session_timeout_ms)] if value is not None]
            if refused:
                raise ConfigError(
                    f"Invalid configuration for group.protocol=consumer: {', '.join(refused)} "
                    "may not be set; under the consumer protocol the group coordinator sets the "
                    "session timeout and heartbeat interval and assigns partitions (choose its "
                    "assignor with group.remote.assignor: " + ", ".join(REMOTE_ASSIGNORS) + ")")
            return
        if self.group_remote_assignor is not None:
            raise ConfigError(
                f"Invalid value {self.group_remote_assignor} for configuration "
                "group.remote.assignor: it applies only with group.protocol=consumer "
                "(group.protocol=classic assigns with partition.assignment.strategy)")
        if self.heartbeat_interval >= self.session_timeout:
            raise ConfigError(f"Invalid value {self.heartbeat_interval} for configuration "
                              f"heartbeat.interval.ms: must be lower than session.timeout.ms "
                              f"({self.session_timeout})")
