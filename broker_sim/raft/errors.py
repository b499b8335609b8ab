"""What the Raft core raises when the application asks for something its state refuses."""

from __future__ import annotations


class RaftError(Exception):
    """A request the core refuses in its current state (the message says why)."""


class NotLeaderError(RaftError):
    def __init__(self, node_id: int, leader_id: int | None, epoch: int) -> None:
        super().__init__(f"node {node_id} is not the leader of epoch {epoch} "
                         f"(leader: {leader_id})")
        self.leader_id = leader_id
        self.epoch = epoch
