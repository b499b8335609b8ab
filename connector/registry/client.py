"""A small client of the Confluent Schema Registry REST API, for the command line, the
Spark source and :mod:`connector.functions` (one client for all three).

Why not confluent-kafka's ``SchemaRegistryClient``: confluent-kafka is a development
dependency of pyq (the judge its tests use), not a runtime one, and none of the runtime
dependencies is an HTTP client (werkzeug serves HTTP, it does not request it). The
standard library's :mod:`urllib.request` does what is needed here: one JSON request per
call, TLS with a CA file (and a client certificate), HTTP basic credentials. It works against any registry speaking
the API (pyq's, Confluent's, Karapace, Redpanda, Apicurio's compatibility layer).

Every refusal of the registry (``{"error_code": CODE, "message": TEXT}``) is raised as a
:class:`RegistryRefusal` (a :class:`RegistryError`, which ``pyq`` prints as one line and
exits 1)::

    pyq schemas get: error: Subject 'nope' not found. (registry error 40401)

A registry that cannot be reached is a :class:`RegistryError` naming every URL tried.

Threading: a client holds no per-request state; calls from several threads are fine.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from broker_sim.protocol.errors import PyqError

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryError(PyqError):
    """The registry could not be used (unreachable, or an answer that is not the API's);
    the message is complete on its own."""


class RegistryRefusal(RegistryError):
    """The registry answered with an error: its HTTP status, error code and message."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(f"{message} (registry error {error_code})")
        self.status = status
        self.error_code = error_code
        self.message = message


class RegistryClient:
    """Requests to the registry at ``urls`` (comma-separated; the next is tried when one
    cannot be reached), with an optional CA file, client certificate and key, and
    ``user:password`` basic credentials."""

    def __init__(self, urls: str, ca_file: str | None = None, user_info: str | None = None,
                 timeout_s: float = 30.0, cert_file: str | None = None,
                 key_file: str | None = None, key_password: str | None = None) -> None:
        self.urls = [u.strip().rstrip("/") for u in urls.split(",") if u.strip()]
        if not self.urls:
            raise RegistryError("no schema registry URL given")
        self.timeout_s = timeout_s
        self._context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        if cert_file:
            self._context = self._context or ssl.create_default_context()
            self._context.load_cert_chain(cert_file, key_file, key_password)
        self._headers = {"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE}
        if user_info:
            token = base64.b64encode(user_info.encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """``method path?params`` with ``body`` as JSON; the decoded JSON answer."""
        query = {k: str(v).lower() if isinstance(v, bool) else str(v)
                 for k, v in params.items() if v is not None and v is not False}
        suffix = path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode()
        unreachable: list[str] = []
        for url in self.urls:
            req = urllib.request.Request(url + suffix, data=data, method=method,
                                         headers=self._headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s,
                                            context=self._context) as answer:
                    return json.loads(answer.read() or b"null")
            except urllib.error.HTTPError as e:
                raise _refusal(e) from None
            except (urllib.error.URLError, OSError) as e:
                reason = getattr(e, "reason", e)
                unreachable.append(f"{url} ({getattr(reason, 'strerror', None) or reason})")
                if isinstance(reason, ssl.SSLCertVerificationError) and self._context is None:
                    unreachable[-1] += " (its CA: --registry-ca FILE)"
        raise RegistryError(f"cannot reach the schema registry: {', '.join(unreachable)}")

    # ---- the API, one method per call the CLI makes ------------------------------------
    def subjects(self, deleted: bool = False) -> list[str]:
        return list(self.request("GET", "/subjects", deleted=deleted))

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        return list(self.request("GET", f"/subjects/{_quote(subject)}/versions", deleted=deleted))

    def version(self, subject: str, version: str, deleted: bool = False) -> dict[str, Any]:
        return dict(self.request("GET", f"/subjects/{_quote(subject)}/versions/{version}",
                                 deleted=deleted))

    def schema_by_id(self, schema_id: int) -> dict[str, Any]:
        return dict(self.request("GET", f"/schemas/ids/{schema_id}"))

    def register(self, subject: str, schema: dict[str, Any]) -> int:
        return int(self.request("POST", f"/subjects/{_quote(subject)}/versions", schema)["id"])

    def check(self, subject: str, schema: dict[str, Any], version: str | None) -> dict[str, Any]:
        path = f"/compatibility/subjects/{_quote(subject)}/versions"
        if version is not None:
            path += f"/{version}"
        return dict(self.request("POST", path, schema, verbose=True))

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        return list(self.request("DELETE", f"/subjects/{_quote(subject)}", permanent=permanent))

    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        return int(self.request("DELETE", f"/subjects/{_quote(subject)}/versions/{version}",
                                permanent=permanent))

    def get_config(self, subject: str | None) -> dict[str, Any]:
        if subject is None:
            return dict(self.request("GET", "/config"))
        return dict(self.request("GET", f"/config/{_quote(subject)}", defaultToGlobal=True))

    def set_config(self, subject: str | None, level: str) -> dict[str, Any]:
        path = "/config" if subject is None else f"/config/{_quote(subject)}"
        return dict(self.request("PUT", path, {"compatibility": level}))


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _refusal(error: urllib.error.HTTPError) -> RegistryError:
    """The registry's error body as a RegistryRefusal; an answer that is not one (a proxy's
    page, a server without the API) as a RegistryError with the HTTP status."""
    text = error.read().decode("utf-8", "replace")
    try:
        body = json.loads(text)
        return RegistryRefusal(error.code, int(body["error_code"]), str(body["message"]))
    except (ValueError, KeyError, TypeError):
        shown = " ".join(text.split())[:200] or error.reason
        return RegistryError(f"the schema registry answered HTTP {error.code}: {shown}")
