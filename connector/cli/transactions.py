"""``pyq transactions list | describe``: what the transaction coordinators hold, like
``kafka-transactions.sh``.

    pyq transactions list [--state Ongoing] [--min-duration-ms 60000]
        TRANSACTIONAL-ID  PRODUCER-ID  STATE    COORDINATOR
        orders-writer     1002         Ongoing  2
    pyq transactions describe orders-writer
        TRANSACTIONAL-ID  STATE    PRODUCER-ID  EPOCH  TIMEOUT-MS  OPEN-MS  PARTITIONS  COORDINATOR
        orders-writer     Ongoing  1002         3      60000       4210     orders-0,orders-1  2

``--min-duration-ms`` finds transactions open longer than that: the ones holding
read_committed consumers back (a transaction's first record stops the last stable offset).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from .args import at_least, client_options, client_parent
from .output import add_output_options, print_table

STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
          "CompleteAbort", "Dead", "PrepareEpochFence")


def register(commands: Any) -> None:
    txns = commands.add_parser("transactions", help="list and describe transactions",
                               description="List and describe the transactional ids the "
                                           "cluster's transaction coordinators hold.")
    actions = txns.add_subparsers(dest="action", metavar="ACTION", required=True)
    client = client_parent()
    listing = actions.add_parser("list", parents=[client], help="transactional ids and states",
                                 description="Print every transactional id, its producer id, "
                                             "state and coordinator.")
    listing.add_argument("--state", action="append", choices=STATES, metavar="STATE",
                         help=f"only this state (repeatable): {', '.join(STATES)}")
    listing.add_argument("--min-duration-ms", type=at_least(0), metavar="MS",
                         help="only transactions open longer than MS")
    add_output_options(listing)
    listing.set_defaults(run=list_transactions)
    describe = actions.add_parser("describe", parents=[client], help="one transaction in full",
                                  description="Print the state, producer id and epoch, timeout, "
                                              "how long it is open and its partitions.")
    describe.add_argument("transactional_id", metavar="TRANSACTIONAL-ID", nargs="+")
    add_output_options(describe)
    describe.set_defaults(run=describe_transactions)


def _admin(args: argparse.Namespace) -> Any:
    from connector.client import Admin

    return Admin(client_options(args))


def list_transactions(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        listed = admin.list_transactions(args.state, None, args.min_duration_ms
                                         if args.min_duration_ms is not None else -1)
    print_table(args, ["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE", "COORDINATOR"],
                [[t.transactional_id, t.producer_id, t.state, t.coordinator] for t in listed])
    return 0


def describe_transactions(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        described = admin.describe_transactions(args.transactional_id)
    now = int(time.time() * 1000)
    rows = [[d.transactional_id, d.state, d.producer_id, d.producer_epoch, d.timeout_ms,
             now - d.start_time_ms if d.start_time_ms >= 0 else None,
             [f"{tp.topic}-{tp.partition}" for tp in d.partitions], d.coordinator]
            for d in described.values()]
    print_table(args, ["TRANSACTIONAL-ID", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS",
                       "OPEN-MS", "PARTITIONS", "COORDINATOR"], rows)
    return 0
