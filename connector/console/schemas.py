"""``/schemas``: the subjects of the schema registry the console is given (``pyq console
--schema-registry URL``, with ``--registry-ca`` and ``--registry-user`` as ``pyq schemas``
spells them), each with its versions and compatibility level; ``/schemas/S`` one version
(``?version=N``, default the latest): its id, type, references and the schema text,
pretty-printed (:func:`pretty`).

Without a registry the page says so. A refusal of the registry (an unknown subject or
version) is shown as the page's error, as a cluster's is.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, current_app, render_template, request

from connector.registry.client import RegistryClient

from .forms import FormError

blueprint = Blueprint("schemas", __name__)


def registry_of(app: Any) -> RegistryClient | None:
    client: RegistryClient | None = app.extensions.get("pyq_registry")
    return client


def pretty(schema_type: str, text: str) -> str:
    """Avro and JSON Schema as indented JSON; Protobuf as written, or (registered as a
    base64 ``FileDescriptorProto``, as confluent-kafka's serializer does) that descriptor
    in protobuf's text format."""
    if schema_type in ("AVRO", "JSON"):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    if schema_type == "PROTOBUF":
        import base64
        import binascii

        from google.protobuf import descriptor_pb2, text_format
        from google.protobuf.message import DecodeError

        try:
            file = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(text, validate=True))
        except (binascii.Error, DecodeError, ValueError):
            return text
        return ("# a serialized FileDescriptorProto, in protobuf's text format\n"
                + text_format.MessageToString(file))
    return text


@blueprint.route("/schemas")
def subject_list() -> str:
    registry = registry_of(current_app)
    if registry is None:
        return render_template("schemas.html", subjects=None, level=None)
    rows = []
    for subject in sorted(registry.subjects()):
        rows.append({"subject": subject, "versions": registry.versions(subject),
                     "compatibility": registry.get_config(subject).get("compatibilityLevel")})
    level = registry.get_config(None).get("compatibilityLevel")
    return render_template("schemas.html", subjects=rows, level=level)


@blueprint.route("/schemas/<subject>")
def subject_detail(subject: str) -> str:
    registry = registry_of(current_app)
    if registry is None:
        raise FormError("no schema registry: start the console with --schema-registry URL")
    version = (request.args.get("version") or "latest").strip()
    if version != "latest" and not version.isdigit():
        raise FormError(f"version={version!r} is not allowed: must be a version number or "
                        "latest")
    found = registry.version(subject, version)
    schema_type = found.get("schemaType") or "AVRO"
    return render_template("schema.html", subject=subject, found=found, schema_type=schema_type,
                           text=pretty(schema_type, found["schema"]),
                           versions=registry.versions(subject),
                           compatibility=registry.get_config(subject).get("compatibilityLevel"))
