"""SaslHandshake (key 17, v0-1) and SaslAuthenticate (key 36, v0-2): KIP-43 and KIP-152.

A client on a SASL listener first names a mechanism with SaslHandshake; the broker answers
with the mechanisms it enables (and an error if the named one is not among them). After a
v1 handshake the mechanism's tokens travel inside SaslAuthenticate requests; after a v0
handshake they travel as bare size-prefixed frames with no Kafka header (the network layer
handles those). SaslAuthenticate is flexible from v2; ``session_lifetime_ms`` (v1+, KIP-368)
is 0: pyq does not ask clients to re-authenticate.
"""

from ..primitives import Array, Bytes, Int16, Int64, NullableString, String
from ..schema import Field, Message

SaslHandshakeRequest = Message("SaslHandshakeRequest", api_key=17, valid="0-1", flexible="none",
                               fields=[
    Field("mechanism", String),
])

SaslHandshakeResponse = Message("SaslHandshakeResponse", api_key=17, valid="0-1", flexible="none",
                                fields=[
    Field("error_code", Int16),
    Field("mechanisms", Array(String)),
])

SaslAuthenticateRequest = Message("SaslAuthenticateRequest", api_key=36, valid="0-2", flexible="2+",
                                  fields=[
    Field("auth_bytes", Bytes),
])

SaslAuthenticateResponse = Message("SaslAuthenticateResponse", api_key=36, valid="0-2",
                                   flexible="2+", fields=[
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("auth_bytes", Bytes),
    Field("session_lifetime_ms", Int64, versions="1+"),
])
