"""Coordinators: brokers that own a key (a consumer group, later a transactional id) because
they lead the partition of an internal topic the key hashes to. See :mod:`.placement`."""
