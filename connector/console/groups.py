"""``/groups``: the consumer groups; one group's state, protocol, members with their
assignments, and lag per partition; resetting its offsets.

Lag as :mod:`.lag` computes it; its history (:mod:`.lag_history`) is charted on the
group's page, which fetches ``/groups/G/lag-history.json`` every sampling interval.

Reset (``/groups/G/reset``, a topic's partitions to ``earliest``, ``latest``, the first
offset at or after a ``timestamp``, or an ``offset``, clamped into each partition's
[log start, log end] as ``kafka-consumer-groups.sh --reset-offsets`` does): ``preview``
computes and shows the new offsets beside the committed ones and commits nothing;
``execute`` computes them again and commits them. The cluster refuses the commit while
the group has members (their own commits would overwrite it): the page shows that error.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from flask import Blueprint, Flask, current_app, jsonify, render_template, request
from werkzeug.wrappers import Response

from broker_sim.protocol.errors import GroupIdNotFound
from connector.client import Admin, GroupDescription, MemberDescription, TopicPartition

from .clients import clients_of
from .forms import FormError, choice, integer
from .lag import group_lag, group_lags, total
from .lag_history import LagHistory

blueprint = Blueprint("groups", __name__)

STRATEGIES = ("earliest", "latest", "timestamp", "offset")


def history_of(app: Flask) -> LagHistory | None:
    history: LagHistory | None = app.extensions.get("pyq_lag_history")
    return history


@blueprint.route("/groups")
def group_list() -> str:
    """Every group with its state and its lag (summed over its partitions): as the lag
    history's last round sampled it when that round is recent (at most two sampling
    intervals old; the page says when), computed now for a group that round did not see
    or without a recent round. A group's own page always computes it now."""
    history = history_of(current_app)
    sampled = history.latest_round() if history else None
    seen = sampled[1] if sampled else {}
    with clients_of(current_app).session() as c:
        listed = c.admin.list_groups()
        lags = group_lags(c.admin, [g.group_id for g in listed if g.group_id not in seen])
    rows = [{"listing": g, "partitions": len(lags[g.group_id]), "lag": total(lags[g.group_id])}
            if g.group_id in lags else
            {"listing": g, "partitions": seen[g.group_id]["partition_count"],
             "lag": seen[g.group_id]["lag"]} for g in listed]
    return render_template("groups.html", groups=rows,
                           sampled_at=iso_ms(sampled[0]) if sampled and seen else None)


def iso_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="seconds")


def describe(admin: Admin, group: str) -> GroupDescription:
    """The group as DescribeGroups sees it; a group on the consumer protocol (KIP-848),
    which DescribeGroups reports Dead (as Kafka does), as ConsumerGroupDescribe sees it
    (its protocol is then the server-side assignor)."""
    d = admin.describe_groups([group])[group]
    if d.state != "Dead":
        return d
    try:
        c = admin.describe_consumer_groups([group])[group]
    except GroupIdNotFound:
        return d
    return GroupDescription(group, c.state, "consumer", c.assignor, c.coordinator,
                            [MemberDescription(m.member_id, m.instance_id, m.client_id,
                                               m.client_host, m.assignment) for m in c.members])


@blueprint.route("/groups/<group>")
def group_detail(group: str) -> str:
    with clients_of(current_app).session() as c:
        d = describe(c.admin, group)
        assigned = {tp: m.member_id for m in d.members for tp in m.assignment}
        rows = group_lag(c.admin, group, assigned)
    total = sum(r["lag"] for r in rows if r["lag"] is not None)
    history = history_of(current_app)
    fields = list(dict.fromkeys(name for r in rows for name in r["fields"]))
    return render_template("group.html", group=d, rows=rows, total_lag=total, fields=fields,
                           interval_ms=history.interval_ms if history else None,
                           history_error=history.last_error if history else None,
                           chart={"labels": [f"{r['topic']}-{r['partition']}" for r in rows],
                                  "lag": [r["lag"] or 0 for r in rows]})


@blueprint.route("/groups/<group>/lag-history.json")
def lag_history(group: str) -> Response:
    """The group's lag samples, oldest first (the group page's chart polls this)."""
    history = history_of(current_app)
    return jsonify({"group": group, "samples": history.samples(group) if history else [],
                    "error": history.last_error if history else None})


def reset_plan(admin: Any, group: str, topic: str, strategy: str, value: int | None
               ) -> list[dict[str, Any]]:
    d = admin.describe_topics([topic])[topic]  # UnknownTopicOrPartition when missing
    tps = sorted(TopicPartition(topic, p.partition) for p in d.partitions)
    starts = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(tps, "earliest")).items()}
    ends = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(tps, "latest")).items()}
    if strategy == "timestamp":
        found = {tp: o.offset for tp, o in admin.list_offsets(dict.fromkeys(tps, value)).items()}
        targets = {tp: ends[tp] if found[tp] < 0 else found[tp] for tp in tps}
    elif strategy == "offset":
        assert value is not None
        targets = {tp: min(max(value, starts[tp]), ends[tp]) for tp in tps}
    else:
        targets = starts if strategy == "earliest" else ends
    committed = admin.fetch_offsets(group, tps)
    return [{"topic": tp.topic, "partition": tp.partition,
             "committed": committed[tp].offset if tp in committed else None,
             "new": targets[tp]} for tp in tps]


@blueprint.route("/groups/<group>/reset", methods=["GET", "POST"])
def reset(group: str) -> str:
    values = request.values
    topic = (values.get("topic") or "").strip()
    strategy = choice(values, "strategy", STRATEGIES)
    value = integer(values, "value", low=0) if strategy in ("timestamp", "offset") else None
    if request.method == "GET":
        return render_template("reset.html", group=group, topic=topic, strategy=strategy,
                               value=value, plan=None, executed=False)
    if not topic:
        raise FormError("topic: a topic is required")
    action = choice(values, "action", ("preview", "execute"))
    with clients_of(current_app).session() as c:
        plan = reset_plan(c.admin, group, topic, strategy, value)
        if action == "execute":
            c.admin.commit_offsets(group, {TopicPartition(r["topic"], r["partition"]): r["new"]
                                           for r in plan})
    return render_template("reset.html", group=group, topic=topic, strategy=strategy,
                           value=value, plan=plan, executed=action == "execute")
