# Wrap-safe millisecond tick arithmetic with the RP2040's period (2**30 ms, about 12.4 days).
# The shared machine never reads a clock: the caller passes `now_ms`. We do the arithmetic
# ourselves instead of using time.ticks_diff because the unix port's tick period is 2**62,
# and the board's is 2**30: one implementation keeps traces identical everywhere.
from .compat import const

TICKS_PERIOD = const(1 << 30)
TICKS_MAX = const((1 << 30) - 1)
_TICKS_HALF = const(1 << 29)


def ticks_add(t, delta):
    return (t + delta) & TICKS_MAX


def ticks_diff(a, b):
    # Signed a - b, valid while the true distance is under half a period.
    return ((a - b + _TICKS_HALF) & TICKS_MAX) - _TICKS_HALF
