"""How the quorum's messages travel between controllers: the one seam of the encoding.

A :class:`~broker_sim.raft.Message` becomes one frame: a JSON object naming the message
type and its fields (bytes as base64, voter sets as sorted lists). The transport only calls
:func:`encode` and :func:`decode`; speaking KRaft's RPCs on the wire instead (Vote,
BeginQuorumEpoch, EndQuorumEpoch, Fetch v13+, FetchSnapshot, whose codecs are in
``broker_sim.protocol``) is a change of these two functions and of the transport's framing.

Example::

    >>> from broker_sim.raft import VoteRequest
    >>> decode(encode(VoteRequest(1, 2, 3, last_epoch=2, end_offset=10, pre_vote=True)))
    VoteRequest(src=1, dst=2, epoch=3, last_epoch=2, end_offset=10, pre_vote=True)
"""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

from ..raft import (
    BeginQuorumEpoch,
    BeginQuorumEpochResponse,
    EndQuorumEpoch,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    Snapshot,
    VoteRequest,
    VoteResponse,
)
from .storage import decode_value, encode_value

_TYPES: dict[str, type[Message]] = {t.__name__: t for t in (
    VoteRequest, VoteResponse, BeginQuorumEpoch, BeginQuorumEpochResponse, EndQuorumEpoch,
    FetchRequest, FetchResponse, FetchSnapshotRequest, FetchSnapshotResponse)}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _entry_out(e: Entry) -> list[Any]:
    return [e.offset, e.epoch, e.kind, _b64(encode_value(e.kind, e.value))]


def _entry_in(raw: list[Any]) -> Entry:
    offset, epoch, kind, value = raw
    return Entry(offset, epoch, kind, decode_value(kind, base64.b64decode(value)))


def encode(msg: Message) -> bytes:
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(msg):
        value = getattr(msg, f.name)
        if f.name == "entries":
            value = [_entry_out(e) for e in value]
        elif isinstance(value, Snapshot):
            image = value.image if isinstance(value.image, bytes) else b""
            value = [value.end_offset, value.epoch, sorted(value.voters), _b64(image)]
        fields[f.name] = value
    return json.dumps({"type": type(msg).__name__, **fields}).encode()


def decode(frame: bytes) -> Message:
    raw: dict[str, Any] = json.loads(frame)
    cls = _TYPES.get(raw.pop("type", None))
    if cls is None:
        raise ValueError("not a quorum message")
    if "entries" in raw:
        raw["entries"] = tuple(_entry_in(e) for e in raw["entries"])
    for name in ("diverging", "snapshot_id"):
        if raw.get(name) is not None:
            raw[name] = tuple(raw[name])
    if raw.get("snapshot") is not None:
        end, epoch, voters, image = raw["snapshot"]
        raw["snapshot"] = Snapshot(end, epoch, frozenset(voters), base64.b64decode(image))
    return cls(**raw)
