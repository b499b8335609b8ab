"""The client's security options checked against each other and ``security.protocol``.

Security options must match the protocol: a SASL protocol needs a mechanism and a user and
password (``sasl.username``/``sasl.password`` or Java's ``sasl.jaas.config``), OAUTHBEARER
its token settings (:mod:`.oauthbearer`); a TLS or SASL setting the protocol would not use is
refused rather than ignored, and a PKCS12 or JKS store is opened at construction so a wrong
password fails there. Which options belong to TLS, SASL and OAUTHBEARER is read from
:class:`~.config.ClientConfig`'s declarations (the ``ssl.*`` and ``sasl.*`` options with
no default), so a new one is refused under the wrong protocol without being listed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker_sim.common.options import declared
from broker_sim.security.stores import StoreError, key_entry, trusted_pem

from .errors import ConfigError
from .oauthbearer import one_spelling, settings
from .option_kinds import SASL_MECHANISMS, parse_jaas_config

if TYPE_CHECKING:
    from .config import ClientConfig

_OAUTHBEARER = ("sasl.oauthbearer.", "sasl.login.")
_TLS_ONLY = ("ssl.",)
_SASL_ONLY = ("sasl.",)


def _set(cfg: ClientConfig, prefixes: tuple[str, ...]) -> list[tuple[str, Any]]:
    """(name, value) of the options named with one of ``prefixes`` that have no default,
    in declaration order."""
    return [(name, getattr(cfg, spec.attr)) for name, spec in declared(type(cfg)).items()
            if name.startswith(prefixes) and spec.default is None]


def _check_stores(cfg: ClientConfig) -> None:
    """A PKCS12 or JKS store is opened here, so a wrong password, type or file fails at
    construction; PEM files are read by ``ssl`` when the first connection is made."""
    for prefix, location, kind, other in (
            ("ssl.truststore", cfg.ssl_truststore_location, cfg.ssl_truststore_type,
             "ssl.ca.location"),
            ("ssl.keystore", cfg.ssl_keystore_location, cfg.ssl_keystore_type,
             "ssl.certificate.location")):
        password = getattr(cfg, prefix.replace(".", "_") + "_password")
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
                trusted_pem(location, kind, cfg.ssl_truststore_password)
            else:
                key_entry(location, kind, cfg.ssl_keystore_password, cfg.ssl_key_password)
        except StoreError as e:
            raise ConfigError(str(e)) from None


def check_security(cfg: ClientConfig) -> None:
    """Refuse security options ``security.protocol`` would not use, open PKCS12/JKS stores,
    and settle the SASL user and password (or the OAUTHBEARER settings) on ``cfg``."""
    protocol = cfg.security_protocol
    unused = []
    if not cfg.uses_tls:
        unused += [n for n, v in _set(cfg, _TLS_ONLY) if v is not None]
    if not cfg.uses_sasl:
        unused += [n for n, v in _set(cfg, _SASL_ONLY) if v is not None]
    if unused:
        raise ConfigError(f"Invalid value {protocol} for configuration security.protocol: "
                          f"{', '.join(unused)} is set but {protocol} does not use it")
    if cfg.ssl_ca_location and cfg.ssl_truststore_location:
        raise ConfigError("Invalid value for configuration ssl.truststore.location: "
                          "ssl.ca.location is set too; give the CA bundle once")
    if cfg.ssl_certificate_location and cfg.ssl_keystore_location:
        raise ConfigError("Invalid value for configuration ssl.keystore.location: "
                          "ssl.certificate.location is set too; give the client certificate once")
    if cfg.uses_tls:
        _check_stores(cfg)
    if not cfg.uses_sasl:
        return
    if cfg.sasl_mechanism is None:
        raise ConfigError(f"Missing configuration sasl.mechanism: security.protocol={protocol} "
                          "needs one of " + ", ".join(SASL_MECHANISMS))
    if cfg.sasl_mechanism == "OAUTHBEARER":
        _check_oauthbearer(cfg)
        return
    oauth = [n for n, v in _set(cfg, _OAUTHBEARER) if v is not None]
    if oauth:
        raise ConfigError(f"Invalid value {cfg.sasl_mechanism} for configuration sasl.mechanism: "
                          f"{', '.join(oauth)} is set but only OAUTHBEARER uses it")
    username, password = cfg.sasl_username, cfg.sasl_password
    if cfg.sasl_jaas_config is not None:
        try:
            module, jaas = parse_jaas_config(cfg.sasl_jaas_config)
        except ValueError:
            raise ConfigError("Invalid value for configuration sasl.jaas.config: must be "
                              "'<LoginModule> required username=\"...\" password=\"...\";'") from None
        expected = "PlainLoginModule" if cfg.sasl_mechanism == "PLAIN" else "ScramLoginModule"
        if module.rsplit(".", 1)[-1] != expected:
            raise ConfigError(f"Invalid value {module} for configuration sasl.jaas.config: "
                              f"sasl.mechanism={cfg.sasl_mechanism} needs a {expected}")
        for name, given, from_jaas in [("sasl.username", username, jaas.get("username")),
                                       ("sasl.password", password, jaas.get("password"))]:
            if given is not None and from_jaas is not None and given != from_jaas:
                raise ConfigError(f"Invalid value for configuration {name}: it differs from "
                                  "the one in sasl.jaas.config")
        username = username if username is not None else jaas.get("username")
        password = password if password is not None else jaas.get("password")
    if not username or password is None:
        raise ConfigError(f"Missing configuration sasl.username/sasl.password: "
                          f"sasl.mechanism={cfg.sasl_mechanism} needs a user and a password "
                          "(or sasl.jaas.config with username= and password=)")
    object.__setattr__(cfg, "sasl_username", username)
    object.__setattr__(cfg, "sasl_password", password)


def _check_oauthbearer(cfg: ClientConfig) -> None:
    """OAUTHBEARER's options reconciled into :attr:`oauthbearer` (see :mod:`.oauthbearer`)."""
    for name, value in (("sasl.username", cfg.sasl_username), ("sasl.password", cfg.sasl_password)):
        if value is not None:
            raise ConfigError(f"Invalid value for configuration {name}: sasl.mechanism=OAUTHBEARER "
                              "takes no user or password (it sends a token)")
    module: str | None = None
    jaas: dict[str, str] = {}
    if cfg.sasl_jaas_config is not None:
        try:
            module, jaas = parse_jaas_config(cfg.sasl_jaas_config)
        except ValueError:
            raise ConfigError("Invalid value for configuration sasl.jaas.config: must be "
                              "'<LoginModule> required clientId=\"...\" clientSecret=\"...\";'") from None
    client_id, client_secret = (
        one_spelling(("sasl.oauthbearer.client.id", cfg.sasl_oauthbearer_client_id),
                     ("sasl.oauthbearer.client.credentials.client.id",
                      cfg.sasl_oauthbearer_client_credentials_client_id)),
        one_spelling(("sasl.oauthbearer.client.secret", cfg.sasl_oauthbearer_client_secret),
                     ("sasl.oauthbearer.client.credentials.client.secret",
                      cfg.sasl_oauthbearer_client_credentials_client_secret)))
    resolved = settings(cfg.sasl_oauthbearer_method, cfg.sasl_oauthbearer_token_endpoint_url,
                        client_id, client_secret, cfg.sasl_oauthbearer_scope,
                        cfg.sasl_oauthbearer_config, module, jaas,
                        cfg.sasl_login_callback_handler_class,
                        cfg.sasl_oauthbearer_jwt_retriever_class)
    object.__setattr__(cfg, "oauthbearer", resolved)
