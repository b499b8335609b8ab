"""``/transactions``: every transactional id the coordinators hold, with its state,
producer id and epoch, timeout, open time and partitions (ListTransactions, then
DescribeTransactions), read-only."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template

from .clients import clients_of

blueprint = Blueprint("transactions", __name__)


@blueprint.route("/transactions")
def transaction_list() -> str:
    with clients_of(current_app).session() as c:
        listed = c.admin.list_transactions()
        described = c.admin.describe_transactions([t.transactional_id for t in listed]) \
            if listed else {}
    return render_template("transactions.html",
                           transactions=[described[t] for t in sorted(described)])
