"""Kafka's wire protocol, sans I/O: bytes in, Python values out, and back.

Layers, bottom up: :mod:`.primitives` (ints, varints, strings, compact forms), :mod:`.schema`
(messages declared once with per-field version ranges, compiled per version),
:mod:`.messages` (one module per API), :mod:`.header` and :mod:`.framing` (request and
response headers, the 4-byte size prefix), :mod:`.api` (which versions pyq implements and
advertises), :mod:`.records` (record batches v2: build, read, compress, checksum) and
:mod:`.errors` (Kafka's error codes as classes). Nothing here touches a socket or a file,
so the broker and the client share it and tests drive it with plain bytes.
"""
