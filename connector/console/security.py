"""``/acls`` and ``/users``: the cluster's ACL bindings (DescribeAcls) and its SCRAM users
with their mechanisms and iterations (DescribeUserScramCredentials), read-only. A cluster
without an authorizer answers DescribeAcls with SECURITY_DISABLED, shown as its error."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template

from .clients import clients_of

blueprint = Blueprint("security", __name__)


@blueprint.route("/acls")
def acls() -> str:
    with clients_of(current_app).session() as c:
        bindings = c.admin.describe_acls()
    rows = sorted(({"resource": f"{b.resource_type.name} {b.name}", "pattern": b.pattern.name,
                    "principal": b.principal, "host": b.host, "operation": b.operation.name,
                    "permission": b.permission.name} for b in bindings),
                  key=lambda r: (r["resource"], r["principal"], r["operation"]))
    return render_template("acls.html", acls=rows)


@blueprint.route("/users")
def users() -> str:
    with clients_of(current_app).session() as c:
        described = c.admin.describe_users()
    return render_template("users.html", users=sorted(described.items()))
