# The firmware's loop period as shipped (shared_fsm/config.py), for tests whose expectations count
# loop ticks: a tick count or a per-tick step is derived from it, not written for one rate.
from surepick.shared_fsm.config import Config

PERIOD_MS = Config().loop_period_ms
PERIOD_US = PERIOD_MS * 1000
