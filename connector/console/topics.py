"""``/topics``: the topics with their partitions, sizes and end offsets; one topic's
partitions (leader, replicas, ISR, start and end offsets) and configs, altered one at a
time; create a topic;
delete a topic and truncate partitions (DeleteRecords), each only once confirmed.

A destructive request without its confirmation (the topic's name typed again) renders
the confirmation step and changes nothing.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, redirect, render_template, request, url_for
from werkzeug.wrappers import Response

from connector.client import NewTopic, TopicPartition

from .clients import clients_of
from .forms import FormError, integer, name_values
from .overview import log_sizes

blueprint = Blueprint("topics", __name__)


def offsets(admin: Any, tps: list[TopicPartition], which: str) -> dict[TopicPartition, int]:
    found = admin.list_offsets(dict.fromkeys(tps, which)) if tps else {}
    return {tp: o.offset for tp, o in found.items()}


@blueprint.route("/topics")
def topic_list() -> str:
    with clients_of(current_app).session() as c:
        described = c.admin.describe_topics()
        led = [TopicPartition(p.topic, p.partition) for d in described.values()
               for p in d.partitions if p.leader >= 0]
        ends = offsets(c.admin, led, "latest")
        sizes, sizes_note = log_sizes(c.admin)
    rows = []
    for name, d in described.items():
        leader_sizes = [sizes.get(p.leader, {}).get(TopicPartition(name, p.partition))
                        for p in d.partitions]
        rows.append({
            "name": name, "partitions": len(d.partitions),
            "replication": max((len(p.replicas) for p in d.partitions), default=0),
            "under_replicated": sum(1 for p in d.partitions if len(p.isr) < len(p.replicas)),
            "bytes": sum(s for s in leader_sizes if s is not None) if sizes else None,
            "end_offsets": sum(ends.get(TopicPartition(name, p.partition), 0)
                               for p in d.partitions),
        })
    return render_template("topics.html", topics=rows, sizes_note=sizes_note)


@blueprint.route("/topics/<topic>")
def topic_detail(topic: str) -> str:
    with clients_of(current_app).session() as c:
        d = c.admin.describe_topics([topic])[topic]  # UnknownTopicOrPartition when missing
        tps = [TopicPartition(topic, p.partition) for p in d.partitions if p.leader >= 0]
        starts, ends = offsets(c.admin, tps, "earliest"), offsets(c.admin, tps, "latest")
        configs = c.admin.describe_configs([("topic", topic)])
        sizes, sizes_note = log_sizes(c.admin)
    entries = next(iter(configs.values())) if configs else {}
    partitions = [{
        "partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
        "isr": list(p.isr), "start": starts.get(TopicPartition(topic, p.partition)),
        "end": ends.get(TopicPartition(topic, p.partition)),
        "bytes": sizes.get(p.leader, {}).get(TopicPartition(topic, p.partition)),
    } for p in sorted(d.partitions, key=lambda p: p.partition)]
    return render_template("topic.html", topic=topic, partitions=partitions,
                           configs=sorted(entries.values(), key=lambda e: e.name),
                           sizes_note=sizes_note)


@blueprint.route("/topics/new", methods=["GET", "POST"])
def create_topic() -> str | Response:
    if request.method == "GET":
        return render_template("create_topic.html")
    form = request.form
    name = (form.get("name") or "").strip()
    if not name:
        raise FormError("name: a topic name is required")
    new = NewTopic(name, integer(form, "partitions", 1, low=1),
                   integer(form, "replication_factor", 1, low=1),
                   name_values(form.get("configs", ""), "configs") or None)
    with clients_of(current_app).session() as c:
        c.admin.create_topics([new])  # an invalid config value: the broker's error, no topic
        c.admin.await_topic(name)
    return redirect(url_for("topics.topic_detail", topic=name))


@blueprint.route("/topics/<topic>/configs", methods=["POST"])
def alter_config(topic: str) -> Response:
    """Set one config of the topic (IncrementalAlterConfigs; the others stay as they are),
    or delete its override back to the default when the value is empty."""
    name = (request.form.get("name") or "").strip()
    if not name:
        raise FormError("name: a config name is required")
    value = (request.form.get("value") or "").strip()
    with clients_of(current_app).session() as c:
        c.admin.incremental_alter_configs({("topic", topic): {name: value or None}})
    return redirect(url_for("topics.topic_detail", topic=topic))


def _confirmed(topic: str) -> bool:
    return (request.form.get("confirm") or "").strip() == topic


@blueprint.route("/topics/<topic>/delete", methods=["GET", "POST"])
def delete_topic(topic: str) -> str | Response:
    if request.method == "GET" or not _confirmed(topic):
        return render_template("confirm.html", topic=topic, action="delete",
                               refused=request.method == "POST",
                               what=f"Delete topic {topic} and all its records")
    with clients_of(current_app).session() as c:
        c.admin.delete_topics([topic])
    return redirect(url_for("topics.topic_list"))


@blueprint.route("/topics/<topic>/truncate", methods=["GET", "POST"])
def truncate(topic: str) -> str | Response:
    """DeleteRecords: every record of ``partition`` before ``offset`` (-1: all of them)."""
    values = request.values
    partition = integer(values, "partition", 0, low=0)
    offset = integer(values, "offset", -1, low=-1)
    if request.method == "GET" or not _confirmed(topic):
        return render_template("confirm.html", topic=topic, action="truncate",
                               refused=request.method == "POST", partition=partition,
                               offset=offset,
                               what=f"Delete the records of {topic} partition {partition} "
                                    + ("(all of them)" if offset < 0 else f"before offset {offset}"))
    with clients_of(current_app).session() as c:
        c.admin.delete_records({TopicPartition(topic, partition): offset})
    return redirect(url_for("topics.topic_detail", topic=topic))
