"""The group coordinator: consumer groups' membership (the classic rebalance protocol)
and their committed offsets, kept as records of ``__consumer_offsets``."""

from .config import GroupConfig
from .coordinator import GroupCoordinator

__all__ = ["GroupConfig", "GroupCoordinator"]
