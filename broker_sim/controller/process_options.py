"""The options of a controller process (``pyq-broker controller --override NAME=VALUE``).

:class:`ControllerOptions` declares them once with :func:`broker_sim.common.options.option`:
the metrics endpoint, the cluster id, and the quorum's (``node.id``,
``controller.quorum.*``, ``controller.listeners``); the leader-balance options are
:class:`~broker_sim.controller.leader_balance.LeaderBalanceConfig`'s. A lone controller
takes no quorum option; with ``controller.quorum.voters`` its ``node.id`` must be one of
the voters (rules between options, checked after each is parsed).

>>> ControllerOptions.from_overrides({"node.id": "3001",
...                                   "controller.quorum.voters": "3001@127.0.0.1:9300"}).voters
{3001: ('127.0.0.1', 9300)}
>>> ControllerOptions.from_overrides({"controller.quorum.election.timeout.ms": "0"})
Traceback (most recent call last):
...
ValueError: controller.quorum.election.timeout.ms='0' is invalid: a positive integer is allowed
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..common.options import Refused, custom, declared, integer, option
from ..quorum import parse_voters

#: ``1@127.0.0.1:9093,2@127.0.0.1:9094`` -> {id: (host, port)}.
VOTERS = custom("map", lambda v: v if v is None or isinstance(v, dict) else parse_voters(str(v)),
                "ID@HOST:PORT,...")
POSITIVE = integer(1, None, optional=True, allowed="a positive integer")


def _cluster_id(value: Any) -> str:
    if not str(value).strip():
        raise ValueError(value)
    return str(value).strip()


@dataclass(frozen=True)
class ControllerOptions:
    """A controller process's own options, each declared once. Frozen; read once at start."""

    metrics_port: int | None = option(
        "metrics.port", None, integer(0, 65535, optional=True, allowed="0..65535 (0 picks a free port)"),
        doc="Port of the controller's Prometheus metrics endpoint (0: a free one); unset: none.")
    cluster_id: str = option("cluster.id", "pyq-cluster", custom("string", _cluster_id, "a non-empty id"),
                             doc="The cluster's id, the brokers' cluster.id.")
    node_id: int | None = option("node.id", None, POSITIVE,
                                 doc="This controller's id among controller.quorum.voters.")
    voters: dict[int, tuple[str, int]] | None = option(
        "controller.quorum.voters", None, VOTERS,
        doc="Every voter's id and quorum address; unset: a lone controller.")
    election_timeout_ms: int | None = option(
        "controller.quorum.election.timeout.ms", None, POSITIVE, default_doc="1000",
        doc="How long a follower waits for the leader before it stands for election.")
    fetch_timeout_ms: int | None = option(
        "controller.quorum.fetch.timeout.ms", None, POSITIVE, default_doc="twice the election timeout",
        doc="How long a voter waits to fetch from the leader before it looks for another.")
    listeners: dict[int, tuple[str, int]] | None = option(
        "controller.listeners", None, VOTERS, default_doc="",
        doc="Every controller's request listener, for DescribeQuorum and DescribeCluster to name.")

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, str]) -> ControllerOptions:
        """From option strings (only these names); ValueError naming the option, its value
        and what is allowed."""
        values: dict[str, Any] = {}
        for name, raw in overrides.items():
            spec = OPTIONS[name]
            try:
                values[spec.attr] = spec.kind.parse(raw)
            except Refused as e:
                raise ValueError(str(e)) from None
            except ValueError as e:
                if spec.kind is VOTERS:  # parse_voters names the option and the rule
                    raise ValueError(str(e).replace("controller.quorum.voters", name)) from None
                verb = "is not allowed: must be" if name == "metrics.port" else "is invalid:"
                shown = raw if name == "metrics.port" else repr(raw)
                raise ValueError(f"{name}={shown} {verb} {spec.kind.allowed}"
                                 + (" is allowed" if verb == "is invalid:" else "")) from None
        quorum = [n for n in overrides if n in QUORUM_OPTIONS]
        if quorum and values.get("voters") is None:
            raise ValueError(f"{sorted(quorum)[0]} is invalid without controller.quorum.voters "
                             "(ID@HOST:PORT,...): a lone controller takes no quorum option")
        options = cls(**values)
        if options.voters is not None and options.node_id not in options.voters:
            raise ValueError(f"node.id={options.node_id} is invalid: it must be one of "
                             f"controller.quorum.voters' ids {sorted(options.voters)}")
        return options


OPTIONS = declared(ControllerOptions)
#: The options of a quorum of controllers (a lone controller takes none).
QUORUM_OPTIONS = ("node.id", "controller.quorum.voters", "controller.quorum.election.timeout.ms",
                  "controller.quorum.fetch.timeout.ms")
