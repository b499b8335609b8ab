"""The Confluent Schema Registry REST API as a WSGI application, on werkzeug.

Why werkzeug: it is the WSGI toolkit Flask is built on, kept up to date by the Pallets
project, with a routing map that answers an unknown path 404 and a known path with the
wrong method 405 by itself, request parsing (query strings, basic ``Authorization``
headers) and a threaded development server that serves TLS from an ``ssl.SSLContext``
(:mod:`.server` runs it). The registry's handlers are synchronous (they block on the
``_schemas`` topic), so a thread per request -- what the threaded server gives -- fits, and
nothing needs an event loop (the ASGI alternative, starlette + uvicorn, would bring one
and the threads anyway).

:class:`RegistryApp` maps each route to a :class:`~.registry.SchemaRegistry` method.
Every answer is JSON with content type ``application/vnd.schemaregistry.v1+json``; a
refusal is ``{"error_code": CODE, "message": TEXT}`` (:mod:`.errors`). Bodies larger than
``max_body_bytes`` are refused with 413 from their Content-Length, before being read; a
body that is not JSON gets 400; an unexpected exception gets 500/50001 and a log line,
and the registry goes on serving.

With ``authenticate`` (a ``(user, password) -> bool``, the broker's SCRAM users) every
request needs HTTP basic credentials that it accepts, else 401.

Threading: the app holds no per-request state; any number of server threads call it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.exceptions import HTTPException, MethodNotAllowed, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.wrappers import Request, Response

from . import json_schema
from .errors import RegistryError, bad_request
from .formats import SCHEMA_TYPES
from .registry import MAX_SCHEMA_BYTES, SchemaRegistry

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
#: A body may hold a schema of MAX_SCHEMA_BYTES escaped into JSON, and its references.
MAX_BODY_BYTES = 4 * MAX_SCHEMA_BYTES

_ROUTES = [
    ("/", "root", ["GET"]),
    ("/schemas/types", "schema_types", ["GET"]),
    ("/schemas/ids/<schema_id>", "schema_by_id", ["GET"]),
    ("/schemas/ids/<schema_id>/schema", "schema_text_by_id", ["GET"]),
    ("/schemas/ids/<schema_id>/versions", "id_versions", ["GET"]),
    ("/schemas/ids/<schema_id>/subjects", "id_subjects", ["GET"]),
    ("/subjects", "subjects", ["GET"]),
    ("/subjects/<subject>", "subject", ["POST", "DELETE"]),
    ("/subjects/<subject>/versions", "versions", ["GET", "POST"]),
    ("/subjects/<subject>/versions/<version>", "version", ["GET", "DELETE"]),
    ("/subjects/<subject>/versions/<version>/schema", "version_schema", ["GET"]),
    ("/subjects/<subject>/versions/<version>/referencedby", "referenced_by", ["GET"]),
    ("/config", "config", ["GET", "PUT", "DELETE"]),
    ("/config/<subject>", "config", ["GET", "PUT", "DELETE"]),
    ("/mode", "mode", ["GET", "PUT"]),
    ("/mode/<subject>", "mode", ["GET", "PUT", "DELETE"]),
    ("/compatibility/subjects/<subject>/versions", "compatibility", ["POST"]),
    ("/compatibility/subjects/<subject>/versions/<version>", "compatibility", ["POST"]),
]


def _flag(request: Request, name: str) -> bool:
    return request.args.get(name, "false").strip().lower() == "true"


def _normalized(request: Request, body: Any) -> Any:
    """``normalize=true`` asks for a schema's normal form before it is compared or stored.
    A JSON Schema has one here (keys sorted, :func:`.json_schema.normalized`, references
    sorted, as Confluent's); Avro and Protobuf are compared by their canonical forms
    (:mod:`.formats`) with no further normal form, so the flag is refused for them rather
    than ignored."""
    if not _flag(request, "normalize"):
        return body
    if isinstance(body, dict) and body.get("schemaType") == "JSON" and \
            isinstance(body.get("schema"), str):
        refs = body.get("references") or []
        try:
            refs = sorted(refs, key=lambda r: (r["name"], r["subject"], r["version"]))
        except (TypeError, KeyError):
            pass  # malformed: refused by the parse with its reason
        return {**body, "schema": json_schema.normalized(body["schema"]), "references": refs}
    kind = (body.get("schemaType") or "AVRO") if isinstance(body, dict) else "AVRO"
    raise bad_request(f"normalize=true is not supported by pyq's schema registry for {kind} "
                      "schemas (they are compared by their canonical forms; JSON schemas take "
                      "it); send normalize=false")


class RawText(str):
    """A body sent as it is, not encoded as JSON (a Protobuf schema's text)."""


def _schema_only(described: dict[str, Any]) -> Any:
    """The ``.../schema`` endpoints' body: the schema itself -- an Avro or JSON schema as the
    JSON it is, a Protobuf schema as its text (or base64 descriptor), as Confluent's."""
    if described.get("schemaType") == "PROTOBUF":
        return RawText(described["schema"])
    return json.loads(described["schema"])


def _json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> Response:
    body = payload if isinstance(payload, RawText) else json.dumps(payload, ensure_ascii=False)
    return Response(body, status=status,
                    content_type=CONTENT_TYPE, headers=headers)


class RegistryApp:
    """The WSGI application (see the module docstring)."""

    def __init__(self, registry: SchemaRegistry,
                 authenticate: Callable[[str, str], bool] | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.registry = registry
        self.authenticate = authenticate
        self.max_body_bytes = max_body_bytes
        self.url_map = Map([Rule(path, endpoint=endpoint, methods=methods)
                            for path, endpoint, methods in _ROUTES], strict_slashes=False)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        response = self.respond(request)
        return response(environ, start_response)

    def respond(self, request: Request) -> Response:
        try:
            self._check_auth(request)
            adapter = self.url_map.bind_to_environ(request.environ)
            endpoint, args = adapter.match()
            status, payload = getattr(self, f"_{endpoint}")(request, **args)
            return _json_response(status, payload)
        except RegistryError as e:
            headers = {"WWW-Authenticate": 'Basic realm="pyq schema registry"'} \
                if e.status == 401 else None
            return _json_response(e.status, e.to_json(), headers)
        except MethodNotAllowed as e:
            return _json_response(405, {"error_code": 405, "message":
                                        f"HTTP 405 Method Not Allowed: {request.method} "
                                        f"{request.path} (allowed: {', '.join(e.valid_methods or [])})"},
                                  {"Allow": ", ".join(e.valid_methods or [])})
        except NotFound:
            return _json_response(404, {"error_code": 404,
                                        "message": f"HTTP 404 Not Found: {request.path}"})
        except HTTPException as e:
            code = e.code or 400
            return _json_response(code, {"error_code": code, "message": e.description or str(e)})
        except Exception as e:
            log.exception("schema registry: %s %s failed", request.method, request.path)
            return _json_response(500, {"error_code": 50001,
                                        "message": f"Internal error: {type(e).__name__}: {e}"})

    def _check_auth(self, request: Request) -> None:
        if self.authenticate is None:
            return
        auth = request.authorization
        if auth is None or auth.type != "basic" or not auth.username:
            raise RegistryError(401, 401, "Unauthorized: HTTP basic credentials are required")
        if not self.authenticate(auth.username, auth.password or ""):
            raise RegistryError(401, 401, "Unauthorized: invalid username or password")

    def _body(self, request: Request) -> Any:
        length = request.content_length
        if length is not None and length > self.max_body_bytes:
            raise RegistryError(413, 413, f"Request body too large: {length} bytes, the limit "
                                f"is {self.max_body_bytes}")
        raw = request.stream.read(self.max_body_bytes + 1)
        if len(raw) > self.max_body_bytes:
            raise RegistryError(413, 413, f"Request body too large: over {self.max_body_bytes} "
                                "bytes")
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request(f"Malformed JSON body: {e}") from None

    # ---- endpoints: each returns (status, JSON payload) ---------------------------------
    def _root(self, request: Request) -> tuple[int, Any]:
        return 200, {}

    def _schema_types(self, request: Request) -> tuple[int, Any]:
        return 200, list(SCHEMA_TYPES)

    def _schema_by_id(self, request: Request, schema_id: str) -> tuple[int, Any]:
        return 200, self.registry.schema_by_id(schema_id, request.args.get("format"))

    def _schema_text_by_id(self, request: Request, schema_id: str) -> tuple[int, Any]:
        return 200, _schema_only(self.registry.schema_by_id(schema_id, request.args.get("format")))

    def _id_versions(self, request: Request, schema_id: str) -> tuple[int, Any]:
        return 200, self.registry.id_versions(schema_id, _flag(request, "deleted"))

    def _id_subjects(self, request: Request, schema_id: str) -> tuple[int, Any]:
        return 200, self.registry.id_subjects(schema_id, _flag(request, "deleted"))

    def _subjects(self, request: Request) -> tuple[int, Any]:
        return 200, self.registry.subjects(_flag(request, "deleted"))

    def _subject(self, request: Request, subject: str) -> tuple[int, Any]:
        if request.method == "POST":
            return 200, self.registry.lookup(subject, _normalized(request, self._body(request)),
                                             _flag(request, "deleted"))
        return 200, self.registry.delete_subject(subject, _flag(request, "permanent"))

    def _versions(self, request: Request, subject: str) -> tuple[int, Any]:
        if request.method == "POST":
            return 200, self.registry.register(subject, _normalized(request, self._body(request)))
        return 200, self.registry.versions(subject, _flag(request, "deleted"))

    def _version(self, request: Request, subject: str, version: str) -> tuple[int, Any]:
        if request.method == "DELETE":
            return 200, self.registry.delete_version(subject, version, _flag(request, "permanent"))
        return 200, self.registry.get_version(subject, version, _flag(request, "deleted"),
                                              request.args.get("format"))

    def _version_schema(self, request: Request, subject: str, version: str) -> tuple[int, Any]:
        described = self.registry.get_version(subject, version, _flag(request, "deleted"),
                                              request.args.get("format"))
        return 200, _schema_only(described)

    def _referenced_by(self, request: Request, subject: str, version: str) -> tuple[int, Any]:
        return 200, self.registry.referenced_by(subject, version)

    def _config(self, request: Request, subject: str | None = None) -> tuple[int, Any]:
        if request.method == "PUT":
            return 200, self.registry.set_config(subject, self._body(request))
        if request.method == "DELETE":
            return 200, self.registry.delete_config(subject)
        return 200, self.registry.get_config(subject, _flag(request, "defaultToGlobal"))

    def _mode(self, request: Request, subject: str | None = None) -> tuple[int, Any]:
        if request.method == "PUT":
            return 200, self.registry.set_mode(subject, self._body(request), _flag(request, "force"))
        if request.method == "DELETE":
            assert subject is not None  # the route without a subject takes no DELETE
            return 200, self.registry.delete_mode(subject)
        return 200, self.registry.get_mode(subject, _flag(request, "defaultToGlobal"))

    def _compatibility(self, request: Request, subject: str,
                       version: str | None = None) -> tuple[int, Any]:
        return 200, self.registry.check_compatibility(
            subject, version, _normalized(request, self._body(request)), _flag(request, "verbose"))
