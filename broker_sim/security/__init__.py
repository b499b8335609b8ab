"""Security: TLS contexts, principals, SASL (PLAIN, SCRAM-SHA-256/512) and SCRAM credentials.

Everything here is sans-I/O: the network layer drives the TLS handshake in its selector
loop and the request handlers feed SASL tokens to a :class:`~.sasl_server.SaslServer`.
"""
