"""The controller quorum's I/O: the Raft core of :mod:`broker_sim.raft` on disks, sockets
and a clock.

:class:`MetadataQuorum` is one controller's member (KRaft's RaftClient): the application
registers a :class:`RaftListener` (``handle_commit``, ``handle_snapshot``,
``handle_leader_change``), appends records as the leader of an epoch
(:meth:`~MetadataQuorum.append`, then :meth:`~MetadataQuorum.await_committed`), takes
snapshots and asks who leads. Its metadata log lives in ``DATA_DIR/__cluster_metadata-0/``
(:mod:`.storage`); voters talk over TCP on their quorum addresses (:mod:`.transport`),
Kafka's ``controller.quorum.voters`` (:func:`parse_voters`); the encoding of the messages is
one seam (:mod:`.codec`).
"""

from .quorum import MetadataQuorum, QuorumDescription, RaftListener, ReplicaState
from .storage import LOG_DIR, MetadataLogStore
from .transport import QuorumTransport, parse_voters

__all__ = ["LOG_DIR", "MetadataLogStore", "MetadataQuorum", "QuorumDescription",
           "QuorumTransport", "RaftListener", "ReplicaState", "parse_voters"]
