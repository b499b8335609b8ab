"""SCRAM (RFC 5802, RFC 7677) as Kafka uses it: credentials, and both sides of the exchange.

A credential is what a server keeps instead of a password: a random salt, an iteration
count, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")`` with
``SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)``. Knowing it is not enough to
log in (the client proof needs ``ClientKey``), and the password cannot be recovered from it.

The exchange (``H`` is SHA-256 or SHA-512)::

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce><server nonce>,s=<salt b64>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<ClientKey XOR HMAC(StoredKey, AuthMessage) b64>
    server-final   v=<HMAC(ServerKey, AuthMessage) b64>       (or e=<error>)

where ``AuthMessage`` is client-first-bare + "," + server-first + "," + client-final
without its proof. Both sides here are small state machines fed one message at a time;
hashing is ``hashlib``/``hmac`` (C code), never hand-written.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import SaslAuthenticationFailed, UnacceptableCredential

#: Kafka's SCRAM mechanisms, with their hash and their id in the admin APIs (KIP-554).
MECHANISMS: dict[str, tuple[str, int]] = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
MECHANISM_BY_ID = {mech_id: name for name, (_, mech_id) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def escape_username(name: str) -> str:
    """RFC 5802 saslname: ``=`` and ``,`` are written ``=3D`` and ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise SaslAuthenticationFailed(f"invalid SCRAM username {name!r}")
    return name.replace("=2C", ",").replace("=3D", "=")


def salted_password(mechanism: str, password: str | bytes, salt: bytes, iterations: int) -> bytes:
    raw = password.encode("utf-8") if isinstance(password, str) else password
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][0], raw, salt, iterations)


def _hmac(mechanism: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, MECHANISMS[mechanism][0]).digest()


def _hash(mechanism: str, data: bytes) -> bytes:
    return hashlib.new(MECHANISMS[mechanism][0], data).digest()


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise UnacceptableCredential(f"iterations={iterations} is not allowed: must be between "
                                     f"{MIN_ITERATIONS} and {MAX_ITERATIONS}")


@dataclass(frozen=True)
class ScramCredential:
    """What the controller stores for one user and mechanism (see the module docstring)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: str, salted: bytes, salt: bytes,
                             iterations: int) -> ScramCredential:
        client_key = _hmac(mechanism, salted, b"Client Key")
        return cls(salt, _hash(mechanism, client_key), _hmac(mechanism, salted, b"Server Key"),
                   iterations)

    @classmethod
    def from_password(cls, mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                      salt: bytes | None = None) -> ScramCredential:
        salt = os.urandom(32) if salt is None else salt
        return cls.from_salted_password(mechanism, salted_password(mechanism, password, salt, iterations),
                                        salt, iterations)

    def matches_password(self, mechanism: str, password: str) -> bool:
        """Whether ``password`` is the one this credential was made from (used by PLAIN)."""
        salted = salted_password(mechanism, password, self.salt, self.iterations)
        stored = _hash(mechanism, _hmac(mechanism, salted, b"Client Key"))
        return hmac.compare_digest(stored, self.stored_key)

    def to_json(self) -> dict[str, Any]:
        return {"salt": _b64(self.salt), "stored_key": _b64(self.stored_key),
                "server_key": _b64(self.server_key), "iterations": self.iterations}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ScramCredential:
        return cls(_unb64(raw["salt"]), _unb64(raw["stored_key"]), _unb64(raw["server_key"]),
                   int(raw["iterations"]))


def _attributes(message: str) -> dict[str, str]:
    out = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslAuthenticationFailed(f"malformed SCRAM message {message!r}")
        out[key] = value
    return out


class ScramServerExchange:
    """The server's side of one SCRAM exchange: two client messages in, two answers out.

    ``lookup(user)`` returns the user's credential for this mechanism or None. Any failure
    raises SaslAuthenticationFailed with a message naming the mechanism; an unknown user
    and a wrong password get the same message, so neither can be probed.
    """

    def __init__(self, mechanism: str, lookup: Any, nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self.lookup = lookup
        self._own_nonce = nonce  # fixed only to replay published test vectors
        self.username: str | None = None
        self.complete = False
        self._step = 0
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def _fail(self) -> SaslAuthenticationFailed:
        return SaslAuthenticationFailed(
            f"Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self.mechanism}")

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationFailed(f"{self.mechanism}: message is not UTF-8") from None
        if self._step == 0:
            return self._client_first(text)
        if self._step == 1:
            return self._client_final(text)
        raise SaslAuthenticationFailed(f"{self.mechanism}: unexpected message after the exchange ended")

    def _client_first(self, text: str) -> bytes:
        gs2, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise SaslAuthenticationFailed(f"{self.mechanism}: malformed client-first message")
        attrs = _attributes(bare)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise SaslAuthenticationFailed(f"{self.mechanism}: client-first message lacks n= or r=")
        user = unescape_username(attrs["n"])
        if authzid and authzid[2:] != user:
            raise SaslAuthenticationFailed(f"{self.mechanism}: authorization id {authzid[2:]!r} "
                                           f"differs from the user {user!r}")
        credential = self.lookup(user)
        if credential is None:
            raise self._fail()
        self.username, self._credential = user, credential
        self._client_first_bare = bare
        self._nonce = attrs["r"] + (self._own_nonce or _b64(os.urandom(18)).rstrip("="))
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._step = 1
        return self._server_first.encode("utf-8")

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise SaslAuthenticationFailed(f"{self.mechanism}: client-final message lacks a proof")
        attrs = _attributes(without_proof)
        if attrs.get("r") != self._nonce:
            raise SaslAuthenticationFailed(f"{self.mechanism}: nonce mismatch")
        assert self._credential is not None
        try:
            proof = _unb64(proof_part)
        except ValueError:
            raise SaslAuthenticationFailed(f"{self.mechanism}: proof is not base64") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.mechanism, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self._fail()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(_hash(self.mechanism, client_key), self._credential.stored_key):
            raise self._fail()
        self._step = 2
        self.complete = True
        server_signature = _hmac(self.mechanism, self._credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()


class ScramClientExchange:
    """The client's side: ``first()``, then ``final(server_first)``, then ``verify(server_final)``."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}")
        self.mechanism = mechanism
        self.username = username
        self.password = password
        # ``nonce`` is fixed only to replay published test vectors.
        self._nonce = nonce or _b64(os.urandom(24)).rstrip("=")
        self._first_bare = f"n={escape_username(username)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = bytes(server_first).decode("utf-8")
        attrs = _attributes(text)
        if "e" in attrs:
            raise SaslAuthenticationFailed(f"{self.mechanism}: server error {attrs['e']}")
        nonce, salt, iterations = attrs.get("r", ""), _unb64(attrs.get("s", "")), int(attrs.get("i", "0"))
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslAuthenticationFailed(f"{self.mechanism}: the server's nonce does not extend ours")
        if iterations < MIN_ITERATIONS:
            raise SaslAuthenticationFailed(f"{self.mechanism}: {iterations} iterations is too few")
        salted = salted_password(self.mechanism, self.password, salt, iterations)
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = _hash(self.mechanism, client_key)
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = _hmac(self.mechanism, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = _hmac(self.mechanism, salted, b"Server Key")
        self._server_signature = _hmac(self.mechanism, server_key, auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = _attributes(bytes(server_final).decode("utf-8"))
        if "e" in attrs:
            raise SaslAuthenticationFailed(f"{self.mechanism}: server error {attrs['e']}")
        if not hmac.compare_digest(_unb64(attrs.get("v", "")), self._server_signature):
            raise SaslAuthenticationFailed(f"{self.mechanism}: the server's signature is wrong")
