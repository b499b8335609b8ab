"""A follower whose broker died caught up is not proposed back into the ISR.

The controller fences a broker whose session lapses and takes it out of every ISR. Its
last fetches made it look caught up, so until ``replica.lag.time.max.ms`` passes the
leader would ask (AlterPartition) to add it back, and the controller would refuse each
time. The leader leaves fenced brokers out (KIP-841); once the broker returns, it rejoins.
"""

from __future__ import annotations

from pathlib import Path

from broker_sim.controller.server import ControllerServer
from broker_sim.server import Broker, BrokerConfig
from tests.wire import create_topic, partition_states, wait_for


def _config(tmp_path: Path, i: int, controller: ControllerServer) -> BrokerConfig:
    return BrokerConfig(broker_id=i, port=0, data_dir=tmp_path / f"b{i}",
                        controller=f"127.0.0.1:{controller.port}", replica_lag_time_max_ms=60_000)


def test_a_fenced_follower_stays_out_of_the_isr_until_its_broker_returns(tmp_path: Path) -> None:
    controller = ControllerServer(tmp_path / "controller", port=0, session_timeout_ms=1500).start()
    brokers = [Broker(_config(tmp_path, i, controller)).start() for i in range(2)]
    try:
        create_topic(brokers[0].port, "fenced", 1, 2, {"min.insync.replicas": "1"})
        states = wait_for(lambda: (s := partition_states(brokers[0].port, "fenced")) and
                          len(s[0][1]) == 2 and s, what="both replicas in sync")
        leader_id = states[0][0]
        leader, follower_id = brokers[leader_id], 1 - leader_id
        partition = leader.replica_manager.partition("fenced", 0)
        wait_for(lambda: partition.followers[follower_id].last_fetch_ms, what="the follower fetching")

        proposals: list[list[int]] = []  # every AlterPartition the leader sends
        send = leader.replica_manager.alter_partition

        def recording(p, isr: list[int]) -> None:  # the Partition
            proposals.append(list(isr))
            send(p, isr)
        leader.replica_manager.alter_partition = recording

        brokers[follower_id].shutdown()  # its session lapses: fenced, out of the ISR
        wait_for(lambda: partition.isr == [leader_id], timeout=30, what="the ISR to shrink")
        # caught up at its last fetch and well within replica.lag.time.max.ms, but fenced:
        # several ISR-maintenance rounds, all begun after the shrink, pass without asking for
        # it back
        rounds = leader.replica_manager.isr_maintenance_runs
        wait_for(lambda: leader.replica_manager.isr_maintenance_runs >= rounds + 4,
                 what="four more ISR-maintenance rounds")
        assert not [isr for isr in proposals if follower_id in isr], proposals
        assert partition.isr == [leader_id]

        brokers[follower_id] = Broker(_config(tmp_path, follower_id, controller)).start()
        wait_for(lambda: sorted(partition.isr) == [0, 1], timeout=30,
                 what="the returned broker to rejoin the ISR")
    finally:
        for broker in brokers:
            broker.shutdown()
        controller.shutdown()
