"""Java properties files of client options (what Kafka's tools take as ``--command-config``).

Shared by the ``pyq`` command and the jobs: ``name=value`` or ``name: value`` lines, ``#`` /
``!`` comments, a trailing backslash continues the line. Names are not checked here; the
client checks every one when it is configured (:class:`connector.client.config.ClientConfig`).
"""

from __future__ import annotations


def parse_properties(text: str) -> dict[str, str]:
    r"""Java properties text -> {name: value}.

    >>> parse_properties("# secured\nsecurity.protocol = SASL_SSL\nsasl.jaas.config=a \\\n  b;\n")
    {'security.protocol': 'SASL_SSL', 'sasl.jaas.config': 'a b;'}
    """
    out: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        sep = min((i for i in (logical.find("="), logical.find(":")) if i >= 0), default=-1)
        if sep < 0:
            out[logical.strip()] = ""
        else:
            out[logical[:sep].strip()] = logical[sep + 1:].strip()
        logical = ""
    return out


def read_properties(path: str) -> dict[str, str]:
    """The properties file at ``path`` (UTF-8); raises OSError if it cannot be read."""
    with open(path, encoding="utf-8") as f:
        return parse_properties(f.read())
