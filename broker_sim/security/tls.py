"""TLS contexts from Kafka's store options, built with Python's ``ssl`` module.

Broker side (``ssl.keystore.type=PEM``): ``ssl.keystore.location`` is one PEM file with the
private key and the certificate chain, ``ssl.key.password`` its key's password (if
encrypted), ``ssl.truststore.location`` the CA bundle client certificates are checked
against, and ``ssl.client.auth`` none | requested | required (mutual TLS).

Client side (librdkafka's names): ``ssl.ca.location`` the CA bundle that signs the brokers'
certificates, ``ssl.certificate.location``/``ssl.key.location`` a client certificate and
key (they may be the same file), ``ssl.key.password``, and
``ssl.endpoint.identification.algorithm`` https (check the host name, the default) or none.

Either side may give Java's stores instead of PEM files: ``ssl.truststore.type`` /
``ssl.keystore.type`` PKCS12 or JKS with their ``.password`` (read by :mod:`.stores`).

TLS 1.2 is the minimum on both sides.
"""

from __future__ import annotations

import ssl

from .stores import key_entry, load_key_entry, trusted_pem

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(keystore: str, key_password: str | None = None, truststore: str | None = None,
                   client_auth: str = "none", *, keystore_type: str = "PEM",
                   keystore_password: str | None = None, truststore_type: str = "PEM",
                   truststore_password: str | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_key(ctx, keystore, None, key_password, keystore_type, keystore_password)
    if truststore:
        _load_trust(ctx, truststore, truststore_type, truststore_password)
    ctx.verify_mode = CLIENT_AUTH[client_auth]
    return ctx


def client_context(ca_location: str | None = None, certificate_location: str | None = None,
                   key_location: str | None = None, key_password: str | None = None,
                   check_hostname: bool = True, *, truststore_type: str = "PEM",
                   truststore_password: str | None = None, keystore_type: str = "PEM",
                   keystore_password: str | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca_location:
        _load_trust(ctx, ca_location, truststore_type, truststore_password)
    else:
        ctx.load_default_certs()
    ctx.check_hostname = check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    if certificate_location:
        _load_key(ctx, certificate_location, key_location, key_password, keystore_type,
                  keystore_password)
    return ctx


def _load_trust(ctx: ssl.SSLContext, location: str, store_type: str, password: str | None) -> None:
    if store_type == "PEM":
        ctx.load_verify_locations(cafile=location)
    else:
        ctx.load_verify_locations(cadata=trusted_pem(location, store_type, password))


def _load_key(ctx: ssl.SSLContext, location: str, key_location: str | None,
              key_password: str | None, store_type: str, store_password: str | None) -> None:
    if store_type == "PEM":
        ctx.load_cert_chain(location, keyfile=key_location or None, password=key_password)
    else:
        load_key_entry(ctx, key_entry(location, store_type, store_password, key_password))
