"""``python -m reference kafka``: fetch Apache Kafka's jars into the cache (``make kafka``)."""

from __future__ import annotations

import sys

from reference.jars import MissingRequirement, kafka_jars


def main(argv: list[str]) -> int:
    if argv != ["kafka"]:
        print("usage: python -m reference kafka", file=sys.stderr)
        return 2
    try:
        jars = kafka_jars()
    except MissingRequirement as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"Apache Kafka {jars.version}: {jars.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
