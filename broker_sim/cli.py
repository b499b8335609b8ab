"""``pyq-broker``: run one broker in the foreground.

    pyq-broker --data-dir /tmp/pyq --port 9092 --override auto.create.topics.enable=true

Logs ``listening on HOST:PORT`` once the socket is open (port 0 picks a free one) and
shuts down cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from .server import Broker, BrokerConfig, ConfigError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pyq-broker", description="Run a Kafka-wire-compatible pyq broker.")
    p.add_argument("--data-dir", type=Path, required=True, help="directory for logs and broker state")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9092, help="port to listen on; 0 picks a free port")
    p.add_argument("--broker-id", type=int, default=0, help="this broker's id (default 0)")
    p.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="a Kafka broker option, e.g. log.segment.bytes=1048576 (repeatable)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    props = {}
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"pyq-broker: --override {item!r} is not NAME=VALUE", file=sys.stderr)
            return 2
        props[name.strip()] = value.strip()
    try:
        config = BrokerConfig.from_properties(props, broker_id=args.broker_id, host=args.host,
                                              port=args.port, data_dir=args.data_dir)
    except ConfigError as e:
        print(f"pyq-broker: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    broker = Broker(config).start()
    print(f"listening on {broker.host}:{broker.port}", flush=True)
    try:
        stop.wait()
    finally:
        broker.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
