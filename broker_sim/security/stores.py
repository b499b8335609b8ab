"""Trust and key stores in Kafka's three formats, turned into what ``ssl.SSLContext`` takes.

``ssl.truststore.type`` / ``ssl.keystore.type`` is one of :data:`STORE_TYPES`:

* ``PEM``: the files are read by ``ssl`` itself (see :mod:`.tls`);
* ``PKCS12``: read with ``cryptography`` (``pkcs12.load_key_and_certificates``), opened with
  ``ssl.truststore.password`` / ``ssl.keystore.password`` (``ssl.key.password``, if given,
  must equal the store password: PKCS12 has one);
* ``JKS``: read with ``pyjks`` (the ``[jks]`` extra: it needs a C compiler for twofish;
  without it a JKS store is refused naming PKCS12 and the keytool command converting to it);
  the store password checks the store's integrity, the key entry is decrypted with
  ``ssl.key.password`` (default: the store password), as Java does.

A trust store becomes in-memory PEM text for ``load_verify_locations(cadata=...)``. A key
store's key and chain are handed to ``load_cert_chain``, which only reads a file: they are
written, the key encrypted with a random one-time passphrase, to an anonymous in-memory file
(``memfd_create``, Linux) or, elsewhere, to a ``mkstemp`` file (mode 0600, owner only) that is
removed as soon as ``ssl`` has read it. No key material is left in a file anyone can read.

Every failure raises :class:`StoreError` naming the option, its value (never a password) and
what is allowed; callers turn it into their own configuration error at construction.
"""

from __future__ import annotations

import os
import secrets
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from ..protocol.errors import ConfigError

STORE_TYPES = ("PEM", "PKCS12", "JKS")


class StoreError(ConfigError):
    """A store that cannot be used: ``option`` and ``value`` name what the user set."""

    def __init__(self, option: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {option}: {reason}")
        self.option = option
        self.value = value


def parse_store_type(value: Any, option: str) -> str:
    """``value`` as one of :data:`STORE_TYPES` (any case), or StoreError naming ``option``."""
    text = str(value).strip().upper()
    if text not in STORE_TYPES:
        raise StoreError(option, value, "must be one of " + ", ".join(STORE_TYPES))
    return text


@dataclass(frozen=True)
class KeyEntry:
    """A private key and its certificate chain (leaf first), from a key store."""

    key: Any
    chain: tuple[x509.Certificate, ...]


def _read(location: str, option: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as e:
        raise StoreError(option, location, f"must be a readable store file ({e.strerror})") from None


def _pkcs12(data: bytes, location: str, prefix: str, password: str | None) -> tuple[Any, Any, list[Any]]:
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password is not None else None)
    except ValueError:
        hint = f"{prefix}.password is wrong" if password is not None else f"{prefix}.password is not set"
        raise StoreError(f"{prefix}.location", location,
                         f"cannot open it as PKCS12: {hint}, or it is not a PKCS12 file "
                         f"(set {prefix}.type to its format: {', '.join(STORE_TYPES)})") from None


def _jks(data: bytes, location: str, prefix: str, password: str | None) -> Any:
    try:
        import jks  # pyjks ships no type stubs (ignore_missing_imports)
    except ImportError:
        raise StoreError(f"{prefix}.type", "JKS", "JKS stores need pyjks (pip install "
                         "'pyq-stream[jks]'; it builds the twofish C extension); or convert the "
                         "store to PKCS12, which pyq reads as it is: keytool -importkeystore "
                         f"-srckeystore {location} -destkeystore <new file> "
                         "-deststoretype PKCS12") from None

    if password is None:
        raise StoreError(f"{prefix}.password", None, f"a JKS {prefix.rsplit('.', 1)[-1]} needs "
                         "its store password")
    try:
        return jks.KeyStore.loads(data, password, try_decrypt_keys=False)
    except jks.KeystoreSignatureException:
        raise StoreError(f"{prefix}.location", location,
                         f"{prefix}.password is wrong (the store's integrity check fails)") from None
    except (jks.BadKeystoreFormatException, jks.UnsupportedKeystoreVersionException, ValueError):
        raise StoreError(f"{prefix}.location", location,
                         f"it is not a JKS store (set {prefix}.type to its format: "
                         f"{', '.join(STORE_TYPES)})") from None


def trusted_pem(location: str, store_type: str, password: str | None,
                prefix: str = "ssl.truststore") -> str:
    """The certificates of a PKCS12 or JKS trust store as PEM text (``cadata``)."""
    data = _read(location, f"{prefix}.location")
    certs: list[x509.Certificate] = []
    if store_type == "PKCS12":
        _, cert, extra = _pkcs12(data, location, prefix, password)
        certs = ([cert] if cert is not None else []) + list(extra)
    elif store_type == "JKS":
        store = _jks(data, location, prefix, password)
        certs = [x509.load_der_x509_certificate(e.cert) for e in store.certs.values()]
        certs += [x509.load_der_x509_certificate(der) for e in store.private_keys.values()
                  for _, der in e.cert_chain[-1:]]
    else:
        raise StoreError(f"{prefix}.type", store_type, "trusted_pem reads PKCS12 or JKS")
    if not certs:
        raise StoreError(f"{prefix}.location", location, "the store holds no certificate to trust")
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)


def key_entry(location: str, store_type: str, password: str | None, key_password: str | None,
              prefix: str = "ssl.keystore") -> KeyEntry:
    """The one private key entry of a PKCS12 or JKS key store, with its chain."""
    data = _read(location, f"{prefix}.location")
    if store_type == "PKCS12":
        key, cert, extra = _pkcs12(data, location, prefix, password if password is not None
                                   else key_password)
        if key_password is not None and password is not None and key_password != password:
            raise StoreError("ssl.key.password", "(hidden)", f"must equal {prefix}.password for a "
                             "PKCS12 store (PKCS12 has one password), or be left unset")
        if key is None or cert is None:
            raise StoreError(f"{prefix}.location", location, "the store holds no private key "
                             "entry (a key store needs the key and its certificate; this looks "
                             "like a trust store)")
        return KeyEntry(key, (cert, *extra))
    if store_type != "JKS":
        raise StoreError(f"{prefix}.type", store_type, "key_entry reads PKCS12 or JKS")
    store = _jks(data, location, prefix, password)
    import jks  # present: _jks read the store with it
    entries = list(store.private_keys.values())
    if not entries:
        raise StoreError(f"{prefix}.location", location, "the store holds no private key entry "
                         "(a key store needs the key and its certificate; this looks like a "
                         "trust store)")
    if len(entries) > 1:
        raise StoreError(f"{prefix}.location", location, f"the store holds {len(entries)} private "
                         f"key entries ({', '.join(sorted(store.private_keys))}); pyq needs one")
    entry = entries[0]
    try:
        entry.decrypt(key_password if key_password is not None else password)
    except jks.DecryptionFailureException:
        raise StoreError("ssl.key.password" if key_password is not None else f"{prefix}.password",
                         "(hidden)", f"does not decrypt the key entry '{entry.alias}' of {location}") \
            from None
    key = serialization.load_der_private_key(entry.pkey_pkcs8, None)
    chain = tuple(x509.load_der_x509_certificate(der) for _, der in entry.cert_chain)
    return KeyEntry(key, chain)


def load_key_entry(ctx: ssl.SSLContext, entry: KeyEntry) -> None:
    """``ctx.load_cert_chain`` from ``entry`` without leaving key material in a readable file."""
    passphrase = secrets.token_bytes(32)
    pem = entry.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(passphrase))
    pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in entry.chain)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("pyq-keystore", os.MFD_CLOEXEC)
        try:
            os.write(fd, pem)
            ctx.load_cert_chain(f"/proc/self/fd/{fd}", password=passphrase)
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="pyq-keystore-", suffix=".pem")  # mode 0600
    try:
        os.write(fd, pem)
        os.close(fd)
        ctx.load_cert_chain(path, password=passphrase)
    finally:
        os.unlink(path)
