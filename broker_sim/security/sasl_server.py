"""The broker's side of SASL: one :class:`SaslServer` per connection being authenticated.

``PLAIN`` (RFC 4616) carries ``authzid NUL user NUL password`` once; pyq checks the
password against the user's stored SCRAM credential (any mechanism), so one credential
store serves all three mechanisms and no password is ever kept. ``SCRAM-SHA-256`` and
``SCRAM-SHA-512`` run :class:`~.scram.ScramServerExchange`; ``OAUTHBEARER`` runs
:class:`~.oauthbearer.OAuthBearerServer` with the listener's token validator, and sets
``expires_at`` (the token's expiry, seconds since the epoch) when it completes.

A failure raises SaslAuthenticationFailed whose message names the mechanism; the caller
answers SASL_AUTHENTICATION_FAILED with it and closes the connection after the response.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..protocol.errors import SaslAuthenticationFailed
from .oauthbearer import MECHANISM as OAUTHBEARER
from .oauthbearer import OAuthBearerServer, ValidToken
from .scram import MECHANISMS, ScramCredential, ScramServerExchange

#: user -> {mechanism: credential}; the broker reads it from its copy of the cluster image.
CredentialLookup = Callable[[str], Mapping[str, ScramCredential]]

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", OAUTHBEARER)
#: ``sasl.enabled.mechanisms`` by default: OAUTHBEARER only when asked for (it needs a validator).
DEFAULT_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class SaslServer:
    """One authentication attempt. Not thread-safe; the connection is muted while a
    handler feeds it a token, so one thread at a time uses it."""

    def __init__(self, mechanism: str, credentials: CredentialLookup,
                 validate_token: Callable[[str], ValidToken] | None = None) -> None:
        self.mechanism = mechanism
        self.credentials = credentials
        self.username: str | None = None
        self.expires_at: float | None = None
        self.complete = False
        self._scram = (ScramServerExchange(mechanism, lambda user: credentials(user).get(mechanism))
                       if mechanism in MECHANISMS else None)
        self._oauth: OAuthBearerServer | None = None
        if mechanism == OAUTHBEARER:
            assert validate_token is not None, "OAUTHBEARER needs a token validator"
            self._oauth = OAuthBearerServer(validate_token)

    def evaluate(self, token: bytes) -> bytes:
        """Feed the client's next token; returns the answer (empty for PLAIN)."""
        if self._scram is not None:
            answer = self._scram.evaluate(token)
            self.username, self.complete = self._scram.username, self._scram.complete
            return answer
        if self._oauth is not None:
            answer = self._oauth.evaluate(token)
            self.username, self.complete = self._oauth.username, self._oauth.complete
            self.expires_at = self._oauth.expires_at
            return answer
        return self._plain(bytes(token))

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise SaslAuthenticationFailed("PLAIN: malformed message (expected authzid NUL user NUL password)")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed("PLAIN: message is not UTF-8") from None
        if not user or (authzid and authzid != user):
            raise SaslAuthenticationFailed("PLAIN: empty user, or an authorization id other than the user")
        stored = self.credentials(user)
        if not any(cred.matches_password(mech, password) for mech, cred in stored.items()):
            raise SaslAuthenticationFailed(
                "Authentication failed: Invalid username or password (SASL mechanism PLAIN)")
        self.username, self.complete = user, True
        return b""
