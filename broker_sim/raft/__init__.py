"""A sans-I/O Raft core for the controller quorum, in KRaft's shape.

:class:`RaftCore` is a pure state machine: it never touches sockets, disks, threads or the
wall clock. A driver owns one per quorum member and feeds it three things — inbound
messages (:meth:`RaftCore.step`), the time (:meth:`RaftCore.tick`, any monotonic clock; a
manual one in tests) and the application's requests (:meth:`~RaftCore.propose`,
:meth:`~RaftCore.add_voter`, :meth:`~RaftCore.remove_voter`, :meth:`~RaftCore.snapshot`) —
then drains :meth:`RaftCore.ready` and does what the :class:`Ready` says, in order: persist,
install a snapshot, apply committed entries, send messages. (etcd's raft has the same
Step/Ready split; the protocol here is KRaft's.)

KRaft's protocol rather than the Raft paper's: replication is pulled. Followers and observers
send Fetch with their log end offset and the epoch of their last entry; the leader checks that
pair against its log and answers with entries, with a diverging ``(epoch, end offset)`` that
tells the follower where to truncate, or with a snapshot id when the offset is below its log
start (the follower then sends FetchSnapshot and installs it). The leader's high watermark is
the offset a majority of voters has fetched past; it counts only once it passes the start of
the leader's epoch, marked by the LEADER_CHANGE entry every new leader appends. Elections:
a voter that misses its leader for ``fetch_timeout`` (or, with no leader, a random
``[election_timeout, 2 × election_timeout)``) asks for pre-votes (KIP-996) without changing
epoch, and only with a majority of them bumps its epoch and asks for votes. A voter refuses a
pre-vote while its leader answers it, so a node rejoining from a partition cannot unseat a
healthy leader. The leader announces itself with BeginQuorumEpoch and steps down with
EndQuorumEpoch. Voter changes (KIP-853) are VOTERS entries that take effect when appended, one
in flight at a time. Observers are members outside the voter set: they fetch and never vote.

A worked example — one voter, so it elects itself and commits alone::

    >>> import random
    >>> from broker_sim.raft import RaftConfig, RaftCore
    >>> core = RaftCore(1, {1}, RaftConfig(), random.Random(7))
    >>> core.tick(2000)                   # past the election timeout: pre-vote, vote, lead
    >>> core.role, core.epoch
    ('leader', 1)
    >>> offset = core.propose(b"create topic a")
    >>> ready = core.ready()
    >>> [type(op).__name__ for op in ready.persist]   # the driver writes these first
    ['HardState', 'Append', 'Append']
    >>> [(e.offset, e.kind, e.value) for e in ready.committed]   # then applies these
    [(0, 'leader_change', 1), (1, 'data', b'create topic a')]

With three voters the same calls also fill ``ready.messages`` (Vote, BeginQuorumEpoch,
Fetch responses), which the driver sends, and it steps the answers back in; the entries come
out in ``committed`` once two of the three have fetched them.
"""

from .config import RaftConfig
from .core import (
                   CANDIDATE,
                   FOLLOWER,
                   LEADER,
                   PROSPECTIVE,
                   RaftCore,
)
from .errors import NotLeaderError, RaftError
from .leader_state import LeaderState, ReplicaState
from .log import RaftLog
from .messages import (
                   DATA,
                   FENCED_EPOCH,
                   LEADER_CHANGE,
                   NOT_LEADER,
                   VOTERS,
                   BeginQuorumEpoch,
                   BeginQuorumEpochResponse,
                   EndQuorumEpoch,
                   Entry,
                   FetchRequest,
                   FetchResponse,
                   FetchSnapshotRequest,
                   FetchSnapshotResponse,
                   Message,
                   Snapshot,
                   VoteRequest,
                   VoteResponse,
)
from .ready import Append, HardState, PersistOp, Ready, SaveSnapshot, Stored, Truncate

__all__ = [
    "CANDIDATE", "DATA", "FENCED_EPOCH", "FOLLOWER", "LEADER", "LEADER_CHANGE", "NOT_LEADER",
    "PROSPECTIVE", "VOTERS", "Append", "BeginQuorumEpoch", "BeginQuorumEpochResponse",
    "EndQuorumEpoch", "Entry",
    "FetchRequest", "FetchResponse", "FetchSnapshotRequest", "FetchSnapshotResponse",
    "HardState", "LeaderState", "Message", "NotLeaderError", "PersistOp", "RaftConfig", "RaftCore",
    "RaftError", "RaftLog", "Ready", "ReplicaState", "SaveSnapshot", "Snapshot", "Stored", "Truncate",
    "VoteRequest", "VoteResponse",
]
