"""The client's side of TLS and SASL: a TLS context and a SASL mechanism from a ClientConfig.

:func:`tls_context` builds (once per distinct setting) the ``ssl.SSLContext`` every
connection of a client wraps its socket with; :func:`sasl_client` returns a fresh
mechanism for one connection's authentication. A mechanism is driven by the connection::

    token = mech.first()                       # sent in the first SaslAuthenticate
    while token is not None:                   # the broker answered ``answer``
        token = mech.respond(answer)           # next token, or None when done

Both raise SaslAuthenticationFailed on a bad answer from the broker.
"""

from __future__ import annotations

import functools
import ssl

from broker_sim.protocol.errors import SaslAuthenticationFailed
from broker_sim.security.scram import ScramClientExchange
from broker_sim.security.tls import client_context

from .config import ClientConfig
from .oauthbearer import OAuthBearerClient, token_source


@functools.lru_cache(maxsize=16)
def _context(ca: str | None, cert: str | None, key: str | None, password: str | None,
             check_hostname: bool, stores: tuple[str, str | None, str, str | None]) -> ssl.SSLContext:
    truststore_type, truststore_password, keystore_type, keystore_password = stores
    return client_context(ca, cert, key, password, check_hostname,
                          truststore_type=truststore_type, truststore_password=truststore_password,
                          keystore_type=keystore_type, keystore_password=keystore_password)


def tls_context(config: ClientConfig) -> ssl.SSLContext:
    """The TLS context for ``config`` (TLS protocols only); raises ssl.SSLError or OSError
    if a file does not hold what it should."""
    return _context(config.ssl_ca_location or config.ssl_truststore_location,
                    config.ssl_certificate_location or config.ssl_keystore_location,
                    config.ssl_key_location, config.ssl_key_password,
                    config.ssl_endpoint_identification_algorithm == "https",
                    (config.ssl_truststore_type if config.ssl_truststore_location else "PEM",
                     config.ssl_truststore_password,
                     config.ssl_keystore_type if config.ssl_keystore_location else "PEM",
                     config.ssl_keystore_password))


class PlainClient:
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._token = b"\x00" + username.encode() + b"\x00" + password.encode()

    def first(self) -> bytes:
        return self._token

    def respond(self, answer: bytes) -> bytes | None:
        return None


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self._exchange = ScramClientExchange(mechanism, username, password)
        self._step = 0

    def first(self) -> bytes:
        return self._exchange.first()

    def respond(self, answer: bytes) -> bytes | None:
        self._step += 1
        if self._step == 1:
            return self._exchange.final(answer)
        if self._step == 2:
            self._exchange.verify(answer)
            return None
        raise SaslAuthenticationFailed(f"{self.mechanism}: the broker sent more than the exchange has")


def sasl_client(config: ClientConfig) -> PlainClient | ScramClient | OAuthBearerClient:
    if config.oauthbearer is not None:
        return OAuthBearerClient(token_source(config.oauthbearer))
    assert config.sasl_mechanism and config.sasl_username and config.sasl_password is not None
    if config.sasl_mechanism == "PLAIN":
        return PlainClient(config.sasl_username, config.sasl_password)
    return ScramClient(config.sasl_mechanism, config.sasl_username, config.sasl_password)
