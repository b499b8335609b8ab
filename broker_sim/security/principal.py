"""Kafka principals: ``User:<name>`` strings, as ACLs and ``super.users`` name them.

PLAINTEXT connections are ``User:ANONYMOUS``; SASL connections are ``User:<sasl user>``;
SSL connections with a verified client certificate are ``User:<subject DN>`` in RFC 4514
form (``User:CN=client,O=pyq``), as Kafka's default principal builder makes them, and
``User:ANONYMOUS`` without one.
"""

from __future__ import annotations

from cryptography import x509

ANONYMOUS = "User:ANONYMOUS"


def user(name: str) -> str:
    return f"User:{name}"


def from_certificate(der: bytes | None) -> str:
    if not der:
        return ANONYMOUS
    return user(x509.load_der_x509_certificate(der).subject.rfc4514_string())
