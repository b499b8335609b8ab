"""The timing options of a Raft core, checked at construction."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RaftConfig:
    """Durations are in the driver's time unit (milliseconds in production, simulated
    ticks in tests); the core only compares them with the ``now`` it is given.

    - ``election_timeout``: a voter with no leader starts a pre-vote after a random delay in
      ``[election_timeout, 2 * election_timeout)`` (KRaft's controller.quorum.election.timeout.ms).
    - ``fetch_timeout``: a follower that has not had a successful fetch response for this long
      starts a pre-vote (controller.quorum.fetch.timeout.ms). A voter also refuses pre-votes
      while it has heard from a leader within it.
    - ``fetch_max_wait``: how long the leader parks a fetch with nothing new to return.
    - ``request_timeout``: a fetch or snapshot fetch unanswered this long is sent again
      (controller.quorum.request.timeout.ms); must exceed ``fetch_max_wait``.
    - ``begin_quorum_interval``: the leader resends BeginQuorumEpoch this often to voters that
      have not fetched in its epoch.
    - ``check_quorum_timeout``: a leader that has not been fetched from by a majority of voters
      for this long resigns (KRaft uses 1.5 × the fetch timeout).
    - ``max_fetch_entries``: the most entries one fetch response carries.
    """

    election_timeout: int = 1000
    fetch_timeout: int = 2000
    fetch_max_wait: int = 500
    request_timeout: int = 2000
    begin_quorum_interval: int = 500
    check_quorum_timeout: int = 3000
    max_fetch_entries: int = 256

    def __post_init__(self) -> None:
        for name in ("election_timeout", "fetch_timeout", "fetch_max_wait", "request_timeout",
                     "begin_quorum_interval", "check_quorum_timeout", "max_fetch_entries"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"Raft option {name}={value!r} is invalid: a positive integer "
                                 "is allowed")
        if self.request_timeout <= self.fetch_max_wait:
            raise ValueError(f"Raft option request_timeout={self.request_timeout} is invalid: it "
                             f"must exceed fetch_max_wait={self.fetch_max_wait}")
        if self.check_quorum_timeout <= self.fetch_timeout:
            raise ValueError(f"Raft option check_quorum_timeout={self.check_quorum_timeout} is "
                             f"invalid: it must exceed fetch_timeout={self.fetch_timeout}")
