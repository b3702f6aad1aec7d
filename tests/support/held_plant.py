# A plant whose virtual time waits for the host while the board's machine is busy: from the first
# exchange past IDLE on, each tick waits until the board has a whole console line (the plant
# service's hold), and that line is read in that tick. So a test that starts a job and then asks
# something of the busy board (abort it, reset its world) finds the job still running, whatever
# the host's speed: the job cannot run on between the test's requests. `busy` is set once the
# machine has left IDLE (the world has noted that state); let_go() lets the job run on by itself.
import threading

from surepick.host.engines.plant_service import NO_STATE, PlantService
from surepick.shared_fsm import states


class HeldWhileBusy(PlantService):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.busy = threading.Event()
        self.holding_busy = True

    def let_go(self):
        self.holding_busy = False

    def _exchange(self, advance_ms, pulses, state=NO_STATE):
        if self.holding_busy and state not in (NO_STATE, states.IDLE):
            self.hold_for_line_at(0)          # reached at once: this tick's reply holds
            reply = super()._exchange(advance_ms, pulses, state)
            self.busy.set()
            return reply
        return super()._exchange(advance_ms, pulses, state)
