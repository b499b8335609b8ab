"""A connection's security state: which listener it came in on, who it is, SASL progress.

The processor creates one :class:`Session` per connection and attaches it to every
:class:`~.request_channel.Request` from that connection. Until ``authenticated`` is true
the processor lets through only ApiVersions, SaslHandshake and SaslAuthenticate (and,
after a v0 handshake, bare SASL tokens); the request handlers run the SASL exchange and
set ``principal``/``authenticated``. An OAUTHBEARER session also has ``expires_at_ms``
(the token's expiry, wall milliseconds): the processor closes the connection at its first
request after that, so a session never outlives its token.

Threading: the processor thread owns the session, except while one of its requests is in
the broker: the connection is muted then (at most one request in flight), so a handler
that changes the session is the only thread touching it, and the hand-over through the
request and response queues orders its writes before the processor reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..security.principal import ANONYMOUS

if TYPE_CHECKING:
    from ..security.sasl_server import SaslServer
    from .listener import Listener


class Session:
    __slots__ = ("listener", "principal", "client_address", "authenticated", "sasl", "sasl_raw_tokens",
                 "expires_at_ms")

    def __init__(self, listener: Listener, client_address: str) -> None:
        self.listener = listener
        self.client_address = client_address
        self.principal = ANONYMOUS
        self.authenticated = not listener.uses_sasl
        self.sasl: SaslServer | None = None
        #: After a SaslHandshake v0 the next frames are bare SASL tokens (no Kafka header).
        self.sasl_raw_tokens = False
        #: Wall milliseconds after which the credential is no longer valid; None: never.
        self.expires_at_ms: int | None = None

    @property
    def listener_name(self) -> str:
        return self.listener.name
