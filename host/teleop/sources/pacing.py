"""The fixed-rate polling loop of the live device sources (OpenVR, SpaceMouse): a reading, then a
wait until the next one is due."""
import time


class Pacer:
    """Paces a polling loop at rate_hz, from now (`start`, time.monotonic()).

    Reading k is due k periods after the start, not one period after the last reading ended: a
    slow reading is followed by quicker ones until the loop is back on its grid, so the rate holds
    on average."""

    def __init__(self, rate_hz: float) -> None:
        self.start = time.monotonic()
        self.period = 1.0 / rate_hz
        self._due = self.start

    def wait(self) -> None:
        """Sleep until the next reading is due (not at all if it already is)."""
        self._due += self.period
        delay = self._due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
