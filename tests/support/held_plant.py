# A plant whose virtual time waits for the host while the board's machine is busy: from the first
# exchange past IDLE on, each tick waits until the board has a whole console line (the plant
# service's hold), and that line is read in that tick. So a test that starts a job and then asks
# something of the busy board (abort it, reset its world) finds the job still running, whatever
# the host's speed: the job cannot run on between the test's requests. `busy` is set once the
# machine has left IDLE (the world has noted that state); let_go() lets the job run on by itself.
# held_at(): a board whose plant holds at a set virtual time, for a run that must start there.
# held_board(): a deployed virtual board in this process on such a plant, once its firmware answers.
import contextlib
import threading
import time

from surepick.host.engines.world_service import NO_STATE, WorldService
from surepick.shared_fsm import states


class HeldWhileBusy(WorldService):
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


@contextlib.contextmanager
def held_board(flash, scenario, seed):
    # -> (the board's socket:// address, its HeldWhileBusy plant), once `job status` answers.
    from surepick.host.vboard import VirtualBoard
    from tests.support.cli import surepick
    from tests.support.vboard import deploy_firmware
    flash.mkdir(parents=True)
    deploy_firmware(flash)
    ps = HeldWhileBusy(scenario, seed=seed)
    with VirtualBoard(flash, world_service=ps, scenario=scenario, seed=seed) as b:
        deadline = time.monotonic() + 60
        while True:
            r = surepick("job", "status", "--port", b.address)
            if r.returncode == 0:
                break
            assert time.monotonic() < deadline, "the firmware never answered `job status`: " + r.stderr
        yield b.address, ps


def held_at(ps, t_ms, timeout=120):
    # Virtual time stands at t_ms (a hold_for_line_at(t_ms) set before the board started) waiting
    # for a console line: what the host sends now is read at t_ms, however slow or busy the host.
    # A production run sent here starts at the same virtual time on every machine, so its whole
    # course depends on the scenario and seed only (the board runs it by itself; the host's
    # `--wait` only listens). -> False when time did not get there within timeout s.
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ps.holding.is_set() and ps.now_ms >= t_ms:
            return True
        ps.wait_holding(0.05)
    return False


def hold_for_lines(ps, t_ms, lines):
    # Holds that read each of `lines` (the request lines a host command sends, in order, each
    # sent once the one before it was answered) at a fixed tick: the first at t_ms, each next one
    # in the first tick after the one before it was read whole (the board reads link_rx_bytes of
    # a line a tick). Set before the board starts; the board's default settings. -> the holds.
    from surepick.firmware.settings import BOARD_FIELDS
    from surepick.shared_fsm.config import Config
    rx = [f[1] for f in BOARD_FIELDS if f[0] == "link_rx_bytes"][0]
    period = Config().loop_period_ms
    holds = []
    t = t_ms
    for line in lines:
        holds.append(t)
        ps.hold_for_line_at(t)
        t += (len(line) + rx - 1) // rx * period
    return holds
