# Following a board's EVENT frames for `job start --wait`, `job rescue --wait` and `job run --wait`.
import time

from surepick.shared_fsm import link


def events_until(c, frames, deadline):
    """Each EVENT's fields once: those in `frames` (come with the reply), then each one the board
    sends until time.monotonic() reaches `deadline`. Once means whole events, not sequence
    numbers: a board that restarts numbers its events from 1 again."""
    seen = set()
    while time.monotonic() < deadline:
        for f in frames:
            e = tuple(f.fields)
            if e in seen:
                continue
            seen.add(e)
            yield e
        f = c.wait_for(link.T_EVENT, max(0.1, deadline - time.monotonic()))
        frames = [f] if f is not None else []
