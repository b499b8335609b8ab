"""``/pipelines``: each pyq Spark source query that commits to a group (``groupId``), with
its progress and its dead letters by reason, as ``make demo`` prints them, live.

A pipeline is a group whose commit metadata names a ``query`` (what the pyq source stores
with each commit, :mod:`connector.client.commit_metadata`; ``pyq lag`` shows the same).
Per pipeline: its topics, committed offsets against end offsets, lag, rate (records per
second committed past, from the lag history's samples of the last minute), the counters
summed over its partitions (skipped, lost, retried, dead_lettered), and when the source
has a ``deadLetterTopic`` (named in the metadata as ``dead_letter_topic``) the dead letters
read from that topic and counted by their ``pyq.reason`` header, most frequent first, with
the first few source records (``topic-partition@offset`` from ``pyq.topic``,
``pyq.partition``, ``pyq.offset``). At most ``DEAD_LETTER_SCAN`` records are read per
dead-letter partition (its latest ones); the page says how many it read. The page reloads
itself every ``REFRESH_S`` seconds.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, render_template

from connector.client import Admin, Fetcher

from .clients import clients_of
from .groups import history_of
from .lag import group_lags

blueprint = Blueprint("pipelines", __name__)

COUNTERS = ("skipped", "lost", "retried", "dead_lettered")
DEAD_LETTER_SCAN = 10_000
FIRST_SOURCES = 5
REFRESH_S = 5


def dead_letters_by_reason(admin: Admin, fetcher: Fetcher, topic: str) -> dict[str, Any]:
    """``{"read": n, "reasons": [{"reason", "count", "first": ["t-p@o", ...]}]}`` of the
    latest (at most ``DEAD_LETTER_SCAN`` per partition) records of ``topic``."""
    partitions = admin.describe_topics([topic])[topic].partitions
    by_reason: dict[str, list[tuple[str, int, int]]] = {}
    read = 0
    for p in sorted(q.partition for q in partitions):
        start, end = fetcher.offset_bounds(topic, p)
        for r in fetcher.iter_records(topic, p, max(start, end - DEAD_LETTER_SCAN), end):
            read += 1
            h = {k: (v or b"").decode("utf-8", "replace") for k, v in r.headers}
            source = (h.get("pyq.topic", "?"), int(h.get("pyq.partition") or -1),
                      int(h.get("pyq.offset") or -1))
            by_reason.setdefault(h.get("pyq.reason", "(no pyq.reason header)"), []).append(source)
    reasons = [{"reason": reason, "count": len(sources),
                "first": [f"{t}-{p}@{o}" for t, p, o in sorted(sources)[:FIRST_SOURCES]]}
               for reason, sources in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    return {"read": read, "reasons": reasons}


def pipeline_of(group: str, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The pipeline a group's lag rows describe (None when no commit names a query)."""
    fields = [r["fields"] for r in rows if "query" in r["fields"]]
    if not fields:
        return None
    known = [r for r in rows if r["lag"] is not None]
    return {"group": group, "query": fields[0]["query"],
            "topics": sorted({r["topic"] for r in rows}), "partitions": len(rows),
            "committed": sum(r["committed"] for r in rows if r["committed"] is not None),
            "end": sum(r["end"] for r in rows if r["end"] is not None),
            "lag": sum(r["lag"] for r in known) if known else None,
            "counters": {c: sum(int(f.get(c) or 0) for f in fields) for c in COUNTERS},
            "dead_letter_topic": next((f["dead_letter_topic"] for f in fields
                                       if f.get("dead_letter_topic")), None)}


@blueprint.route("/pipelines")
def pipeline_list() -> str:
    history = history_of(current_app)
    pipelines = []
    with clients_of(current_app).session() as c:
        groups = [g.group_id for g in c.admin.list_groups()]
        for group, rows in sorted(group_lags(c.admin, groups).items()):
            pipeline = pipeline_of(group, rows)
            if pipeline is None:
                continue
            pipeline["rate"] = history.rate(group) if history else None
            dlq = pipeline["dead_letter_topic"]
            pipeline["dead_letters"] = dead_letters_by_reason(c.admin, c.fetcher, dlq) \
                if dlq and dlq in c.admin.list_topics() else None
            pipelines.append(pipeline)
    return render_template("pipelines.html", pipelines=pipelines, refresh_s=REFRESH_S,
                           scan=DEAD_LETTER_SCAN)
