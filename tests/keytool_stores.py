"""Java trust and key stores written by Java's own ``keytool``, from certificates of a LocalCA.

:func:`truststore` imports a CA certificate into a new JKS or PKCS12 store; :func:`keystore`
imports an issued identity's key and chain (handed over as a ``cryptography``-made PKCS12
file, the only way keytool takes a foreign key) into a new JKS or PKCS12 store, whose key
password may differ from the store password for JKS, as Java allows. keytool wants passwords
of at least 6 characters.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from broker_sim.security.local_ca import Identity


def _keytool(*args: str) -> None:
    done = subprocess.run(["keytool", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"keytool {args[0]} failed: {done.stdout}{done.stderr}"


def truststore(ca_pem: Path, path: Path, store_type: str, password: str) -> Path:
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore",
             str(path), "-storetype", store_type, "-storepass", password)
    return path


def keystore(identity: Identity, path: Path, store_type: str, password: str,
             key_password: str | None = None) -> Path:
    blob = identity.pem.read_bytes()
    key = serialization.load_pem_private_key(blob, None)
    chain = x509.load_pem_x509_certificates(blob)
    source = path.with_suffix(".source.p12")
    source.write_bytes(pkcs12.serialize_key_and_certificates(
        identity.name.encode(), key, chain[0], chain[1:],  # type: ignore[arg-type]
        serialization.BestAvailableEncryption(b"source")))
    _keytool("-importkeystore", "-noprompt", "-srckeystore", str(source), "-srcstoretype",
             "PKCS12", "-srcstorepass", "source", "-destkeystore", str(path), "-deststoretype",
             store_type, "-deststorepass", password, "-destkeypass", key_password or password)
    source.unlink()
    return path
