"""The cluster controller: liveness, assignment, leader election, ISR changes."""

from .controller import Controller
from .image import BrokerInfo, ClusterImage, PartitionInfo, TopicInfo

__all__ = ["BrokerInfo", "ClusterImage", "Controller", "PartitionInfo", "TopicInfo"]
