"""SCRAM and PLAIN as the broker and the client speak them (RFC 5802 / RFC 7677)."""

from __future__ import annotations

import base64

import pytest

from broker_sim.controller.scram_credentials import (
    Deletion,
    Upsertion,
    apply_changes,
    credential_from_spec,
)
from broker_sim.protocol.errors import (
    DuplicateResource,
    ResourceNotFound,
    SaslAuthenticationFailed,
    UnacceptableCredential,
    UnsupportedSaslMechanism,
)
from broker_sim.security.sasl_server import SaslServer
from broker_sim.security.scram import (
    ScramClientExchange,
    ScramCredential,
    ScramServerExchange,
    salted_password,
)
from connector.client.security import PlainClient, ScramClient

# RFC 7677 section 3: user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def test_rfc7677_exchange_byte_for_byte() -> None:
    credential = ScramCredential.from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT)
    server = ScramServerExchange("SCRAM-SHA-256", {"user": credential}.get, nonce=RFC_SERVER_NONCE)
    client = ScramClientExchange("SCRAM-SHA-256", "user", "pencil", nonce=RFC_CLIENT_NONCE)

    first = client.first()
    assert first == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = server.evaluate(first)
    assert server_first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                            b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = client.final(server_first)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = server.evaluate(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify(server_final)
    assert server.complete and server.username == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_and_unknown_user_get_the_same_refusal(mechanism: str) -> None:
    store = {"alice": {mechanism: ScramCredential.from_password(mechanism, "right")}}
    messages = []
    for user, password in [("alice", "wrong"), ("mallory", "anything")]:
        server = SaslServer(mechanism, lambda u: store.get(u, {}))
        client = ScramClient(mechanism, user, password)
        with pytest.raises(SaslAuthenticationFailed) as info:
            server.evaluate(client.respond(server.evaluate(client.first())) or b"")
        messages.append(info.value.message)
        assert not server.complete
    assert messages[0] == messages[1] and mechanism in messages[0]


def test_client_refuses_a_server_that_does_not_know_the_password() -> None:
    """The server's signature proves it holds the credential: a forged one is refused."""
    real = ScramCredential.from_password("SCRAM-SHA-256", "pw")
    server = ScramServerExchange("SCRAM-SHA-256", {"u": real}.get)
    client = ScramClientExchange("SCRAM-SHA-256", "u", "pw")
    server.evaluate(client.final(server.evaluate(client.first())))
    with pytest.raises(SaslAuthenticationFailed, match="signature"):
        client.verify(b"v=" + base64.b64encode(b"\0" * 32))


def test_usernames_with_comma_and_equals_are_escaped() -> None:
    cred = ScramCredential.from_password("SCRAM-SHA-512", "pw")
    server = ScramServerExchange("SCRAM-SHA-512", {"a=b,c": cred}.get)
    client = ScramClientExchange("SCRAM-SHA-512", "a=b,c", "pw")
    assert b"n=a=3Db=2Cc," in client.first()
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.username == "a=b,c"


def test_plain_is_checked_against_the_stored_scram_credential() -> None:
    store = {"bob": {"SCRAM-SHA-512": ScramCredential.from_password("SCRAM-SHA-512", "bob-pw")}}
    ok = SaslServer("PLAIN", lambda u: store.get(u, {}))
    assert ok.evaluate(PlainClient("bob", "bob-pw").first()) == b""
    assert ok.complete and ok.username == "bob"
    for user, password in [("bob", "nope"), ("eve", "bob-pw")]:
        server = SaslServer("PLAIN", lambda u: store.get(u, {}))
        with pytest.raises(SaslAuthenticationFailed, match="PLAIN"):
            server.evaluate(PlainClient(user, password).first())
    with pytest.raises(SaslAuthenticationFailed, match="malformed"):
        SaslServer("PLAIN", lambda u: {}).evaluate(b"no separators")


def test_stored_credential_holds_no_password() -> None:
    cred = ScramCredential.from_password("SCRAM-SHA-256", "secret-password")
    stored = str(cred.to_json())
    assert "secret-password" not in stored
    assert ScramCredential.from_json(cred.to_json()) == cred
    assert cred.matches_password("SCRAM-SHA-256", "secret-password")
    assert not cred.matches_password("SCRAM-SHA-256", "secret-passwore")


def _upsert(user: str, mech_id: int = 1, iterations: int = 4096, password: str = "pw") -> Upsertion:
    salt = b"0123456789abcdef"
    mech = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}.get(mech_id, "SCRAM-SHA-256")
    return Upsertion(user, mech_id, iterations, salt, salted_password(mech, password, salt, iterations))


def test_credential_changes_follow_kip_554() -> None:
    store: dict = {}
    results = apply_changes(store, [], [_upsert("alice"), _upsert("alice", 2), _upsert("bob")])
    assert results == {"alice": None, "bob": None}
    assert set(store["alice"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}

    results = apply_changes(store, [Deletion("bob", 2), Deletion("alice", 1)],
                            [_upsert("carol", iterations=100), _upsert("dave", 7),
                             _upsert("erin"), _upsert("erin"), _upsert("")])
    assert isinstance(results["bob"], ResourceNotFound)
    assert results["alice"] is None
    assert isinstance(results["carol"], UnacceptableCredential)
    assert isinstance(results["dave"], UnsupportedSaslMechanism)
    assert isinstance(results["erin"], DuplicateResource)
    assert isinstance(results[""], UnacceptableCredential)
    assert set(store) == {"alice", "bob"}  # only valid users changed
    assert set(store["alice"]) == {"SCRAM-SHA-512"}

    apply_changes(store, [Deletion("bob", 1)], [])
    assert "bob" not in store  # a user without credentials is gone


def test_add_scram_spec() -> None:
    user, mech, cred = credential_from_spec("SCRAM-SHA-256=[name=admin,password=admin-secret]")
    assert (user, mech, cred.iterations) == ("admin", "SCRAM-SHA-256", 4096)
    assert cred.matches_password(mech, "admin-secret")
    for bad, why in [("SCRAM-SHA-1=[name=a,password=b]", "must start with"),
                     ("SCRAM-SHA-256=name=a,password=b", "brackets"),
                     ("SCRAM-SHA-256=[name=a]", "required"),
                     ("SCRAM-SHA-256=[name=a,password=b,iterations=10]", "iterations=10"),
                     ("SCRAM-SHA-256=[name=a,pasword=b]", "pasword")]:
        with pytest.raises(ValueError, match=why):
            credential_from_spec(bad)
