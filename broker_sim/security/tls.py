"""TLS contexts from Kafka's PEM options, built with Python's ``ssl`` module.

Broker side (``ssl.keystore.type=PEM``): ``ssl.keystore.location`` is one PEM file with the
private key and the certificate chain, ``ssl.key.password`` its key's password (if
encrypted), ``ssl.truststore.location`` the CA bundle client certificates are checked
against, and ``ssl.client.auth`` none | requested | required (mutual TLS).

Client side (librdkafka's names): ``ssl.ca.location`` the CA bundle that signs the brokers'
certificates, ``ssl.certificate.location``/``ssl.key.location`` a client certificate and
key (they may be the same file), ``ssl.key.password``, and
``ssl.endpoint.identification.algorithm`` https (check the host name, the default) or none.

TLS 1.2 is the minimum on both sides.
"""

from __future__ import annotations

import ssl

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


def server_context(keystore: str, key_password: str | None = None, truststore: str | None = None,
                   client_auth: str = "none") -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(keystore, password=key_password)
    if truststore:
        ctx.load_verify_locations(cafile=truststore)
    ctx.verify_mode = CLIENT_AUTH[client_auth]
    return ctx


def client_context(ca_location: str | None = None, certificate_location: str | None = None,
                   key_location: str | None = None, key_password: str | None = None,
                   check_hostname: bool = True) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca_location:
        ctx.load_verify_locations(cafile=ca_location)
    else:
        ctx.load_default_certs()
    ctx.check_hostname = check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    if certificate_location:
        ctx.load_cert_chain(certificate_location, keyfile=key_location or None, password=key_password)
    return ctx
