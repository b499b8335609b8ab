"""The broker's server layer: API dispatch, stores, and the Broker that wires it all."""

from .broker import Broker
from .config import BrokerConfig, ConfigError

__all__ = ["Broker", "BrokerConfig", "ConfigError"]
