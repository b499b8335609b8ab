"""Produce a synthetic clickstream to a pyq (or Kafka) topic, with some malformed records.

Each event is a JSON object (``--value-format json``, the default)::

    {"user_id": "u0042", "session_hint": "u0042-s3", "page": "/product/17",
     "event_type": "click", "event_time": "2026-11-21T10:03:12.345000+00:00"}

A fraction (``--malformed-fraction``) of the records is deliberately not JSON, so a
downstream pipeline has something to dead-letter.

With ``--value-format avro --schema-registry URL`` each event is Avro of
``jobs/schemas/click_event.avsc`` (``event_time`` a ``timestamp-millis``) in Confluent's
wire format: the schema is registered under ``<topic>-value`` (TopicNameStrategy; the
registry answers the existing id when it is there already) and every value is framed by
:class:`connector.registry.avro_encoding.AvroWriterSchema` (magic byte 0, the 4-byte id,
the Avro body), as the pyq sink frames them. A malformed record is then what a reader of a
registry-backed topic meets, alternately: stray JSON text from a legacy producer (no magic
byte), and an event framed with a schema id the registry does not know
(:data:`UNKNOWN_SCHEMA_ID`). The line before the last says the subject, the id and the
bytes of the values against the same events as JSON.

Records are keyed by ``user_id`` (a
malformed record keeps the key of the user it would have belonged to) and sent with our
own :class:`connector.client.Producer` at ``acks=all``; the topic is created if missing.

Usage (it needs no Spark, but runs under spark-submit too)::

    python jobs/generate_events.py --bootstrap-server 127.0.0.1:9092 --topic clicks --count 10000
    spark-submit jobs/generate_events.py --help

A secured cluster: ``--command-config FILE`` and ``-X NAME=VALUE`` (:mod:`connection_options`).

The last line on stdout is ``produced N events (M malformed)``.

Threading: one thread; the producer's futures are awaited in chunks of 5,000.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from connection_options import add_connection_options, client_options

PAGES = ["/", "/search", "/cart", "/checkout", "/account", "/help"] + [
    f"/product/{i}" for i in range(40)]
EVENT_TYPES = ["page_view"] * 6 + ["click"] * 3 + ["add_to_cart", "purchase", "scroll"]
MALFORMED = [
    "user_id=%s page=/cart",  # key=value, not JSON
    '{"user_id": "%s", "page": "/checkout"',  # truncated JSON
    "<event user='%s'/>",  # XML
    "%s\tclick\t/product/3",  # TSV
]
#: The Avro schema of an event (``--value-format avro``), kept beside the job.
CLICK_EVENT_SCHEMA = Path(__file__).resolve().parent / "schemas" / "click_event.avsc"
#: A schema id no registry has given out (ids count up from 1): Avro mode's malformed
#: records of the second kind are framed with it.
UNKNOWN_SCHEMA_ID = 2**31 - 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="generate_events",
                                description="Produce a synthetic clickstream (JSON, or Avro "
                                            "through a schema registry; some malformed).")
    add_connection_options(p)
    p.add_argument("--topic", default="clicks", help="target topic (created if missing)")
    p.add_argument("--count", type=int, default=None, help="how many events (default 10000)")
    p.add_argument("--rate", type=float, default=None,
                   help="events per second (with --seconds, instead of --count)")
    p.add_argument("--seconds", type=float, default=None, help="how long to produce at --rate")
    p.add_argument("--value-format", choices=["json", "avro"], default="json",
                   help="json (default), or avro: Confluent-framed Avro of "
                        "jobs/schemas/click_event.avsc, registered under <topic>-value in "
                        "--schema-registry")
    p.add_argument("--schema-registry", metavar="URL", default=None,
                   help="the schema registry's URL(s), comma-separated (with --value-format avro)")
    p.add_argument("--malformed-fraction", type=float, default=0.02,
                   help="fraction of records that do not decode: not JSON, or with avro "
                        "alternately no magic byte (JSON text) and an unknown schema id "
                        "(default 0.02)")
    p.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    p.add_argument("--partitions", type=int, default=3, help="partitions if the topic is created")
    p.add_argument("--replication-factor", type=int, default=-1,
                   help="replication factor if the topic is created (-1: broker default)")
    p.add_argument("--users", type=int, default=200, help="distinct users (default 200)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def events(rng: random.Random, count: int, users: int, malformed_fraction: float,
           start: dt.datetime, avro: AvroValues | None = None) -> Iterator[tuple[bytes, bytes, bool]]:
    """(key, value, malformed) for ``count`` events; event times advance ~1 s on average.
    ``avro``: the values are Avro (the same events, from the same random draws)."""
    session: dict[str, tuple[int, dt.datetime]] = {}
    t = start
    for _ in range(count):
        t += dt.timedelta(milliseconds=rng.randint(0, 2000))
        user = f"u{rng.randrange(users):04d}"
        n, last = session.get(user, (0, None))
        if last is None or (t - last) > dt.timedelta(minutes=30) or rng.random() < 0.01:
            n += 1
        session[user] = (n, t)
        if rng.random() < malformed_fraction:
            value = (rng.choice(MALFORMED) % user).encode()
            if avro is not None:
                value = avro.malformed(user, t)
            yield user.encode(), value, True
            continue
        event = {"user_id": user, "session_hint": f"{user}-s{n}", "page": rng.choice(PAGES),
                 "event_type": rng.choice(EVENT_TYPES), "event_time": t.isoformat()}
        if avro is not None:
            yield user.encode(), avro.encode(event), False
        else:
            yield user.encode(), json.dumps(event).encode(), False


class AvroValues:
    """Events as Confluent-framed Avro of :data:`CLICK_EVENT_SCHEMA`, registered under
    ``subject`` on construction; counts the bytes of the well-formed values and of the same
    events as JSON.

    Malformed values alternate between the two kinds a registry-backed topic's reader
    meets: JSON text (no magic byte) and a framed event naming :data:`UNKNOWN_SCHEMA_ID`."""

    def __init__(self, registry_url: str, subject: str) -> None:
        import dataclasses

        from connector.registry.avro_encoding import writer_schema
        from connector.registry.settings import RegistrySettings

        self.writer = writer_schema(RegistrySettings(url=registry_url), subject,
                                    CLICK_EVENT_SCHEMA.read_text(), None, auto_register=True)
        self.unknown = dataclasses.replace(self.writer, schema_id=UNKNOWN_SCHEMA_ID)
        self.subject, self.avro_bytes, self.json_bytes, self.bad = subject, 0, 0, 0

    def encode(self, event: dict[str, Any], writer: Any = None) -> bytes:
        datum = {**event, "event_time": dt.datetime.fromisoformat(event["event_time"])}
        if writer is not None:
            return writer.encode(datum)
        value = self.writer.encode(datum)
        self.avro_bytes += len(value)
        self.json_bytes += len(json.dumps(event))
        return value

    def malformed(self, user: str, t: dt.datetime) -> bytes:
        self.bad += 1
        event = {"user_id": user, "session_hint": f"{user}-s0", "page": "/cart",
                 "event_type": "click", "event_time": t.isoformat()}
        if self.bad % 2:  # a legacy producer's JSON: no magic byte
            return json.dumps(event).encode()
        return self.encode(event, self.unknown)


class Progress:
    """A one-line stderr progress bar."""

    def __init__(self, total: int | None, enabled: bool) -> None:
        self.total, self.enabled, self.last = total, enabled, 0.0

    def update(self, done: int, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self.last < 0.2):
            return
        self.last = now
        if self.total:
            width = 30
            filled = int(width * done / self.total)
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}")
        else:
            sys.stderr.write(f"\r{done} events")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def ensure_topic(client: dict[str, Any], topic: str, partitions: int, replication_factor: int) -> None:
    from broker_sim.protocol.errors import TopicAlreadyExists
    from connector.client import Admin

    with Admin(client) as admin:
        if topic in admin.list_topics():
            return
        try:
            admin.create_topic(topic, partitions, replication_factor)
        except TopicAlreadyExists:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    client = client_options(parser, args)
    if args.count is not None and (args.rate is not None or args.seconds is not None):
        build_parser().error("use either --count or --rate/--seconds")
    if (args.rate is None) != (args.seconds is None):
        build_parser().error("--rate and --seconds go together")
    if not 0.0 <= args.malformed_fraction <= 1.0:
        build_parser().error("--malformed-fraction must be in [0, 1]")
    if args.value_format == "avro" and not args.schema_registry:
        build_parser().error("--value-format avro needs --schema-registry URL")
    if args.value_format != "avro" and args.schema_registry is not None:
        build_parser().error(f"--schema-registry {args.schema_registry}: only with "
                             f"--value-format avro (not {args.value_format})")
    count = args.count if args.count is not None else (
        int(args.rate * args.seconds) if args.rate is not None else 10_000)
    from connector.client import Producer

    ensure_topic(client, args.topic, args.partitions, args.replication_factor)
    avro = None if args.schema_registry is None else AvroValues(args.schema_registry,
                                                                 f"{args.topic}-value")
    rng = random.Random(args.seed)
    start = dt.datetime(2026, 1, 1, 9, 0, tzinfo=dt.timezone.utc) + dt.timedelta(
        minutes=rng.randrange(600))
    progress = Progress(count, not args.no_progress)
    produced = malformed = 0
    t0 = time.monotonic()
    with Producer({**client, "acks": "all",
                   "linger.ms": 5}) as producer:
        futures = []
        for i, (key, value, bad) in enumerate(events(rng, count, args.users,
                                                     args.malformed_fraction, start, avro)):
            if args.rate is not None:
                delay = t0 + i / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            futures.append(producer.send(args.topic, value, key=key))
            malformed += bad
            if len(futures) >= 5000:
                for f in futures:
                    f.result(60)
                produced += len(futures)
                futures = []
            progress.update(produced + len(futures))
        producer.flush()
        for f in futures:
            f.result(60)
        produced += len(futures)
    progress.update(produced, force=True)
    progress.close()
    if avro is not None:
        print(f"avro: subject {avro.subject} schema id {avro.writer.schema_id}: "
              f"{avro.avro_bytes} bytes of values ({avro.json_bytes} as JSON)", flush=True)
    print(f"produced {produced} events ({malformed} malformed)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
