"""The Flask application: the screens' blueprints, and errors rendered in the page."""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

from flask import Flask, render_template, request
from werkzeug.wrappers import Response

from broker_sim.protocol.errors import PyqError

from .clients import ConsoleClients
from .forms import FormError
from .lag_history import LagHistory

HERE = Path(__file__).parent


def create_app(clients: ConsoleClients, schema_registry: str | None = None,
               lag_history: LagHistory | None = None,
               basic_auth: tuple[str, str] | None = None,
               registry_ca: str | None = None, registry_user: str | None = None) -> Flask:
    """The console over ``clients``; the groups pages chart ``lag_history`` (none
    without it). ``schema_registry`` (URLs, comma-separated; with ``registry_ca`` a CA file
    for https and ``registry_user`` ``user:password``): the schemas pages read it and the
    message browser decodes Confluent-framed keys and values through it
    (:mod:`.schema_decoding`). ``basic_auth=(user, password)``: every request must bring
    them (HTTP basic authentication, answered 401 otherwise); use it beyond 127.0.0.1
    behind TLS only."""
    from connector.registry.client import RegistryClient

    from . import (
        groups,
        messages,
        overview,
        pipelines,
        schemas,
        security,
        topics,
        transactions,
    )
    from .schema_decoding import SchemaDecoder

    app = Flask(__name__, template_folder=str(HERE / "templates"),
                static_folder=str(HERE / "static"))
    app.extensions["pyq_clients"] = clients
    app.extensions["pyq_lag_history"] = lag_history
    app.config["PYQ_BOOTSTRAP"] = clients.options.get("bootstrap.servers", "")
    app.config["PYQ_SCHEMA_REGISTRY"] = schema_registry
    registry = RegistryClient(schema_registry, registry_ca, registry_user) \
        if schema_registry else None
    app.extensions["pyq_registry"] = registry
    app.extensions["pyq_schema_decoder"] = SchemaDecoder(registry) if registry else None
    for module in (overview, topics, messages, groups, pipelines, schemas, transactions,
                   security):
        app.register_blueprint(module.blueprint)

    if basic_auth is not None:
        user, password = basic_auth

        @app.before_request
        def authenticate() -> Response | None:
            given = request.authorization
            if given is not None and given.type == "basic" and hmac.compare_digest(
                    (given.username or "").encode(), user.encode()) and hmac.compare_digest(
                    (given.password or "").encode(), password.encode()):
                return None
            return Response("pyq console: authentication required\n", 401,
                            {"WWW-Authenticate": 'Basic realm="pyq console", charset="UTF-8"'})

    @app.errorhandler(PyqError)
    def cluster_error(error: PyqError) -> tuple[str, int]:
        # The broker's (or the client's) refusal, by its Kafka name: the page says what
        # was refused, and the request changed nothing.
        return render_template("error.html", kind=type(error).__name__,
                               message=" ".join(str(error).split())), 400

    @app.errorhandler(FormError)
    def form_error(error: FormError) -> tuple[str, int]:
        return render_template("error.html", kind="Invalid input", message=str(error)), 400

    @app.context_processor
    def common() -> dict[str, Any]:
        return {"bootstrap": app.config["PYQ_BOOTSTRAP"],
                "schema_registry": app.config["PYQ_SCHEMA_REGISTRY"]}

    return app
