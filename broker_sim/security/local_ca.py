"""A throwaway certificate authority for local clusters, tests and notebooks.

:class:`LocalCA` makes a CA key and self-signed certificate in a directory and issues
certificates signed by it, using the ``cryptography`` package (no hand-written crypto)::

    ca = LocalCA(tmp_dir)
    broker = ca.issue("broker", hosts=["127.0.0.1", "localhost"])   # for ssl.keystore.location
    client = ca.issue("client")                                       # for mutual TLS
    ca.ca_path                                                        # for trust stores

Each issued identity is written three ways: ``<name>.pem`` (private key + certificate +
CA certificate: Kafka's PEM keystore), ``<name>.crt`` and ``<name>.key`` (librdkafka's
``ssl.certificate.location`` / ``ssl.key.location``). Keys are P-256 EC keys, unencrypted
unless ``password`` is given. Certificates last ``days`` days. Never use these outside a
test cluster: anyone with the directory can mint certificates.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Identity:
    """Files of one issued certificate (see the module docstring)."""

    name: str
    pem: Path
    cert: Path
    key: Path
    subject: str  # RFC 4514, as a Kafka principal names it: "CN=client,O=pyq"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pyq"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key_pem(key: ec.EllipticCurvePrivateKey, password: str | None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password.encode()) if password
        else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


class LocalCA:
    def __init__(self, directory: str | Path, common_name: str = "pyq throwaway CA",
                 days: int = 30) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.days = days
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(self._key, hashes.SHA256()))
        self.ca_path = self.directory / "ca.crt"
        self.ca_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, name: str, hosts: list[str] | tuple[str, ...] = ("127.0.0.1", "localhost"),
              password: str | None = None) -> Identity:
        """A certificate for ``name`` (its CN), valid for server and client use on ``hosts``."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        alt_names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                alt_names.append(x509.DNSName(host))
        subject = _name(name)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(self._cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=self.days))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        ca_pem = self._cert.public_bytes(serialization.Encoding.PEM)
        key_pem = _key_pem(key, password)
        paths = Identity(name, self.directory / f"{name}.pem", self.directory / f"{name}.crt",
                         self.directory / f"{name}.key", subject.rfc4514_string())
        paths.pem.write_bytes(key_pem + cert_pem + ca_pem)
        paths.cert.write_bytes(cert_pem + ca_pem)
        paths.key.write_bytes(key_pem)
        for p in (paths.pem, paths.key):
            p.chmod(0o600)
        return paths
