"""When a record that failed is delivered again, and when pyq stops trying.

A record that has failed ``n`` times (``n >= 1``) may be delivered again ``delay_ms(n)``
after its n-th failure, the delay doubling per failure up to a cap::

    delay_ms(n) = min(retry_backoff_ms * 2**(n - 1), max_retry_backoff_ms)

It is retried at most ``max_retries`` times: its ``max_retries + 1``-th failure sends it to
the dead-letter list instead of scheduling it again, so a record that always fails costs a
bounded number of deliveries and never stalls its partition. ``max_retries = 0`` dead-letters
on the first failure. The limit is this one named option, not a hidden threshold (Storm's
spout stopped the topology after "too many tuple failures", a count nobody configured).

Options (as the source's options parser passes them, already converted to int)::

    field                  option               default   allowed
    max_retries            maxRetries           3         integer >= 0
    retry_backoff_ms       retryBackoffMs       1000      integer >= 0
    max_retry_backoff_ms   maxRetryBackoffMs    60000     integer >= retryBackoffMs

>>> policy = RetryPolicy(max_retries=3, retry_backoff_ms=100, max_retry_backoff_ms=250)
>>> [policy.delay_ms(n) for n in (1, 2, 3, 4)]
[100, 200, 250, 250]
>>> policy.exhausted(3), policy.exhausted(4)
(False, True)
>>> RetryPolicy(max_retries=-1)
Traceback (most recent call last):
...
broker_sim.protocol.errors.InvalidConfig: Invalid value -1 for option maxRetries (max_retries): must be an integer >= 0
"""

from __future__ import annotations

from dataclasses import dataclass

from broker_sim.protocol.errors import InvalidConfig

# field -> option name as users write it
OPTION_NAMES = {
    "max_retries": "maxRetries",
    "retry_backoff_ms": "retryBackoffMs",
    "max_retry_backoff_ms": "maxRetryBackoffMs",
}


@dataclass(frozen=True)
class RetryPolicy:
    """Validated retry settings (immutable, so one instance may be shared by every partition)."""

    max_retries: int = 3
    retry_backoff_ms: int = 1000
    max_retry_backoff_ms: int = 60_000

    def __post_init__(self) -> None:
        for name, option in OPTION_NAMES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidConfig(
                    f"Invalid value {value!r} for option {option} ({name}): must be an integer >= 0"
                )
        if self.max_retry_backoff_ms < self.retry_backoff_ms:
            raise InvalidConfig(
                f"Invalid value {self.max_retry_backoff_ms!r} for option maxRetryBackoffMs"
                f" (max_retry_backoff_ms): must be >= retryBackoffMs ({self.retry_backoff_ms})"
            )

    def delay_ms(self, failures: int) -> int:
        """How long after its ``failures``-th failure a record may be delivered again."""
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures}")
        if self.retry_backoff_ms == 0:
            return 0
        # Past 2**62 the cap has long been reached; avoid building huge ints.
        doubling = 2 ** min(failures - 1, 62)
        return min(self.retry_backoff_ms * doubling, self.max_retry_backoff_ms)

    def exhausted(self, failures: int) -> bool:
        """True once a record has failed more often than it may be retried."""
        return failures > self.max_retries
