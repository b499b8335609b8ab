"""The security APIs: SASL (SaslHandshake, SaslAuthenticate), SCRAM users (Describe/Alter
UserScramCredentials) and ACLs (DescribeAcls, CreateAcls, DeleteAcls), and the
authorization check every other API calls.

:class:`SecurityApis` answers through its :class:`~.kafka_apis.KafkaApis` (which routes
these API keys here). SASL runs per connection on the request's
:class:`~broker_sim.network.session.Session`: the processor lets nothing else through
until ``authenticated``, and a failed attempt is answered, then the connection closed.
Credential and ACL changes are forwarded to the controller; reads come from this broker's
copy of the cluster image.

Threading: request-handler threads, several at once; no state of its own beyond the
authorizer's index (see :class:`~broker_sim.security.authorizer.Authorizer`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..network.processor import RAW_SASL_VERSION
from ..network.request_channel import Request, Response
from ..protocol.api import ApiKey
from ..protocol.errors import (
    ClusterAuthorizationFailed,
    DuplicateResource,
    IllegalSaslState,
    KafkaError,
    ResourceNotFound,
    SaslAuthenticationFailed,
    SecurityDisabled,
    UnsupportedSaslMechanism,
)
from ..protocol.schema import Data
from ..security import principal
from ..security.acl import CLUSTER_NAME, AclBinding, AclFilter, Operation, ResourceType
from ..security.authorizer import Authorizer
from ..security.oauthbearer import JWKS_URL, UnsecuredValidator, Validator, validator
from ..security.oauthbearer import MECHANISM as OAUTHBEARER
from ..security.sasl_server import SaslServer
from ..security.scram import MECHANISMS, ScramCredential

if TYPE_CHECKING:
    from .api_context import ApiContext

log = logging.getLogger(__name__)

#: The operations Kafka reports in an ``authorized_operations`` bitfield, per resource type.
REPORTED_OPERATIONS = {
    ResourceType.CLUSTER: (Operation.CREATE, Operation.ALTER, Operation.DESCRIBE,
                           Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS,
                           Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE),
    ResourceType.TOPIC: (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE,
                         Operation.ALTER, Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS,
                         Operation.ALTER_CONFIGS),
}


class SecurityApis:
    def __init__(self, apis: ApiContext, authorizer: Authorizer | None) -> None:
        self.apis = apis
        self.config = apis.config
        self.metadata = apis.metadata
        self.authorizer = authorizer
        #: OAUTHBEARER's token validator (one per broker: it caches the JWKS), if enabled.
        self.token_validator: Validator | None = None
        if OAUTHBEARER in self.config.sasl_enabled_mechanisms:
            self.token_validator = validator(self.config.oauthbearer)
            if isinstance(self.token_validator, UnsecuredValidator):
                log.warning("OAUTHBEARER accepts unsigned tokens (alg none, Kafka's development "
                            "mode): anyone may claim any principal; set %s for signed tokens",
                            JWKS_URL)
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.SASL_HANDSHAKE: self.handle_sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: self.handle_sasl_authenticate,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self.handle_describe_user_scram_credentials,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.handle_alter_user_scram_credentials,
            ApiKey.DESCRIBE_ACLS: self.handle_describe_acls,
            ApiKey.CREATE_ACLS: self.handle_create_acls,
            ApiKey.DELETE_ACLS: self.handle_delete_acls,
        }

    # ---- authorization --------------------------------------------------------------
    def authorized(self, request: Request, operation: Operation, resource_type: ResourceType,
                   name: str = CLUSTER_NAME) -> bool:
        """May this request's principal do ``operation`` on the resource? (Always, without
        an authorizer.)"""
        if self.authorizer is None:
            return True
        if operation is Operation.CLUSTER_ACTION and self._from_broker_listener(request):
            return True
        who = request.session.principal if request.session is not None else principal.ANONYMOUS
        return self.authorizer.authorize(who, request.client_address, operation, resource_type, name)

    def _from_broker_listener(self, request: Request) -> bool:
        """Did the request come over the PLAINTEXT inter-broker listener of a broker whose
        clients have listeners of their own? Brokers reach each other there unauthenticated
        (replica fetches, transaction markers), so that listener may do what brokers do to each
        other (ClusterAction) and nothing more without ACLs. Kafka asks for the inter-broker
        principal in ``super.users`` instead; pyq's brokers have no principal of their own,
        and a super user there would let any connection to it bypass every ACL."""
        inter = self.config.inter_broker_listener
        return (request.session is not None and inter.security_protocol == "PLAINTEXT"
                and request.session.listener_name == inter.name
                and len(self.config.effective_listeners) > 1)

    def may_write_some_topic(self, request: Request) -> bool:
        """An idempotent producer needs IdempotentWrite on the cluster or Write on some topic."""
        if self.authorized(request, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER):
            return True
        assert self.authorizer is not None
        who = request.session.principal if request.session is not None else principal.ANONYMOUS
        return self.authorizer.may_on_some(who, request.client_address, Operation.WRITE,
                                           ResourceType.TOPIC)

    def authorized_operations(self, request: Request, resource_type: ResourceType,
                              name: str = CLUSTER_NAME) -> int:
        """KIP-430's bitfield of what the principal may do on a resource (bit = operation
        code), over the operations Kafka reports for that kind of resource."""
        return sum(1 << int(op) for op in REPORTED_OPERATIONS[resource_type]
                   if self.authorized(request, op, resource_type, name))

    # ---- SASL ------------------------------------------------------------------------
    def credentials(self, user: str) -> dict[str, ScramCredential]:
        """The user's SCRAM credentials from this broker's copy of the cluster image."""
        return {m: ScramCredential.from_json(c) for m, c in self.metadata.image.scram.get(user, {}).items()}

    def handle_sasl_handshake(self, request: Request) -> None:
        session = request.session
        mechanisms = list(self.config.sasl_enabled_mechanisms)
        if session is None or not session.listener.uses_sasl or session.authenticated \
                or session.sasl is not None:
            self.apis.respond(request, Data(error_code=IllegalSaslState.code, mechanisms=mechanisms))
            return
        mechanism = request.body.mechanism
        if mechanism not in mechanisms:
            log.info("connection from %s on %s: SASL mechanism %r is not enabled (enabled: %s)",
                     request.client_address, session.listener_name, mechanism, mechanisms)
            self.apis.respond(request, Data(error_code=UnsupportedSaslMechanism.code, mechanisms=mechanisms),
                         close_after_send=True)
            return
        session.sasl = SaslServer(mechanism, self.credentials,
                                  self.token_validator.validate if self.token_validator else None)
        session.sasl_raw_tokens = request.header.api_version == 0
        self.apis.respond(request, Data(error_code=0, mechanisms=mechanisms))

    def handle_sasl_authenticate(self, request: Request) -> None:
        session = request.session
        raw = request.header.api_version == RAW_SASL_VERSION
        if session is None or session.sasl is None or session.authenticated:
            self.apis.respond(request, Data(error_code=IllegalSaslState.code, auth_bytes=b"",
                                       error_message="SaslAuthenticate before a SaslHandshake",
                                       session_lifetime_ms=0), close_after_send=True)
            return
        sasl = session.sasl
        try:
            token = sasl.evaluate(request.body.auth_bytes)
        except SaslAuthenticationFailed as e:
            log.info("connection from %s on %s: SASL %s authentication failed: %s",
                     request.client_address, session.listener_name, sasl.mechanism, e.message)
            if raw:  # a bare-token exchange has no way to carry an error: close
                self.apis.channel.send_response(Response(request, None, close_connection=True))
            else:
                self.apis.respond(request, Data(error_code=SaslAuthenticationFailed.code, auth_bytes=b"",
                                           error_message=e.message, session_lifetime_ms=0),
                             close_after_send=True)
            return
        if sasl.complete:
            assert sasl.username is not None
            session.principal = principal.user(sasl.username)
            if sasl.expires_at is not None:
                session.expires_at_ms = int(sasl.expires_at * 1000)
            session.authenticated = True
            session.sasl = None
            session.sasl_raw_tokens = False
            log.debug("connection from %s authenticated as %s (%s)", request.client_address,
                      session.principal, sasl.mechanism)
        if raw:
            self.apis.channel.send_response(Response(request, len(token).to_bytes(4, "big") + token))
        else:
            self.apis.respond(request, Data(error_code=0, error_message=None, auth_bytes=token,
                                       session_lifetime_ms=0))

    # ---- SCRAM users ------------------------------------------------------------------
    def handle_describe_user_scram_credentials(self, request: Request) -> None:
        if not self.authorized(request, Operation.DESCRIBE, ResourceType.CLUSTER):
            self.apis.respond(request, Data(throttle_time_ms=0, error_code=ClusterAuthorizationFailed.code,
                                            error_message="Describe on the cluster is needed", results=[]))
            return
        store = self.metadata.image.scram
        names = sorted(store) if request.body.users is None else [u.name for u in request.body.users]
        results = []
        for name in dict.fromkeys(names):
            out = Data(user=name, error_code=0, error_message=None, credential_infos=[])
            if names.count(name) > 1:
                out.error_code, out.error_message = DuplicateResource.code, f"{name} is asked for twice"
            elif name not in store:
                out.error_code = ResourceNotFound.code
                out.error_message = f"attempt to describe a user credential that does not exist: {name}"
            else:
                out.credential_infos = [Data(mechanism=MECHANISMS[m][1], iterations=c["iterations"])
                                        for m, c in sorted(store[name].items())]
            results.append(out)
        self.apis.respond(request, Data(throttle_time_ms=0, error_code=0, error_message=None, results=results))

    def handle_alter_user_scram_credentials(self, request: Request) -> None:
        body = request.body
        if not self.authorized(request, Operation.ALTER, ResourceType.CLUSTER):
            users = dict.fromkeys([c.name for c in [*body.deletions, *body.upsertions]])
            self.apis.respond(request, Data(throttle_time_ms=0, results=[
                Data(user=u, error_code=ClusterAuthorizationFailed.code,
                     error_message="Alter on the cluster is needed") for u in users]))
            return
        response = self.apis.controller.alter_scram(body)
        self.apis.refresh_metadata()
        self.apis.respond(request, response)

    # ---- ACLs ------------------------------------------------------------------------
    def _acl_refusal(self, request: Request, operation: Operation) -> KafkaError | None:
        if self.authorizer is None:
            return SecurityDisabled("no authorizer is configured (authorizer.class.name)")
        if not self.authorized(request, operation, ResourceType.CLUSTER):
            return ClusterAuthorizationFailed(f"{operation.name.title()} on the cluster is needed")
        return None

    def handle_describe_acls(self, request: Request) -> None:
        body = request.body
        refusal = self._acl_refusal(request, Operation.DESCRIBE)
        if refusal is None:
            try:
                wanted = AclFilter.create(body.resource_type_filter, body.resource_name_filter,
                                          body.pattern_type_filter, body.principal_filter,
                                          body.host_filter, body.operation, body.permission_type)
            except KafkaError as e:
                refusal = e
        if refusal is not None:
            self.apis.respond(request, Data(throttle_time_ms=0, error_code=refusal.code,
                                            error_message=refusal.message or None, resources=[]))
            return
        by_resource: dict[tuple[int, str, int], list[Data]] = {}
        for raw in self.metadata.image.acls:
            b = AclBinding.from_json(raw)
            if wanted.matches(b):
                by_resource.setdefault((int(b.resource_type), b.name, int(b.pattern)), []).append(
                    Data(principal=b.principal, host=b.host, operation=int(b.operation),
                         permission_type=int(b.permission)))
        self.apis.respond(request, Data(throttle_time_ms=0, error_code=0, error_message=None, resources=[
            Data(resource_type=t, resource_name=n, pattern_type=p, acls=acls)
            for (t, n, p), acls in by_resource.items()]))

    def handle_create_acls(self, request: Request) -> None:
        refusal = self._acl_refusal(request, Operation.ALTER)
        if refusal is not None:
            self.apis.respond(request, Data(throttle_time_ms=0, results=[
                Data(error_code=refusal.code, error_message=refusal.message or None)
                for _ in request.body.creations]))
            return
        response = self.apis.controller.create_acls(request.body)
        self.apis.refresh_metadata()
        self.apis.respond(request, response)

    def handle_delete_acls(self, request: Request) -> None:
        refusal = self._acl_refusal(request, Operation.ALTER)
        if refusal is not None:
            self.apis.respond(request, Data(throttle_time_ms=0, filter_results=[
                Data(error_code=refusal.code, error_message=refusal.message or None, matching_acls=[])
                for _ in request.body.filters]))
            return
        response = self.apis.controller.delete_acls(request.body)
        self.apis.refresh_metadata()
        self.apis.respond(request, response)
