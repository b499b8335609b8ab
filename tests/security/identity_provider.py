"""An OAuth 2 / OIDC identity provider for tests: a client-credentials token endpoint and a
JWKS endpoint, served by werkzeug from the test process, with RSA keys made here.

Tokens are RS256 JWTs: ``sub`` is the client id, ``iss`` :attr:`issuer`, ``aud``
:attr:`audience`, ``scope`` the scope asked for. :meth:`misbehave` makes the endpoint hand
one client a bad token (expired, wrong issuer or audience, signed by a key the JWKS does not
hold), and :meth:`rotate` switches signing to a new key published in the JWKS.

Threading: werkzeug serves each request on its own thread; ``_lock`` guards the keys, the
clients and the counters.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any

from joserfc import jwk, jwt
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

AUDIENCE = "pyq-test"


class IdentityProvider:
    def __init__(self, clients: dict[str, str], lifetime_s: int = 3600) -> None:
        self.clients = dict(clients)
        self.lifetime_s = lifetime_s
        self._lock = threading.Lock()
        self._generation = 0
        self._signing = self._new_key()
        self._published = [self._signing]
        self._rogue = self._new_key()  # never published
        self._misbehaving: dict[str, dict[str, Any]] = {}
        self.token_requests = 0
        self.jwks_requests = 0
        #: Set to an HTTP status to make the JWKS endpoint fail with it (an outage).
        self.jwks_failure: int | None = None
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self.issuer = f"{self.url}/realm"
        self.audience = AUDIENCE
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-idp", daemon=True)
        self._thread.start()

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(10)

    def _new_key(self) -> jwk.RSAKey:
        self._generation += 1
        return jwk.RSAKey.generate_key(2048, parameters={"kid": f"key-{self._generation}", "use": "sig"})

    # ---- test controls -----------------------------------------------------------------
    def rotate(self) -> str:
        """Sign with a new key from now on and publish it next to the old one; its kid."""
        with self._lock:
            self._signing = self._new_key()
            self._published.append(self._signing)
            return str(self._signing.kid)

    def misbehave(self, client_id: str, how: str) -> None:
        """``expired``, ``short`` (3 s), ``issuer``, ``audience`` or ``unknown-key`` for this
        client's tokens."""
        changes: dict[str, dict[str, Any]] = {
            "expired": {"exp": -120, "iat": -3720}, "short": {"exp": 3},
            "issuer": {"iss": "http://elsewhere.example/"},
            "audience": {"aud": "another-service"}, "unknown-key": {"rogue": True}}
        with self._lock:
            self._misbehaving[client_id] = changes[how]

    def mint(self, sub: str, scope: str | None = None, lifetime_s: int | None = None,
             **changes: Any) -> str:
        """A token as the endpoint would give ``sub``, with ``changes`` applied (``exp`` and
        ``iat`` as offsets from now; ``rogue=True`` signs with an unpublished key)."""
        now = int(time.time())
        with self._lock:
            key = self._rogue if changes.pop("rogue", False) else self._signing
        claims: dict[str, Any] = {"iss": self.issuer, "aud": self.audience, "sub": sub, "iat": now,
                                  "exp": now + (lifetime_s or self.lifetime_s)}
        if scope:
            claims["scope"] = scope
        for name, value in changes.items():
            claims[name] = now + value if name in ("exp", "iat", "nbf") else value
        return jwt.encode({"alg": "RS256", "kid": key.kid, "typ": "JWT"}, claims, key)

    # ---- HTTP --------------------------------------------------------------------------
    def _app(self, environ: dict, start_response: Any) -> Any:
        request = Request(environ)
        if request.path == "/jwks":
            with self._lock:
                self.jwks_requests += 1
                if self.jwks_failure is not None:
                    return _error(self.jwks_failure, "unavailable")(environ, start_response)
                body = jwk.KeySet(list(self._published)).as_dict(private=False)
            return Response(json.dumps(body), content_type="application/json")(environ, start_response)
        if request.path == "/token" and request.method == "POST":
            return self._token(request)(environ, start_response)
        return Response("not found", status=404)(environ, start_response)

    def _token(self, request: Request) -> Response:
        with self._lock:
            self.token_requests += 1
        client_id, secret = _basic(request.headers.get("Authorization", ""))
        if request.form.get("grant_type") != "client_credentials":
            return _error(400, "unsupported_grant_type")
        if client_id is None or self.clients.get(client_id) != secret:
            return _error(401, "invalid_client")
        with self._lock:
            changes = dict(self._misbehaving.get(client_id, {}))
        expires_in = changes["exp"] if changes.get("exp", 0) > 0 else self.lifetime_s
        token = self.mint(client_id, request.form.get("scope"), **changes)
        return Response(json.dumps({"access_token": token, "token_type": "Bearer",
                                    "expires_in": expires_in}), content_type="application/json")


def _basic(header: str) -> tuple[str | None, str | None]:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None, None
    from urllib.parse import unquote
    user, _, password = base64.b64decode(value).decode().partition(":")
    return unquote(user), unquote(password)


def _error(status: int, code: str) -> Response:
    return Response(json.dumps({"error": code}), status=status, content_type="application/json")
