"""SASL/OAUTHBEARER on the broker (RFC 7628, KIP-255; OIDC validation as KIP-768).

The client's first message is ``n,[a=authzid],\\x01auth=Bearer <jwt>\\x01[key=value\\x01]\\x01``.
A good token completes the exchange with an empty answer and the principal
``User:<sub>`` (the claim named by ``sasl.oauthbearer.sub.claim.name``). A refused token
is answered, as RFC 7628 section 3.2.2 and Kafka do, with a JSON error challenge
(``{"status":"invalid_token"}``); the client replies ``\\x01`` and the broker then fails the
exchange with a message saying why the token was refused.

Two validators, chosen as Kafka chooses them:

* :class:`JwksValidator` when ``sasl.oauthbearer.jwks.endpoint.url`` is set: a signed JWT
  (RSA, EC or EdDSA; never ``alg: none`` nor a shared secret) whose ``kid`` is in the JWKS,
  ``exp`` in the future and ``nbf``/``iat`` not in the future (both within
  ``sasl.oauthbearer.clock.skew.seconds``), ``iss`` equal to
  ``sasl.oauthbearer.expected.issuer`` and ``aud`` holding one of
  ``sasl.oauthbearer.expected.audience`` when those are set.
* :class:`UnsecuredValidator` otherwise (Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``,
  for development): an unsigned JWT (``alg: none``, empty signature) with the same time checks.
  A listener that has a JWKS URL never accepts an unsigned token.

The session ends with the token: :attr:`OAuthBearerServer.expires_at` is the token's
``exp`` and the broker closes a connection whose token has expired at its next request
(the client reconnects with a fresh token). Re-authentication on the same connection
(KIP-368) is not offered: SaslAuthenticate answers ``session_lifetime_ms=0``.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from joserfc import errors as jose_errors
from joserfc import jwk, jwt
from joserfc.util import urlsafe_b64decode

from ..common.clock import SYSTEM_CLOCK, Clock
from ..common.options import LIST, custom, declared, format_value, integer, option, parse_value
from ..protocol.errors import InvalidConfig, PyqError, SaslAuthenticationFailed

log = logging.getLogger(__name__)

MECHANISM = "OAUTHBEARER"

#: Signature algorithms a JWKS-validated token may use (asymmetric only, as Kafka's jose4j setup).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")

#: An unknown ``kid`` refreshes the JWKS; the same kid again only after this long (Kafka's figure).
MISSING_KID_RETRY_S = 60.0
_MISSING_KID_ENTRIES = 16
_MAX_KID_LENGTH = 1000
#: After a failed JWKS fetch, the next attempt waits this long, doubling up to the maximum.
FETCH_BACKOFF_S = 0.1
FETCH_BACKOFF_MAX_S = 10.0


def _jwks_url(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text.startswith(("http://", "https://", "file:")):
        raise ValueError(value)
    return text


def _claim(value: object) -> str:
    if not str(value).strip():
        raise ValueError(value)
    return str(value).strip()


JWKS_URL_KIND = custom("url", _jwks_url, "an http://, https:// or file: URL of a JSON Web Key Set")
CLAIM = custom("string", _claim, "a claim name")
#: A string, unset when empty.
_UNSET_IF_EMPTY = custom("string", lambda v: None if v is None else (str(v).strip() or None), "a string")


@dataclass(frozen=True)
class OAuthBearerConfig:
    """The broker's OAUTHBEARER options, declared once (Kafka's names and defaults)."""

    jwks_endpoint_url: str | None = option(
        "sasl.oauthbearer.jwks.endpoint.url", None, JWKS_URL_KIND,
        doc="Where the keys that sign tokens are published; unset: Kafka's unsecured "
            "development mode (alg none tokens only).")
    expected_issuer: str | None = option(
        "sasl.oauthbearer.expected.issuer", None, _UNSET_IF_EMPTY,
        doc="The iss claim every token must carry.")
    expected_audience: tuple[str, ...] = option(
        "sasl.oauthbearer.expected.audience", (), LIST,
        doc="Audiences a token's aud claim must hold one of.")
    clock_skew_seconds: int = option(
        "sasl.oauthbearer.clock.skew.seconds", 30, integer(0, None, allowed="an integer >= 0"),
        doc="Leeway on a token's exp, nbf and iat claims.")
    sub_claim_name: str = option(
        "sasl.oauthbearer.sub.claim.name", "sub", CLAIM,
        doc="The claim that becomes the principal User:<value> for ACLs.")
    scope_claim_name: str = option(
        "sasl.oauthbearer.scope.claim.name", "scope", CLAIM, doc="The claim holding the token's scopes.")
    jwks_endpoint_refresh_ms: int = option(
        "sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000, integer(1, None, allowed="an integer >= 1"),
        doc="How often the key set is fetched again (an unknown kid refetches at once).")

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> OAuthBearerConfig:
        """From Kafka-named string options; InvalidConfig names a bad option and what is allowed."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidConfig(f"unknown OAUTHBEARER option(s) {unknown}; known: {list(OPTIONS)}")
        values: dict[str, Any] = {}
        for name, raw in options.items():
            spec = OPTIONS[name]
            try:
                values[spec.attr] = parse_value(spec, raw)
            except ValueError as e:
                raise InvalidConfig(f"{name}={raw!r} is not allowed: must be {e}") from None
        return cls(**values)

    def options(self) -> dict[str, str | None]:
        """Kafka name -> value as a string (None: unset), for DescribeConfigs."""
        return {name: format_value(getattr(self, spec.attr)) or None for name, spec in OPTIONS.items()}


#: The broker options this module reads, Kafka's names.
OPTIONS = declared(OAuthBearerConfig)
JWKS_URL = "sasl.oauthbearer.jwks.endpoint.url"


class TokenRefused(PyqError):
    """A token that does not pass validation; the message says why."""


@dataclass(frozen=True)
class ValidToken:
    principal_name: str
    expires_at: float  # seconds since the epoch (the ``exp`` claim)
    scope: tuple[str, ...]


def _b64json(part: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(urlsafe_b64decode(part.encode("ascii")))
    except (ValueError, UnicodeError):
        raise TokenRefused(f"the token's {what} is not base64url-encoded JSON") from None
    if not isinstance(value, dict):
        raise TokenRefused(f"the token's {what} is not a JSON object")
    return value


class _ClaimChecks:
    """The checks both validators make on a token's claims."""

    def __init__(self, config: OAuthBearerConfig, now: Callable[[], float]) -> None:
        self.config = config
        self.now = now

    def check(self, claims: Mapping[str, Any]) -> ValidToken:
        cfg, now, skew = self.config, self.now(), self.config.clock_skew_seconds
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or isinstance(exp, bool):
            raise TokenRefused("the token has no numeric 'exp' (expiration) claim")
        if exp + skew <= now:
            raise TokenRefused(f"the token expired at {_iso(exp)} (now {_iso(now)}, "
                               f"clock skew allowed {skew} s)")
        for claim, meaning in (("nbf", "is not valid before"), ("iat", "was issued at")):
            value = claims.get(claim)
            if value is None:
                continue
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise TokenRefused(f"the token's '{claim}' claim is not a number")
            if value - skew > now:
                raise TokenRefused(f"the token {meaning} {_iso(value)}, in the future "
                                   f"(now {_iso(now)}, clock skew allowed {skew} s)")
        if cfg.expected_issuer is not None and claims.get("iss") != cfg.expected_issuer:
            raise TokenRefused(f"the token's issuer {claims.get('iss')!r} is not the expected "
                               f"{cfg.expected_issuer!r}")
        if cfg.expected_audience:
            aud = claims.get("aud")
            given = [aud] if isinstance(aud, str) else list(aud) if isinstance(aud, list) else []
            if not set(given) & set(cfg.expected_audience):
                raise TokenRefused(f"the token's audience {aud!r} holds none of the expected "
                                   f"{list(cfg.expected_audience)}")
        sub = claims.get(cfg.sub_claim_name)
        if not isinstance(sub, str) or not sub.strip():
            raise TokenRefused(f"the token has no '{cfg.sub_claim_name}' claim naming the principal")
        scope = claims.get(cfg.scope_claim_name)
        scopes = tuple(scope.split()) if isinstance(scope, str) else \
            tuple(str(s) for s in scope) if isinstance(scope, list) else ()
        return ValidToken(sub.strip(), float(exp), scopes)


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class UnsecuredValidator:
    """Kafka's unsecured mode: unsigned JWTs (``alg: none``) for development only."""

    def __init__(self, config: OAuthBearerConfig, now: Callable[[], float] = time.time) -> None:
        self._claims = _ClaimChecks(config, now)

    def validate(self, token: str) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenRefused("the token is not a JWT (three dot-separated parts)")
        header = _b64json(parts[0], "header")
        if header.get("alg") != "none":
            raise TokenRefused(f"the listener accepts only unsecured tokens (alg 'none'), this one is "
                               f"signed with {header.get('alg')!r}; set {JWKS_URL} to validate "
                               "signed tokens")
        if parts[2]:
            raise TokenRefused("an unsecured token (alg 'none') must not carry a signature")
        return self._claims.check(_b64json(parts[1], "claims"))


class JwksValidator:
    """Signed JWTs checked against the keys of a JWKS URL.

    The key set is fetched on first use and again when it is older than
    ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (at the next validation); a token whose
    ``kid`` is not in the set refetches it at once (key rotation), but the same unknown kid
    refetches at most once per :data:`MISSING_KID_RETRY_S` (Kafka's rate limit), so a client
    replaying a bad token cannot make the broker hammer the endpoint.

    An endpoint that fails (unreachable, an HTTP error, no key set) is not asked again for a
    backoff that starts at :data:`FETCH_BACKOFF_S` and doubles up to :data:`FETCH_BACKOFF_MAX_S`
    (Kafka's JWKS retry backoff defaults): meanwhile tokens are checked against the keys
    already held, and with none held are refused at once naming the endpoint's failure, so
    an identity provider that is down never holds request-handler threads for long.

    Threading: request-handler threads call :meth:`validate` concurrently; ``_lock`` guards
    the key set, its age and the missing-kid table, and is held during a fetch so that
    concurrent validations wait for one fetch rather than each making their own.
    """

    def __init__(self, config: OAuthBearerConfig, now: Callable[[], float] = time.time,
                 fetch_timeout_s: float = 10.0, clock: Clock = SYSTEM_CLOCK) -> None:
        """``now``: wall seconds for the tokens' claims; ``clock``: the key set's age, the
        fetch backoff and the missing-kid rate limit (its monotonic time)."""
        assert config.jwks_endpoint_url is not None
        self._clock = clock
        self.url = config.jwks_endpoint_url
        self._claims = _ClaimChecks(config, now)
        self._now = now
        self._refresh_s = config.jwks_endpoint_refresh_ms / 1000
        self._timeout = fetch_timeout_s
        self._lock = threading.Lock()
        self._keys: jwk.KeySet | None = None
        self._fetched_at = 0.0
        self._missing: OrderedDict[str, float] = OrderedDict()
        self._failure: str | None = None  # why the last fetch failed, None if it did not
        self._retry_at = 0.0
        self._backoff = FETCH_BACKOFF_S

    def _monotonic_s(self) -> float:
        return self._clock.monotonic_ms() / 1000

    def _fetch(self) -> None:
        """Fetch the key set unless a failed fetch's backoff is running; keep the old keys,
        if any, when it fails; raise TokenRefused when there are none."""
        if self._failure is not None and self._monotonic_s() < self._retry_at:
            if self._keys is None:
                raise TokenRefused(self._failure)
            return
        try:
            self._download()
        except TokenRefused as e:
            self._failure, self._retry_at = str(e), self._monotonic_s() + self._backoff
            self._backoff = min(self._backoff * 2, FETCH_BACKOFF_MAX_S)
            if self._keys is None:
                raise
            log.warning("%s; checking tokens with the %d keys fetched before", e, len(self._keys.keys))
            return
        self._failure, self._backoff = None, FETCH_BACKOFF_S

    def _download(self) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=self._timeout) as answer:
                document = json.loads(answer.read())
            keys = jwk.KeySet.import_key_set(document)
        except urllib.error.HTTPError as e:
            raise TokenRefused(f"the JWKS endpoint {self.url} answered HTTP {e.code}") from None
        except (OSError, ValueError, TypeError, jose_errors.JoseError) as e:
            raise TokenRefused(f"the JWKS endpoint {self.url} gave no key set ({e})") from None
        self._keys, self._fetched_at = keys, self._monotonic_s()
        log.debug("fetched %d keys from %s", len(keys.keys), self.url)

    def _key_set(self, kid: str | None) -> jwk.KeySet:
        with self._lock:
            if self._keys is None or self._monotonic_s() - self._fetched_at >= self._refresh_s:
                self._fetch()
            assert self._keys is not None
            known = kid is None or any(k.kid == kid for k in self._keys.keys)
            if not known and kid is not None and len(kid) <= _MAX_KID_LENGTH:
                last = self._missing.get(kid)
                if last is None or self._monotonic_s() - last >= MISSING_KID_RETRY_S:
                    self._missing[kid] = self._monotonic_s()
                    self._missing.move_to_end(kid)
                    while len(self._missing) > _MISSING_KID_ENTRIES:
                        self._missing.popitem(last=False)
                    log.info("a token names key id %r, not in the JWKS of %s: fetching it again",
                             kid, self.url)
                    self._fetch()
            return self._keys

    def validate(self, token: str) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenRefused("the token is not a JWT (three dot-separated parts)")
        header = _b64json(parts[0], "header")
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise TokenRefused(f"the token's algorithm {alg!r} is not allowed: must be one of "
                               f"{', '.join(ALGORITHMS)} (signed with a key of {self.url})")
        kid = header.get("kid")
        keys = self._key_set(kid if isinstance(kid, str) else None)
        try:
            decoded = jwt.decode(token, keys, algorithms=list(ALGORITHMS))
        except jose_errors.InvalidKeyIdError:
            raise TokenRefused(f"the token is signed by key id {kid!r}, which the JWKS of "
                               f"{self.url} does not hold") from None
        except jose_errors.BadSignatureError:
            raise TokenRefused(f"the token's signature does not verify with key {kid!r} of "
                               f"{self.url}") from None
        except (jose_errors.JoseError, ValueError) as e:
            raise TokenRefused(f"the token does not verify against {self.url} ({e})") from None
        return self._claims.check(decoded.claims)


Validator = UnsecuredValidator | JwksValidator


def validator(config: OAuthBearerConfig, now: Callable[[], float] = time.time) -> Validator:
    """The validator the options ask for (see the module docstring)."""
    if config.jwks_endpoint_url is not None:
        return JwksValidator(config, now)
    return UnsecuredValidator(config, now)


def parse_initial_response(message: bytes) -> tuple[str, str, dict[str, str]]:
    """RFC 7628's client initial response -> (authorization id, token, extensions)."""
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationFailed("OAUTHBEARER: the client's message is not UTF-8") from None
    gs2, sep, rest = text.partition("\x01")
    fields = gs2.split(",")
    if not sep or not rest.endswith("\x01\x01") or len(fields) != 3 or fields[0] != "n" or fields[2]:
        raise SaslAuthenticationFailed(
            "OAUTHBEARER: malformed client message (expected 'n,,\\x01auth=Bearer <token>\\x01\\x01')")
    authzid = fields[1][2:] if fields[1].startswith("a=") else ""
    if fields[1] and not fields[1].startswith("a="):
        raise SaslAuthenticationFailed("OAUTHBEARER: malformed authorization id in the GS2 header")
    pairs: dict[str, str] = {}
    for item in rest[:-2].split("\x01"):
        key, eq, value = item.partition("=")
        if not eq:
            raise SaslAuthenticationFailed(f"OAUTHBEARER: malformed key=value {item!r}")
        pairs[key] = value
    auth = pairs.pop("auth", "")
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise SaslAuthenticationFailed("OAUTHBEARER: no 'auth=Bearer <token>' in the client's message")
    return authzid, token.strip(), pairs


class OAuthBearerServer:
    """One OAUTHBEARER exchange (see the module docstring). Not thread-safe: one
    connection's handler at a time, as :class:`~.sasl_server.SaslServer`."""

    mechanism = MECHANISM

    def __init__(self, validate: Callable[[str], ValidToken]) -> None:
        self._validate = validate
        self._refusal: str | None = None
        self.username: str | None = None
        self.expires_at: float | None = None
        self.complete = False

    def evaluate(self, message: bytes) -> bytes:
        if self._refusal is not None:
            if bytes(message) == b"\x01":
                raise SaslAuthenticationFailed(self._refusal)
            raise SaslAuthenticationFailed("OAUTHBEARER: after an error challenge the client must "
                                           "answer \\x01")
        authzid, token, _extensions = parse_initial_response(bytes(message))
        try:
            valid = self._validate(token)
        except TokenRefused as e:
            self._refusal = f"Authentication failed: the OAUTHBEARER token was refused: {e}"
            return json.dumps({"status": "invalid_token"}, separators=(",", ":")).encode()
        if authzid and authzid != valid.principal_name:
            raise SaslAuthenticationFailed(
                f"Authentication failed: the client asked for authorization id {authzid!r}, "
                f"other than the token's principal {valid.principal_name!r}")
        self.username, self.expires_at, self.complete = valid.principal_name, valid.expires_at, True
        return b""
