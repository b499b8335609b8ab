"""``pyq console``: a web console that is a Kafka client.

It talks to the cluster only through pyq's client (:mod:`connector.client`), so it works
against pyq's brokers and Apache Kafka alike, with the client options of the ``pyq``
commands (``--bootstrap-server``, ``--command-config``, ``-X``). Flask serves the pages,
Jinja2 renders them (``templates/``), Chart.js (pinned, ``static/chart.umd.js``) draws the
charts. Screens, one module each:

* :mod:`.overview` ``/``: brokers, controller, topic and partition counts,
  under-replicated and offline partitions;
* :mod:`.topics` ``/topics``: partitions, sizes (DescribeLogDirs), offsets, configs;
  create; delete and truncate (DeleteRecords) only with their confirmation;
* :mod:`.messages` ``/topics/T/messages``: seek by offset, timestamp or latest N; key,
  value as text, pretty JSON or hex, headers, timestamp; produce;
* :mod:`.groups` ``/groups``: state, protocol, members and assignments, lag (:mod:`.lag`)
  and its history (:mod:`.lag_history`, sampled in the background); reset offsets,
  previewed before they are committed;
* :mod:`.pipelines` ``/pipelines``: each pyq source ``groupId``'s progress (committed
  against end offsets, lag, rate, counters) and its dead letters by reason;
* :mod:`.transactions` ``/transactions``, :mod:`.security` ``/acls`` and ``/users``:
  read-only lists.

An error from the cluster or a bad form value is rendered in the page (:mod:`.app`),
naming what was refused; nothing is changed by a request that fails.
"""

from .app import create_app
from .server import ConsoleServer

__all__ = ["ConsoleServer", "create_app"]
