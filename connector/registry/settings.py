"""The ``schemaRegistry.*`` options of the source and of :mod:`connector.functions`.

Each is declared once, as a field of :class:`RegistrySettings`; ``docs/options.md``
lists them with their rules.

:class:`RegistrySettings` is picklable: the driver parses it once and executors make their
own :class:`~connector.registry.client.RegistryClient` from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker_sim.common import options as o
from broker_sim.common.options import option
from connector.option_values import OptionError, parse_positive_int

PREFIX = "schemaRegistry."


@dataclass(frozen=True)
class RegistrySettings:
    """How the source, the sink and :mod:`connector.functions` reach a schema registry."""

    url: str = option(PREFIX + "url", kind=o.STRING, default_doc="required with a schema format",
                      doc="the registry's URL(s), comma-separated (http:// or https://)")
    user_info: str | None = option(PREFIX + "basic.auth.user.info", None, o.OPTIONAL_STRING,
                                   secret=True, doc="`user:password` (Confluent's spelling)")
    ca_location: str | None = option(PREFIX + "ssl.ca.location", None, o.OPTIONAL_STRING,
                                     doc="CA certificate file (PEM) of an https registry")
    certificate_location: str | None = option(
        PREFIX + "ssl.certificate.location", None, o.OPTIONAL_STRING,
        doc="a client certificate (PEM)")
    key_location: str | None = option(PREFIX + "ssl.key.location", None, o.OPTIONAL_STRING,
                                      doc="the client certificate's key (PEM)")
    key_password: str | None = option(PREFIX + "ssl.key.password", None, o.OPTIONAL_STRING,
                                      secret=True, doc="the key's password")
    timeout_ms: int = option(PREFIX + "request.timeout.ms", 30_000, o.integer(1, None),
                             doc="one request's timeout")

    def client(self):  # -> RegistryClient (imported lazily: urllib, ssl)
        from .client import RegistryClient

        return RegistryClient(self.url, self.ca_location, self.user_info, self.timeout_ms / 1000,
                              self.certificate_location, self.key_location, self.key_password)


def parse_registry_settings(get, needed_by: str) -> RegistrySettings:
    """The settings from ``get(name)`` (None when unset); ``needed_by`` says which option
    made the URL required, for the error."""
    url = get(PREFIX + "url")
    if url is None or not url.strip():
        raise OptionError(PREFIX + "url", url, f"a schema registry URL (http:// or https://), "
                          f"required with {needed_by}")
    for u in url.split(","):
        if not u.strip().lower().startswith(("http://", "https://")):
            raise OptionError(PREFIX + "url", url, "http:// or https:// URLs, comma-separated")
    user_info = get(PREFIX + "basic.auth.user.info")
    if user_info is not None and ":" not in user_info:
        raise OptionError(PREFIX + "basic.auth.user.info", "<hidden>", "user:password")
    timeout = get(PREFIX + "request.timeout.ms")
    cert, key = get(PREFIX + "ssl.certificate.location"), get(PREFIX + "ssl.key.location")
    if key is not None and cert is None:
        raise OptionError(PREFIX + "ssl.key.location", key,
                          f"only with {PREFIX}ssl.certificate.location")
    return RegistrySettings(
        url=url.strip(), user_info=user_info, ca_location=get(PREFIX + "ssl.ca.location"),
        certificate_location=cert, key_location=key,
        key_password=get(PREFIX + "ssl.key.password"),
        timeout_ms=30_000 if timeout is None else parse_positive_int(
            PREFIX + "request.timeout.ms", timeout, 1))


def getter(options: Mapping[str, str]):
    """Case-insensitive lookup of Spark's string options."""
    lower = {k.lower(): v for k, v in options.items()}
    return lambda name: None if lower.get(name.lower()) is None else str(lower[name.lower()])


#: Every ``schemaRegistry.*`` option.
OPTIONS = tuple(o.declared(RegistrySettings))
