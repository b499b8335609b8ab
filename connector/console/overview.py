"""``/``: the cluster at a glance, from one Metadata answer (a consistent snapshot) and
each broker's DescribeLogDirs."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, render_template

from broker_sim.protocol.errors import PyqError

from .clients import clients_of

blueprint = Blueprint("overview", __name__)


def log_sizes(admin: Any) -> tuple[dict[int, dict[Any, int]], str | None]:
    """Each broker's bytes per partition, or ({}, why not) when the cluster refuses
    DescribeLogDirs (e.g. no Describe permission on the cluster): the page says so."""
    try:
        return admin.describe_log_dirs(), None
    except PyqError as e:
        return {}, f"sizes unavailable: {type(e).__name__}: {' '.join(str(e).split())}"


@blueprint.route("/")
def overview() -> str:
    with clients_of(current_app).session() as c:
        cluster = c.admin.cluster_metadata()
        sizes, sizes_note = log_sizes(c.admin)
    partitions = [p for t in sorted(cluster.topics) for p in cluster.partitions_for_topic(t)]
    brokers = []
    for node in sorted(cluster.brokers.values()):
        brokers.append({
            "id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack,
            "controller": node.node_id == cluster.controller_id,
            "leaders": sum(1 for p in partitions if p.leader == node.node_id),
            "replicas": sum(1 for p in partitions if node.node_id in p.replicas),
            "bytes": sum(sizes[node.node_id].values()) if node.node_id in sizes else None,
        })
    under = [p for p in partitions if p.leader >= 0 and len(p.isr) < len(p.replicas)]
    offline = [p for p in partitions if p.leader < 0]
    return render_template(
        "overview.html", cluster_id=cluster.cluster_id, controller=cluster.controller_id,
        brokers=brokers, topic_count=len(cluster.topics), partition_count=len(partitions),
        under_replicated=under, offline=offline, sizes_note=sizes_note,
        chart={"labels": [f"broker {b['id']}" for b in brokers],
               "leaders": [b["leaders"] for b in brokers],
               "replicas": [b["replicas"] for b in brokers]})
