"""The broker's reactor network layer (acceptor -> processors -> request channel)."""

from .connection_quotas import ConnectionQuotas, TooManyConnections
from .listener import Listener
from .request_channel import Request, RequestChannel, Response
from .socket_server import SocketServer

__all__ = ["ConnectionQuotas", "Listener", "Request", "RequestChannel", "Response", "SocketServer",
           "TooManyConnections"]
