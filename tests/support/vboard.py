# Virtual-board helpers shared by the firmware, engine, CLI tests and tools/bench/hil_bench.py: the
# firmware installed into a flash directory as deploy installs it, the console client, and one deterministic
# scripted run of a scenario on the virtual board (what the fw-vs-sim and determinism tests share).
import time

from surepick.host.engines.vboard import BoardConsole as Console  # noqa: F401  (the tests' console client)
from surepick.host.engines.vboard import install_firmware
from surepick.shared_fsm import codes, link, states
from surepick.sim.world import JUDGE_TAIL_MS


def deploy_firmware(flash):
    # What `surepick deploy` installs (the manifest's modules, compiled for the board).
    install_firmware(flash)


# ---- the first HELLO of a board a test starts ----

def hold_at_boot(ps):
    # Virtual time stands at the boot's first reading until a console line comes. A console no
    # one has open drops what the board writes (as a USB port does), so a HELLO written before
    # a slow or busy test had connected would be lost. Call before the board starts, then
    # first_hello() once connected.
    ps.hold_for_line_at(0)


def first_hello(con, rid, timeout=60):
    # Send STATUS (the line a held boot waits for; read at the first tick, after HELLO).
    # -> (the HELLO frame, the STATUS reply); None for what did not come.
    con.send(link.request(link.T_STATUS, rid))
    hello = con.wait(lambda f: f.ftype == link.T_HELLO, timeout)
    return hello, (con.wait(_is_reply(rid), 30) if hello is not None else None)


# ---- a deterministic scripted run: what the fw-vs-sim and determinism tests share ----

JOB_HOLD_MS = 600        # the JOB is read in the ticks after this (after the calibration ends)


def _is_reply(rid):
    return lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid


def _cycle_end(f):
    # The cycle is over: back in IDLE (PLACED), or any fault (also one latched at a boot
    # after an interrupted cycle, which goes IDLE -> IDLE).
    return f.ftype == link.T_EVENT and (f.fields[2] == codes.K_FAULT
                                        or (f.fields[4] == states.IDLE and f.fields[3] != states.IDLE))


def run_scenario(flash, scenario, seed, tail_ms=JUDGE_TAIL_MS, timeout=90, **plant_kw):
    """Deploy the firmware into `flash`, boot it on a virtual board with the scenario's plant,
    and do what the in-process engine does: calibrate the current offset in the tick at
    sim.world.CAL_AT_MS, then send the scenario's job; both requests travel over the console and
    are read while virtual time holds, so the run is deterministic. Returns (EVENT fields list,
    the WorldService, all frames, wall seconds, boots)."""
    from surepick.sim.world import CAL_AT_MS
    from surepick.host.engines.vboard_world import board_in_world
    deploy_firmware(flash)
    board = board_in_world(flash, scenario, seed, **plant_kw)
    ps = board.world_service
    hold_at_boot(ps)
    ps.hold_for_line_at(CAL_AT_MS)
    ps.hold_for_line_at(JOB_HOLD_MS)
    pick, place, width = ps.job_um()
    t0 = time.monotonic()
    with board:
        con = Console(board.address)
        try:
            # (the STATUS is answered after the boot's sensing, exchanges past the boot's hold:
            # the next hold the host sees is the calibration's)
            hello, st = first_hello(con, 3, 30)
            assert hello is not None and st is not None, bytes(con.text[-2000:])
            assert ps.wait_holding(30), "the board never reached the calibration hold"
            con.send(link.request(link.T_CALIBRATE, 1, (link.CAL_CURRENT,)))
            r = con.wait(_is_reply(1), 20)
            assert r is not None and r.fields[1] == link.OK, (r, bytes(con.text[-2000:]))
            assert ps.wait_holding(20), "the board never reached the job hold"
            con.send(link.job(2, pick, place, width))
            r = con.wait(_is_reply(2), 20)
            assert r is not None and r.fields[1] == link.OK, (r, bytes(con.text[-2000:]))
            end = con.wait(_cycle_end, timeout)
            assert end is not None, bytes(con.text[-2000:])
            deadline = time.monotonic() + 30
            while ps.now_ms < end.fields[1] + tail_ms and time.monotonic() < deadline:
                con.pump(0.02)
            con.pump(0.05)
            boots = board.boot_count
        finally:
            con.close()
    events = [list(f.fields) for f in con.frames if f.ftype == link.T_EVENT]
    return events, ps, con.frames, time.monotonic() - t0, boots
