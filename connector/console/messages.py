"""``/topics/T/messages``: the message browser (one partition; seek by offset, by
timestamp or to the latest N) and producing a message.

Seeks, for ``limit`` records of partition ``p``:

* ``offset``: from that offset; one outside [log start, log end] is fetched anyway, so
  the broker's OFFSET_OUT_OF_RANGE (with the partition's bounds) is what the page shows;
* ``timestamp``: from the first record at or after that time (ListOffsets), none if no
  record is that late;
* ``latest``: the last ``limit`` records.

With a schema registry (:mod:`.schema_decoding`), a key or value in Confluent's wire
format whose schema id the registry knows is shown decoded (Avro and Protobuf as JSON,
JSON Schema'd JSON pretty-printed) with its schema id, type and subjects; anything else as
the chosen format.

A filter (``filter=TEXT``) is applied here, in the console: the records whose key, value
or a header value contains TEXT (bytes, matched as UTF-8), among at most ``SCAN_LIMIT``
records read from where the seek lands (for ``latest``: the last ``SCAN_LIMIT``, keeping
the last ``limit`` matches). The page says which offsets were scanned, so a filter that
found nothing there does not claim the partition has no such record.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from flask import Blueprint, current_app, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from connector.client import TopicPartition

from .clients import clients_of
from .forms import FormError, choice, integer, name_values

blueprint = Blueprint("messages", __name__)

SEEKS = ("latest", "offset", "timestamp")
FORMATS = ("text", "json", "hex")
MAX_LIMIT = 1000
SCAN_LIMIT = 10_000


def matches(record: Any, needle: bytes) -> bool:
    return any(needle in part for part in (record.key, record.value,
                                             *(v for _, v in record.headers)) if part)


def show(data: bytes | None, fmt: str) -> str | None:
    """Bytes as text (UTF-8, undecodable bytes replaced), JSON pretty-printed (text when it
    is not JSON) or hex."""
    if data is None:
        return None
    if fmt == "hex":
        return data.hex(" ")
    text = data.decode("utf-8", errors="replace")
    if fmt == "json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def start_offset(admin: Any, tp: TopicPartition, seek: str, value: int | None, limit: int,
                 bounds: tuple[int, int]) -> int | None:
    """Where reading starts (None: nothing to read)."""
    first, end = bounds
    if seek == "latest":
        return max(first, end - limit)
    if seek == "offset":
        assert value is not None
        return value
    assert value is not None
    found = admin.list_offsets({tp: value})[tp].offset
    return None if found < 0 else found


@blueprint.route("/topics/<topic>/messages")
def browse(topic: str) -> str:
    args = request.args
    partition = integer(args, "partition", 0, low=0)
    seek = choice(args, "seek", SEEKS)
    fmt = choice(args, "format", FORMATS)
    limit = integer(args, "limit", 20, low=1)
    if limit > MAX_LIMIT:
        raise FormError(f"limit={limit} is not allowed: must be at most {MAX_LIMIT}")
    value = None if seek == "latest" else integer(args, "value", low=0)
    tp = TopicPartition(topic, partition)
    with clients_of(current_app).session() as c:
        d = c.admin.describe_topics([topic])[topic]  # UnknownTopicOrPartition when missing
        count = len(d.partitions)
        if partition >= count:
            raise FormError(f"partition={partition} is not allowed: topic {topic!r} has "
                            f"partitions 0..{count - 1}")
        starts = c.admin.list_offsets({tp: "earliest"})
        ends = c.admin.list_offsets({tp: "latest"})
        bounds = (starts[tp].offset, ends[tp].offset)
        wanted = (args.get("filter") or "").encode()
        window = SCAN_LIMIT if wanted else limit
        start = start_offset(c.admin, tp, seek, value, window, bounds)
        records = []
        scanned = None
        if start is not None and start != bounds[1]:
            # Past the end or below the start: still fetched, for the broker's error.
            until = min(start + window, bounds[1]) if start < bounds[1] else start + 1
            records = list(c.fetcher.iter_records(topic, partition, start, until))
            scanned = (start, until)
    if wanted:
        found = [r for r in records if matches(r, wanted)]
        records = found[-limit:] if seek == "latest" else found[:limit]
    decoder = current_app.extensions.get("pyq_schema_decoder")

    def shown(data: bytes | None) -> tuple[str | None, Any]:
        """The text of a key or value, and the schema it was decoded with (or None)."""
        decoded = decoder.decode(data) if decoder is not None else None
        return (decoded.text, decoded) if decoded is not None else (show(data, fmt), None)

    rows = []
    for r in records:
        (key_text, key_schema), (value_text, value_schema) = shown(r.key), shown(r.value)
        rows.append({"offset": r.offset, "timestamp": r.timestamp, "time": iso(r.timestamp),
                     "key": key_text, "key_schema": key_schema, "value": value_text,
                     "value_schema": value_schema,
                     "headers": [(k, show(v, fmt)) for k, v in r.headers]})
    return render_template("messages.html", topic=topic, partition=partition,
                           partitions=range(count), seek=seek, value=value, limit=limit,
                           format=fmt, bounds=bounds, records=rows,
                           filter=wanted.decode(errors="replace"), scanned=scanned)


@blueprint.route("/topics/<topic>/produce", methods=["POST"])
def produce(topic: str) -> Response:
    form = request.form
    partition = integer(form, "partition", -1, low=-1)  # -1: the partitioner chooses
    headers = [(k, v.encode()) for k, v in name_values(form.get("headers", ""), "headers").items()]
    key = form.get("key") or None
    value = form.get("value", "")
    clients = clients_of(current_app)
    with clients.session() as c:
        c.admin.describe_topics([topic])  # a missing topic is refused, not auto-created
    future = clients.producer.send(topic, value.encode(), key.encode() if key else None,
                                   partition=None if partition < 0 else partition,
                                   headers=headers)
    sent = future.result(timeout=30)
    return redirect(url_for("messages.browse", topic=topic, partition=sent.partition,
                            seek="offset", value=sent.offset))
