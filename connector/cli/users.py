"""``pyq users create | list | delete``: SCRAM users, like ``kafka-configs --entity-type users``.

    pyq users create alice --password alice-secret [--mechanism SCRAM-SHA-512] [--iterations 8192]
    pyq users list                      USER   MECHANISM      ITERATIONS
                                        alice  SCRAM-SHA-256  4096
    pyq users delete alice [--mechanism SCRAM-SHA-512]

The password is salted and hashed here (PBKDF2); the cluster receives the salt and the
salted password only, through AlterUserScramCredentials, and stores neither the password
nor anything it could be recovered from. A user can then log in with PLAIN or the SCRAM
mechanism it has a credential for, on every broker of the cluster.
"""

from __future__ import annotations

import argparse
from typing import Any

from broker_sim.security.scram import MECHANISMS

from .args import at_least, client_options, client_parent
from .output import add_output_options, print_table


def register(commands: Any) -> None:
    users = commands.add_parser("users", help="create, list and delete SCRAM users",
                                description="Create, list and delete the SCRAM credentials "
                                            "users log in with (SASL PLAIN or SCRAM).")
    actions = users.add_subparsers(dest="action", metavar="ACTION", required=True)
    client = client_parent()
    mechanisms = list(MECHANISMS)

    create = actions.add_parser("create", parents=[client], help="create or update a user",
                                description="Create a user's SCRAM credential (or replace it).")
    create.add_argument("user", metavar="USER")
    create.add_argument("--password", required=True, help="the user's password")
    create.add_argument("--mechanism", choices=mechanisms, default="SCRAM-SHA-256",
                        help="SCRAM mechanism of the credential (default SCRAM-SHA-256)")
    create.add_argument("--iterations", type=at_least(4096), default=4096, metavar="N",
                        help="PBKDF2 iterations, 4096..16384 (default 4096)")
    create.set_defaults(run=create_user)

    listing = actions.add_parser("list", parents=[client], help="users and their mechanisms",
                                 description="Print each user's SCRAM mechanisms and iterations.")
    listing.add_argument("user", metavar="USER", nargs="*", help="only these users")
    add_output_options(listing)
    listing.set_defaults(run=list_users)

    delete = actions.add_parser("delete", parents=[client], help="delete a user's credential",
                                description="Delete a user's credential for one mechanism.")
    delete.add_argument("user", metavar="USER")
    delete.add_argument("--mechanism", choices=mechanisms, default="SCRAM-SHA-256",
                        help="which credential to delete (default SCRAM-SHA-256)")
    delete.set_defaults(run=delete_user)


def _admin(args: argparse.Namespace) -> Any:
    from connector.client import Admin

    return Admin(client_options(args))


def create_user(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        admin.upsert_user(args.user, args.password, args.mechanism, args.iterations)
    print(f"user {args.user}: {args.mechanism} credential stored ({args.iterations} iterations)")
    return 0


def list_users(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        users = admin.describe_users(args.user or None)
    rows = [[user, mechanism, iterations] for user, creds in sorted(users.items())
            for mechanism, iterations in sorted(creds.items())]
    print_table(args, ["USER", "MECHANISM", "ITERATIONS"], rows)
    return 0


def delete_user(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        admin.delete_user(args.user, args.mechanism)
    print(f"user {args.user}: {args.mechanism} credential deleted")
    return 0
