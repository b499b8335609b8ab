"""Typed client configuration with Kafka's option names and defaults, validated once.

Each option is declared once, as a dataclass field whose metadata holds its Kafka name,
kind and allowed range; :class:`ClientConfig` parses and checks every field in
``__post_init__``, so an instance that exists is valid (and, being frozen, may be shared
between threads). Values may arrive typed (Python code) or as strings (Spark options,
properties files): parsing happens here and nowhere else. Names may be Kafka's dotted
names or Python keywords::

    >>> cfg = ProducerConfig.from_options({"bootstrap.servers": "h1:9092,h2", "acks": "all"},
    ...                                   linger_ms=10)
    >>> cfg.acks, cfg.linger_ms, cfg.bootstrap_servers
    (-1, 10, (('h1', 9092), ('h2', 9092)))
    >>> ProducerConfig(bootstrap_servers="h:1", batch_size=-5)
    Traceback (most recent call last):
    ...
    broker_sim.protocol.errors.ConfigError: Invalid value -5 for configuration batch.size: must be an integer in [0, 2147483647]

Options (producer and fetcher options add to the common ones)::

    common    bootstrap.servers (required), client.id "pyq", request.timeout.ms 30000,
              retry.backoff.ms 100, reconnect.backoff.ms 50, reconnect.backoff.max.ms 1000,
              socket.connection.setup.timeout.ms 10000, metadata.max.age.ms 300000,
              max.in.flight.requests.per.connection 5, default.api.timeout.ms 60000
    security  security.protocol PLAINTEXT (SSL, SASL_PLAINTEXT, SASL_SSL); librdkafka's
              ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password,
              ssl.endpoint.identification.algorithm https ("none" or "" skips the host name
              check); Java's ssl.truststore.location / ssl.keystore.location with
              ssl.truststore.type / ssl.keystore.type PEM, PKCS12 or JKS and
              ssl.truststore.password / ssl.keystore.password (a PKCS12 or JKS store is
              opened at construction: a wrong password or type fails there; see
              :mod:`broker_sim.security.stores`); sasl.mechanism (PLAIN,
              SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER), sasl.username, sasl.password, or Java's
              sasl.jaas.config with PlainLoginModule / ScramLoginModule / OAuthBearerLoginModule;
              OAUTHBEARER: sasl.oauthbearer.method (default, oidc),
              sasl.oauthbearer.token.endpoint.url, .client.id, .client.secret, .scope,
              sasl.oauthbearer.config principal=... (unsecured), sasl.login.callback.handler.class
              (Kafka 4.1+: sasl.oauthbearer.client.credentials.client.id/.client.secret,
              sasl.oauthbearer.jwt.retriever.class; see :mod:`.oauthbearer`)
    producer  acks all (0, 1, all/-1), batch.size 16384, linger.ms 5, buffer.memory 32 MiB,
              max.block.ms 60000, max.request.size 1 MiB, delivery.timeout.ms 120000,
              retries 2147483647, enable.idempotence (default: on unless acks, retries or
              max.in.flight conflict), compression.type none (gzip, snappy, lz4, zstd)
    fetcher   fetch.max.wait.ms 500, fetch.min.bytes 1, fetch.max.bytes 50 MiB,
              max.partition.fetch.bytes 1 MiB, check.crcs true
    consumer  group.id (required), group.instance.id, group.protocol classic (consumer:
              KIP-848), group.remote.assignor (consumer only: uniform, range; unset: the
              coordinator's first), session.timeout.ms 45000 and heartbeat.interval.ms 3000
              and partition.assignment.strategy range (classic only), max.poll.interval.ms
              300000, auto.offset.reset latest, enable.auto.commit true,
              auto.commit.interval.ms 5000

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
than ignored. Passwords never appear in ``repr`` or :meth:`ClientConfig.to_options`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from broker_sim.protocol.records.compression import CODEC_IDS
from broker_sim.security.stores import StoreError, key_entry, trusted_pem

from .errors import ConfigError
from .oauthbearer import OAuthBearerSettings, one_spelling, settings
from .option_kinds import (
    INT32_MAX,
    INT64_MAX,
    PARSERS,
    REMOTE_ASSIGNORS,
    SASL_MECHANISMS,
    allowed,
    option,
    parse_jaas_config,
)

C = TypeVar("C", bound="ClientConfig")


@dataclass(frozen=True)
class ClientConfig:
    """Options every client (producer, fetcher, admin) shares. See the module docstring."""

    bootstrap_servers: tuple[tuple[str, int], ...] = option("bootstrap.servers", (), "servers")
    client_id: str = option("client.id", "pyq", "str")
    request_timeout_ms: int = option("request.timeout.ms", 30_000)
    retry_backoff_ms: int = option("retry.backoff.ms", 100)
    reconnect_backoff_ms: int = option("reconnect.backoff.ms", 50)
    reconnect_backoff_max_ms: int = option("reconnect.backoff.max.ms", 1000)
    socket_connection_setup_timeout_ms: int = option("socket.connection.setup.timeout.ms", 10_000)
    metadata_max_age_ms: int = option("metadata.max.age.ms", 300_000)
    max_in_flight_requests_per_connection: int = option(
        "max.in.flight.requests.per.connection", 5, low=1)
    default_api_timeout_ms: int = option("default.api.timeout.ms", 60_000)
    security_protocol: str = option("security.protocol", "PLAINTEXT", "security_protocol")
    ssl_ca_location: str | None = option("ssl.ca.location", None, "path")
    ssl_certificate_location: str | None = option("ssl.certificate.location", None, "path")
    ssl_key_location: str | None = option("ssl.key.location", None, "path")
    ssl_key_password: str | None = option("ssl.key.password", None, "optional_str", secret=True)
    ssl_endpoint_identification_algorithm: str = option(
        "ssl.endpoint.identification.algorithm", "https", "endpoint_id")
    ssl_truststore_location: str | None = option("ssl.truststore.location", None, "path")
    ssl_truststore_type: str = option("ssl.truststore.type", "PEM", "store_type")
    ssl_truststore_password: str | None = option(
        "ssl.truststore.password", None, "optional_str", secret=True)
    ssl_keystore_location: str | None = option("ssl.keystore.location", None, "path")
    ssl_keystore_type: str = option("ssl.keystore.type", "PEM", "store_type")
    ssl_keystore_password: str | None = option(
        "ssl.keystore.password", None, "optional_str", secret=True)
    sasl_mechanism: str | None = option("sasl.mechanism", None, "sasl_mechanism")
    sasl_username: str | None = option("sasl.username", None, "optional_str")
    sasl_password: str | None = option("sasl.password", None, "optional_str", secret=True)
    sasl_jaas_config: str | None = option("sasl.jaas.config", None, "optional_str", secret=True)
    sasl_oauthbearer_method: str | None = option("sasl.oauthbearer.method", None, "optional_str")
    sasl_oauthbearer_token_endpoint_url: str | None = option(
        "sasl.oauthbearer.token.endpoint.url", None, "optional_str")
    sasl_oauthbearer_client_id: str | None = option("sasl.oauthbearer.client.id", None, "optional_str")
    sasl_oauthbearer_client_secret: str | None = option(
        "sasl.oauthbearer.client.secret", None, "optional_str", secret=True)
    sasl_oauthbearer_scope: str | None = option("sasl.oauthbearer.scope", None, "optional_str")
    sasl_oauthbearer_config: str | None = option("sasl.oauthbearer.config", None, "optional_str")
    sasl_login_callback_handler_class: str | None = option(
        "sasl.login.callback.handler.class", None, "optional_str")
    # Kafka 4.1+ (KIP-1139) spellings of the client id and secret, and its retriever class
    sasl_oauthbearer_client_credentials_client_id: str | None = option(
        "sasl.oauthbearer.client.credentials.client.id", None, "optional_str")
    sasl_oauthbearer_client_credentials_client_secret: str | None = option(
        "sasl.oauthbearer.client.credentials.client.secret", None, "optional_str", secret=True)
    sasl_oauthbearer_jwt_retriever_class: str | None = option(
        "sasl.oauthbearer.jwt.retriever.class", None, "optional_str")
    #: Derived: where OAUTHBEARER tokens come from (None unless sasl.mechanism=OAUTHBEARER).
    oauthbearer: OAuthBearerSettings | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False)

    #: Kafka dotted name -> attribute, filled per subclass on first use.
    _names: ClassVar[dict[type, dict[str, str]]] = {}

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            meta = f.metadata
            if not meta:
                continue
            raw = getattr(self, f.name)
            if f.name == "bootstrap_servers" and not raw:
                raise ConfigError("Missing required configuration bootstrap.servers: "
                                  "must be a non-empty comma-separated list of host:port")
            try:
                value = PARSERS[meta["kind"]](raw)
                if meta["kind"] in ("int", "long", "optional_int") and value is not None \
                        and not meta["low"] <= value <= meta["high"]:
                    raise ValueError
            except (ValueError, TypeError):
                raise ConfigError(f"Invalid value {raw!r} for configuration {meta['name']}: "
                                  f"must be {allowed(meta)}") from None
            object.__setattr__(self, f.name, value)
        self._check_cross_fields()

    def _check_cross_fields(self) -> None:
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError(
                f"Invalid value {self.reconnect_backoff_max_ms} for configuration "
                f"reconnect.backoff.max.ms: must be at least reconnect.backoff.ms "
                f"({self.reconnect_backoff_ms})")
        self._check_security()

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def _check_stores(self) -> None:
        """A PKCS12 or JKS store is opened here, so a wrong password, type or file fails at
        construction; PEM files are read by ``ssl`` when the first connection is made."""
        for prefix, location, kind, other in (
                ("ssl.truststore", self.ssl_truststore_location, self.ssl_truststore_type,
                 "ssl.ca.location"),
                ("ssl.keystore", self.ssl_keystore_location, self.ssl_keystore_type,
                 "ssl.certificate.location")):
            password = getattr(self, prefix.replace(".", "_") + "_password")
            if kind == "PEM":
                if password is not None:
                    raise ConfigError(f"Invalid value PEM for configuration {prefix}.type: "
                                      f"{prefix}.password is set but PEM files have no store "
                                      "password (a PEM key's password is ssl.key.password)")
                continue
            if location is None:
                raise ConfigError(f"Invalid value {kind} for configuration {prefix}.type: a "
                                  f"{kind} store needs {prefix}.location (or leave {prefix}.type "
                                  f"PEM and give {other})")
            try:
                if prefix == "ssl.truststore":
                    trusted_pem(location, kind, self.ssl_truststore_password)
                else:
                    key_entry(location, kind, self.ssl_keystore_password, self.ssl_key_password)
            except StoreError as e:
                raise ConfigError(str(e)) from None

    def _check_security(self) -> None:
        protocol = self.security_protocol
        unused = []
        if not self.uses_tls:
            unused += [n for n, v in [("ssl.ca.location", self.ssl_ca_location),
                                      ("ssl.certificate.location", self.ssl_certificate_location),
                                      ("ssl.key.location", self.ssl_key_location),
                                      ("ssl.key.password", self.ssl_key_password),
                                      ("ssl.truststore.location", self.ssl_truststore_location),
                                      ("ssl.truststore.password", self.ssl_truststore_password),
                                      ("ssl.keystore.location", self.ssl_keystore_location),
                                      ("ssl.keystore.password", self.ssl_keystore_password)]
                       if v is not None]
        if not self.uses_sasl:
            unused += [n for n, v in [("sasl.mechanism", self.sasl_mechanism),
                                      ("sasl.username", self.sasl_username),
                                      ("sasl.password", self.sasl_password),
                                      ("sasl.jaas.config", self.sasl_jaas_config),
                                      *self._oauthbearer_options()] if v is not None]
        if unused:
            raise ConfigError(f"Invalid value {protocol} for configuration security.protocol: "
                              f"{', '.join(unused)} is set but {protocol} does not use it")
        if self.ssl_ca_location and self.ssl_truststore_location:
            raise ConfigError("Invalid value for configuration ssl.truststore.location: "
                              "ssl.ca.location is set too; give the CA bundle once")
        if self.ssl_certificate_location and self.ssl_keystore_location:
            raise ConfigError("Invalid value for configuration ssl.keystore.location: "
                              "ssl.certificate.location is set too; give the client certificate once")
        if self.uses_tls:
            self._check_stores()
        if not self.uses_sasl:
            return
        if self.sasl_mechanism is None:
            raise ConfigError(f"Missing configuration sasl.mechanism: security.protocol={protocol} "
                              "needs one of " + ", ".join(SASL_MECHANISMS))
        if self.sasl_mechanism == "OAUTHBEARER":
            self._check_oauthbearer()
            return
        oauth = [n for n, v in self._oauthbearer_options() if v is not None]
        if oauth:
            raise ConfigError(f"Invalid value {self.sasl_mechanism} for configuration sasl.mechanism: "
                              f"{', '.join(oauth)} is set but only OAUTHBEARER uses it")
        username, password = self.sasl_username, self.sasl_password
        if self.sasl_jaas_config is not None:
            try:
                module, jaas = parse_jaas_config(self.sasl_jaas_config)
            except ValueError:
                raise ConfigError("Invalid value for configuration sasl.jaas.config: must be "
                                  "'<LoginModule> required username=\"...\" password=\"...\";'") from None
            expected = "PlainLoginModule" if self.sasl_mechanism == "PLAIN" else "ScramLoginModule"
            if module.rsplit(".", 1)[-1] != expected:
                raise ConfigError(f"Invalid value {module} for configuration sasl.jaas.config: "
                                  f"sasl.mechanism={self.sasl_mechanism} needs a {expected}")
            for name, given, from_jaas in [("sasl.username", username, jaas.get("username")),
                                           ("sasl.password", password, jaas.get("password"))]:
                if given is not None and from_jaas is not None and given != from_jaas:
                    raise ConfigError(f"Invalid value for configuration {name}: it differs from "
                                      "the one in sasl.jaas.config")
            username = username if username is not None else jaas.get("username")
            password = password if password is not None else jaas.get("password")
        if not username or password is None:
            raise ConfigError(f"Missing configuration sasl.username/sasl.password: "
                              f"sasl.mechanism={self.sasl_mechanism} needs a user and a password "
                              "(or sasl.jaas.config with username= and password=)")
        object.__setattr__(self, "sasl_username", username)
        object.__setattr__(self, "sasl_password", password)

    def _oauthbearer_options(self) -> list[tuple[str, str | None]]:
        return [("sasl.oauthbearer.method", self.sasl_oauthbearer_method),
                ("sasl.oauthbearer.token.endpoint.url", self.sasl_oauthbearer_token_endpoint_url),
                ("sasl.oauthbearer.client.id", self.sasl_oauthbearer_client_id),
                ("sasl.oauthbearer.client.secret", self.sasl_oauthbearer_client_secret),
                ("sasl.oauthbearer.scope", self.sasl_oauthbearer_scope),
                ("sasl.oauthbearer.config", self.sasl_oauthbearer_config),
                ("sasl.login.callback.handler.class", self.sasl_login_callback_handler_class),
                ("sasl.oauthbearer.client.credentials.client.id",
                 self.sasl_oauthbearer_client_credentials_client_id),
                ("sasl.oauthbearer.client.credentials.client.secret",
                 self.sasl_oauthbearer_client_credentials_client_secret),
                ("sasl.oauthbearer.jwt.retriever.class", self.sasl_oauthbearer_jwt_retriever_class)]

    def _check_oauthbearer(self) -> None:
        """OAUTHBEARER's options reconciled into :attr:`oauthbearer` (see :mod:`.oauthbearer`)."""
        for name, value in (("sasl.username", self.sasl_username), ("sasl.password", self.sasl_password)):
            if value is not None:
                raise ConfigError(f"Invalid value for configuration {name}: sasl.mechanism=OAUTHBEARER "
                                  "takes no user or password (it sends a token)")
        module: str | None = None
        jaas: dict[str, str] = {}
        if self.sasl_jaas_config is not None:
            try:
                module, jaas = parse_jaas_config(self.sasl_jaas_config)
            except ValueError:
                raise ConfigError("Invalid value for configuration sasl.jaas.config: must be "
                                  "'<LoginModule> required clientId=\"...\" clientSecret=\"...\";'") from None
        client_id, client_secret = (
            one_spelling(("sasl.oauthbearer.client.id", self.sasl_oauthbearer_client_id),
                         ("sasl.oauthbearer.client.credentials.client.id",
                          self.sasl_oauthbearer_client_credentials_client_id)),
            one_spelling(("sasl.oauthbearer.client.secret", self.sasl_oauthbearer_client_secret),
                         ("sasl.oauthbearer.client.credentials.client.secret",
                          self.sasl_oauthbearer_client_credentials_client_secret)))
        resolved = settings(self.sasl_oauthbearer_method, self.sasl_oauthbearer_token_endpoint_url,
                            client_id, client_secret, self.sasl_oauthbearer_scope,
                            self.sasl_oauthbearer_config, module, jaas,
                            self.sasl_login_callback_handler_class,
                            self.sasl_oauthbearer_jwt_retriever_class)
        object.__setattr__(self, "oauthbearer", resolved)

    # ---- construction from options ----------------------------------------------------
    @classmethod
    def option_names(cls) -> dict[str, str]:
        """Kafka dotted name -> Python attribute, for every option of this class."""
        names = cls._names.get(cls)
        if names is None:
            names = {f.metadata["name"]: f.name for f in dataclasses.fields(cls) if f.metadata}
            cls._names[cls] = names
        return names

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
        secret = {f.name for f in dataclasses.fields(self) if f.metadata.get("secret")}
        return {name: "[hidden]" if attr in secret and getattr(self, attr) is not None
                else getattr(self, attr) for name, attr in self.option_names().items()}


def _too_small(name: str, value: int, rule: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {name}: must be {rule}")


@dataclass(frozen=True)
class ProducerConfig(ClientConfig):
    """Producer options (module docstring); ``acks`` is stored as -1, 0 or 1."""

    acks: int = option("acks", -1, "acks")
    batch_size: int = option("batch.size", 16_384)
    linger_ms: int = option("linger.ms", 5)
    buffer_memory: int = option("buffer.memory", 32 * 1024 * 1024, "long", high=INT64_MAX)
    max_block_ms: int = option("max.block.ms", 60_000, "long", high=INT64_MAX)
    max_request_size: int = option("max.request.size", 1024 * 1024, low=1)
    delivery_timeout_ms: int = option("delivery.timeout.ms", 120_000)
    retries: int = option("retries", INT32_MAX)
    enable_idempotence: bool | None = option("enable.idempotence", None, "optional_bool")
    compression_type: str = option("compression.type", "none", "compression")
    #: set: a transactional producer (see :mod:`connector.client.transaction_manager`).
    transactional_id: str | None = option("transactional.id", None, "optional_str")
    transaction_timeout_ms: int = option("transaction.timeout.ms", 60_000, low=1)

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
    """Consumer-side fetch options (module docstring)."""

    fetch_max_wait_ms: int = option("fetch.max.wait.ms", 500)
    fetch_min_bytes: int = option("fetch.min.bytes", 1)
    fetch_max_bytes: int = option("fetch.max.bytes", 50 * 1024 * 1024, low=1)
    max_partition_fetch_bytes: int = option("max.partition.fetch.bytes", 1024 * 1024, low=1)
    check_crcs: bool = option("check.crcs", True, "bool")
    #: read_committed: only records of committed transactions (and non-transactional ones),
    #: up to the last stable offset; aborted data and markers are dropped per batch.
    isolation_level: str = option("isolation.level", "read_uncommitted", "isolation_level")

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

    group_id: str = option("group.id", "", "str")
    group_instance_id: str | None = option("group.instance.id", None, "optional_str")
    group_protocol: str = option("group.protocol", "classic", "group_protocol")
    group_remote_assignor: str | None = option("group.remote.assignor", None, "remote_assignor")
    session_timeout_ms: int | None = option("session.timeout.ms", None, "optional_int", low=1)
    heartbeat_interval_ms: int | None = option("heartbeat.interval.ms", None, "optional_int", low=1)
    max_poll_interval_ms: int = option("max.poll.interval.ms", 300_000, low=1)
    auto_offset_reset: str = option("auto.offset.reset", "latest", "offset_reset")
    enable_auto_commit: bool = option("enable.auto.commit", True, "bool")
    auto_commit_interval_ms: int = option("auto.commit.interval.ms", 5000)
    partition_assignment_strategy: str | None = option(
        "partition.assignment.strategy", None, "assignor")

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
