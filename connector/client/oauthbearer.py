"""The client's side of SASL/OAUTHBEARER: where the token comes from, and the exchange.

Two ways to get a token, with librdkafka's and Kafka Java's option names:

* **oidc** (``sasl.oauthbearer.method=oidc``, or Java's ``sasl.oauthbearer.token.endpoint.url``
  with ``sasl.jaas.config=...OAuthBearerLoginModule required clientId=... clientSecret=...
  scope=...;``): an OAuth 2 client-credentials grant (RFC 6749 section 4.4) posted to the
  token endpoint, the client id and secret in HTTP basic authentication as Kafka sends them.
* **default** (librdkafka's unsecured mode, ``sasl.oauthbearer.config=principal=alice``,
  or Java's ``unsecuredLoginStringClaim_sub="alice"`` in the JAAS options): an unsigned JWT
  (``alg: none``) made here, which only a broker in development mode accepts.

A token is cached per distinct setting and shared by every connection of every client in
the process that has that setting; a connection that authenticates after 80% of the
token's lifetime has passed (Kafka's ``sasl.login.refresh.window.factor``) gets a new one
first. Brokers end a session when its token expires, and the client's reconnect then
authenticates with the fresh token.

Threading: :class:`TokenSource` is shared; ``_lock`` guards its cached token and is held
while a token is fetched, so concurrent connections wait for one request to the endpoint.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from broker_sim.protocol.errors import SaslAuthenticationFailed

from .errors import ConfigError

METHODS = ("default", "oidc")
#: Kafka's sasl.login.refresh.window.factor: refresh once this share of the lifetime has passed.
REFRESH_WINDOW_FACTOR = 0.8
LOGIN_MODULE = "OAuthBearerLoginModule"
LOGIN_HANDLERS = ("OAuthBearerLoginCallbackHandler",)
#: Kafka 4.1+'s sasl.oauthbearer.jwt.retriever.class values that mean a client-credentials grant.
JWT_RETRIEVERS = ("ClientCredentialsJwtRetriever", "DefaultJwtRetriever")
_UNSECURED_KEYS = ("principal", "principalClaimName", "scope", "scopeClaimName", "lifeSeconds")


@dataclass(frozen=True)
class OAuthBearerSettings:
    """Where tokens come from, once the options are reconciled (see :func:`settings`)."""

    method: str  # "oidc" or "default"
    token_endpoint_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    scope: str | None = None
    principal: str | None = None  # unsecured: the principal claim's value
    principal_claim: str = "sub"
    scope_claim: str = "scope"
    life_seconds: int = 3600

    @property
    def identity(self) -> str:
        """Who authenticates, for error messages: the client id or the unsecured principal."""
        return (self.client_id if self.method == "oidc" else self.principal) or "?"


def _parse_unsecured_config(text: str) -> dict[str, str]:
    """librdkafka's ``sasl.oauthbearer.config``: space-separated ``key=value``."""
    out: dict[str, str] = {}
    for item in text.split():
        key, eq, value = item.partition("=")
        if not eq or key not in _UNSECURED_KEYS:
            raise ConfigError(f"Invalid value {text!r} for configuration sasl.oauthbearer.config: "
                              f"{item!r} is not one of {', '.join(k + '=...' for k in _UNSECURED_KEYS)}")
        out[key] = value
    return out


def one_spelling(*given: tuple[str, str | None]) -> str | None:
    """The value of an option that has several names (librdkafka's, Kafka's), if any is set;
    ConfigError if two are set to different values."""
    values = [(name, value) for name, value in given if value is not None]
    if len({value for _, value in values}) > 1:
        raise ConfigError(f"Invalid value for configuration {values[1][0]}: it differs from "
                          f"{values[0][0]}; give it once")
    return values[0][1] if values else None


def settings(method: str | None, token_endpoint_url: str | None, client_id: str | None,
             client_secret: str | None, scope: str | None, unsecured_config: str | None,
             jaas_module: str | None, jaas: Mapping[str, str],
             login_callback_handler: str | None, jwt_retriever: str | None = None) -> OAuthBearerSettings:
    """Reconcile librdkafka's and Java's spellings; ConfigError names the option at fault."""
    if jwt_retriever is not None and jwt_retriever.rsplit(".", 1)[-1] not in JWT_RETRIEVERS:
        raise ConfigError(f"Invalid value {jwt_retriever} for configuration "
                          "sasl.oauthbearer.jwt.retriever.class: pyq runs Kafka's "
                          + " or ".join(JWT_RETRIEVERS) + " (a client-credentials grant) only")
    if jaas_module is not None and jaas_module.rsplit(".", 1)[-1] != LOGIN_MODULE:
        raise ConfigError(f"Invalid value {jaas_module} for configuration sasl.jaas.config: "
                          f"sasl.mechanism=OAUTHBEARER needs org.apache.kafka.common.security."
                          f"oauthbearer.{LOGIN_MODULE}")
    if login_callback_handler is not None and \
            login_callback_handler.rsplit(".", 1)[-1] not in LOGIN_HANDLERS:
        raise ConfigError(f"Invalid value {login_callback_handler} for configuration "
                          "sasl.login.callback.handler.class: pyq runs Kafka's "
                          "OAuthBearerLoginCallbackHandler (client credentials) only")
    merged: dict[str, str | None] = {}
    for name, given, key in (("sasl.oauthbearer.client.id", client_id, "clientId"),
                             ("sasl.oauthbearer.client.secret", client_secret, "clientSecret"),
                             ("sasl.oauthbearer.scope", scope, "scope")):
        from_jaas = jaas.get(key)
        if given is not None and from_jaas is not None and given != from_jaas:
            raise ConfigError(f"Invalid value for configuration {name}: it differs from {key} "
                              "in sasl.jaas.config")
        merged[key] = given if given is not None else from_jaas
    unsecured = _parse_unsecured_config(unsecured_config) if unsecured_config else {}
    if "unsecuredLoginStringClaim_sub" in jaas:
        unsecured.setdefault("principal", jaas["unsecuredLoginStringClaim_sub"])
    if method is None:
        method = "oidc" if token_endpoint_url or merged["clientId"] else "default"
    method = method.strip().lower()
    if method not in METHODS:
        raise ConfigError(f"Invalid value {method!r} for configuration sasl.oauthbearer.method: "
                          f"must be one of {', '.join(METHODS)}")
    if method == "oidc":
        if unsecured:
            raise ConfigError("Invalid value for configuration sasl.oauthbearer.config: it sets "
                              "unsecured-token claims, but sasl.oauthbearer.method=oidc fetches "
                              "tokens from sasl.oauthbearer.token.endpoint.url")
        if not token_endpoint_url:
            raise ConfigError("Missing configuration sasl.oauthbearer.token.endpoint.url: "
                              "sasl.oauthbearer.method=oidc needs the token endpoint's URL")
        if urllib.parse.urlsplit(token_endpoint_url).scheme not in ("http", "https"):
            raise ConfigError(f"Invalid value {token_endpoint_url!r} for configuration "
                              "sasl.oauthbearer.token.endpoint.url: must be an http:// or https:// URL")
        for key, name in (("clientId", "sasl.oauthbearer.client.id"),
                          ("clientSecret", "sasl.oauthbearer.client.secret")):
            if not merged[key]:
                raise ConfigError(f"Missing configuration {name}: sasl.oauthbearer.method=oidc "
                                  f"needs it (or {key}= in sasl.jaas.config)")
        return OAuthBearerSettings("oidc", token_endpoint_url, merged["clientId"],
                                   merged["clientSecret"], merged["scope"])
    for name, value in (("sasl.oauthbearer.token.endpoint.url", token_endpoint_url),
                        ("sasl.oauthbearer.client.id", merged["clientId"]),
                        ("sasl.oauthbearer.client.secret", merged["clientSecret"])):
        if value is not None:
            raise ConfigError(f"Invalid value for configuration {name}: it is for "
                              "sasl.oauthbearer.method=oidc, and the method is default "
                              "(unsecured tokens)")
    if not unsecured.get("principal"):
        raise ConfigError("Missing configuration sasl.oauthbearer.config: "
                          "sasl.oauthbearer.method=default (unsecured tokens) needs "
                          "principal=<name> (or unsecuredLoginStringClaim_sub in sasl.jaas.config)")
    try:
        life = int(unsecured.get("lifeSeconds", "3600"))
        if life <= 0:
            raise ValueError
    except ValueError:
        raise ConfigError(f"Invalid value {unsecured_config!r} for configuration "
                          "sasl.oauthbearer.config: lifeSeconds must be a positive integer") from None
    return OAuthBearerSettings("default", principal=unsecured["principal"],
                               scope=unsecured.get("scope", merged["scope"]),
                               principal_claim=unsecured.get("principalClaimName", "sub"),
                               scope_claim=unsecured.get("scopeClaimName", "scope"),
                               life_seconds=life)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unsecured_token(s: OAuthBearerSettings, now: float) -> tuple[str, float]:
    """An unsigned JWT for ``s.principal`` -> (token, expiry in epoch seconds)."""
    issued = int(now)
    claims: dict[str, object] = {s.principal_claim: s.principal, "iat": issued,
                                 "exp": issued + s.life_seconds}
    if s.scope:
        claims[s.scope_claim] = s.scope.split()
    header = _b64(json.dumps({"alg": "none"}).encode())
    return f"{header}.{_b64(json.dumps(claims).encode())}.", float(issued + s.life_seconds)


def _jwt_expiry(token: str) -> float | None:
    """The ``exp`` of a JWT, read without checking it (the broker checks)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = claims.get("exp")
        return float(exp) if isinstance(exp, (int, float)) else None
    except (IndexError, ValueError, AttributeError):
        return None


def client_credentials_token(s: OAuthBearerSettings, now: float, timeout_s: float) -> tuple[str, float]:
    """POST a client-credentials grant to the token endpoint -> (access token, expiry)."""
    assert s.token_endpoint_url and s.client_id and s.client_secret is not None
    form = {"grant_type": "client_credentials"}
    if s.scope:
        form["scope"] = s.scope
    basic = base64.b64encode(f"{urllib.parse.quote(s.client_id)}:"
                             f"{urllib.parse.quote(s.client_secret)}".encode()).decode()
    request = urllib.request.Request(
        s.token_endpoint_url, data=urllib.parse.urlencode(form).encode(), method="POST",
        headers={"Authorization": f"Basic {basic}", "Accept": "application/json",
                 "Content-Type": "application/x-www-form-urlencoded"})
    where = f"the token endpoint {s.token_endpoint_url}"
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as e:
        detail = e.read()[:300].decode("utf-8", "replace").strip()
        raise SaslAuthenticationFailed(
            f"OAUTHBEARER: {where} answered HTTP {e.code} to client {s.client_id!r}"
            + (f": {detail}" if detail else "")) from None
    except (OSError, ValueError) as e:
        raise SaslAuthenticationFailed(f"OAUTHBEARER: no token from {where}: {e}") from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise SaslAuthenticationFailed(f"OAUTHBEARER: {where} answered without an access_token")
    expires_in = body.get("expires_in")
    if isinstance(expires_in, (int, float)) and expires_in > 0:
        return token, now + float(expires_in)
    exp = _jwt_expiry(token)
    return token, exp if exp is not None else now + 3600.0


class TokenSource:
    """A cached token for one setting, renewed once :data:`REFRESH_WINDOW_FACTOR` of its
    lifetime has passed (see the module docstring for the threading rule)."""

    def __init__(self, s: OAuthBearerSettings, now: Callable[[], float] = time.time,
                 timeout_s: float = 10.0) -> None:
        self.settings = s
        self._now = now
        self._timeout = timeout_s
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0
        self.fetches = 0

    def token(self) -> str:
        with self._lock:
            now = self._now()
            if self._token is None or now >= self._refresh_at:
                if self.settings.method == "oidc":
                    token, expiry = client_credentials_token(self.settings, now, self._timeout)
                else:
                    token, expiry = unsecured_token(self.settings, now)
                self.fetches += 1
                self._token = token
                self._refresh_at = now + max(0.0, expiry - now) * REFRESH_WINDOW_FACTOR
            return self._token


_SOURCES: dict[OAuthBearerSettings, TokenSource] = {}
_SOURCES_LOCK = threading.Lock()


def token_source(s: OAuthBearerSettings) -> TokenSource:
    """The process's shared source for this setting."""
    with _SOURCES_LOCK:
        source = _SOURCES.get(s)
        if source is None:
            source = _SOURCES[s] = TokenSource(s)
        return source


class OAuthBearerClient:
    """One OAUTHBEARER exchange (RFC 7628): the initial response carries the token; an
    error challenge from the broker is acknowledged with ``\\x01`` and the broker's
    SaslAuthenticate error then says why."""

    mechanism = "OAUTHBEARER"

    def __init__(self, source: TokenSource) -> None:
        self._source = source
        self._sent = False

    def first(self) -> bytes:
        token = self._source.token()
        self._sent = True
        return f"n,,\x01auth=Bearer {token}\x01\x01".encode()

    def respond(self, answer: bytes) -> bytes | None:
        if not answer:
            return None
        if self._sent:  # an error challenge: acknowledge it, the broker then fails the exchange
            self._sent = False
            return b"\x01"
        raise SaslAuthenticationFailed("OAUTHBEARER: the broker sent more than the exchange has")
