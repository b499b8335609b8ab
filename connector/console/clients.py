"""The console's connections to the cluster."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from flask import Flask

from connector.client import Admin, Fetcher, Producer


class ConsoleClients:
    """One Admin, one Fetcher and one Producer for the whole console, made from the same
    client options (so a secured cluster sees the one configured user).

    Threading: the web server answers each request on its own thread, but an Admin and a
    Fetcher are used by one thread at a time; :meth:`session` hands them out under one lock,
    so requests talk to the cluster one after the other. The Producer is thread-safe and
    made on first use (a console that only looks never starts its sender thread).
    """

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = {"client.id": "pyq-console", **options}
        self.admin = Admin(self.options)  # an invalid option fails here, naming it
        self.fetcher = Fetcher(self.options)
        self._producer: Producer | None = None
        self._lock = threading.Lock()

    @contextmanager
    def session(self) -> Iterator[ConsoleClients]:
        with self._lock:
            yield self

    @property
    def producer(self) -> Producer:
        with self._lock:
            if self._producer is None:
                self._producer = Producer(self.options)
            return self._producer

    def close(self) -> None:
        with self._lock:
            if self._producer is not None:
                self._producer.close()
            self.fetcher.close()
            self.admin.close()


def clients_of(app: Flask) -> ConsoleClients:
    """The clients of the console ``app`` serves (:func:`.app.create_app` put them there)."""
    clients: ConsoleClients = app.extensions["pyq_clients"]
    return clients
