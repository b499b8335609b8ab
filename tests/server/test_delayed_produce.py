"""A delayed acks=all produce times out at its timeout and leaves nothing behind."""

from __future__ import annotations

import time
from pathlib import Path

from broker_sim.controller.server import ControllerServer
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import RequestTimedOut
from broker_sim.protocol.records import RecordBatchBuilder
from broker_sim.server import Broker, BrokerConfig
from tests.wire import WireClient, create_topic, partition_states, produce_body, wait_for


def test_acks_all_times_out_when_a_follower_is_stuck(tmp_path: Path) -> None:
    controller = ControllerServer(tmp_path / "controller", port=0, session_timeout_ms=30_000).start()
    brokers = []
    try:
        for i in range(2):
            cfg = BrokerConfig(broker_id=i, port=0, data_dir=tmp_path / f"b{i}",
                               controller=f"127.0.0.1:{controller.port}", replica_lag_time_max_ms=60_000)
            brokers.append(Broker(cfg).start())
        create_topic(brokers[0].port, "stuck", 1, 2, {"min.insync.replicas": "1"})
        states = wait_for(lambda: (s := partition_states(brokers[0].port, "stuck")) and
                          len(s[0][1]) == 2 and s, what="both replicas in sync")
        leader = brokers[states[0][0]]
        follower = brokers[1 - states[0][0]]
        follower_id = follower.config.broker_id
        wait_for(lambda: leader.replica_manager.partition("stuck", 0).followers[follower_id].last_fetch_ms,
                 what="the follower fetching")
        follower.replica_manager.fetchers.shutdown()  # a stuck follower, still in the ISR

        b = RecordBatchBuilder()
        b.append(int(time.time() * 1000), None, b"never replicated")
        with WireClient(leader.port) as c:
            t0 = time.monotonic()
            r = c.request(ApiKey.PRODUCE, 8, produce_body("stuck", 0, b.build(), acks=-1, timeout_ms=1000))
            waited = time.monotonic() - t0
        assert r.responses[0].partition_responses[0].error_code == RequestTimedOut.code
        assert 0.95 <= waited < 1.6, waited
        assert leader.replica_manager.produce_purgatory.num_delayed() == 0  # not in the timer any more
    finally:
        for broker in brokers:
            broker.shutdown()
        controller.shutdown()
