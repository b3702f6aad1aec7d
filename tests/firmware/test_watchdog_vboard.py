# The watchdog on the virtual board: the real firmware under the unix `micropython`, lockstep
# with the MuJoCo plant. A hang is a real Python infinite loop inside the running loop: this
# test's own main.py (the firmware's, plus one request handler made to spin forever on PING
# 4242, as a bug would), so nothing in the firmware knows about the test. The watchdog must
# reset the board within its timeout, the next boot must say WATCHDOG in its HELLO, and a job
# that was running must come back as INTERRUPTED, latched, with nothing started again.
# Also measured: the longest tick at rest (flash writes included) against the timeout, and no
# spurious reset through boots, a job, flash writes and idle time.
import re
import time

import pytest

from surepick.host import vboard
from surepick.host.engines.world_service import WorldService
from surepick.firmware.boot_recovery import ACT_FAULT, ACT_NORMAL
from surepick.shared_fsm import codes, link, states

from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import Console, deploy_firmware, first_hello, hold_at_boot

pytestmark = NEEDS_MICROPYTHON

WDT_MS = 500
HANG_ID = 4242
OFF_CPU_ID = 4343        # PING 4343's handler sleeps: the loop off the CPU, as a loaded host holds it
OFF_CPU_MS = 3 * WDT_MS
HANG_MAIN = """\
# This test's main.py: the firmware, with PING %d made to hang in its handler and PING %d to
# sleep %d ms in it, loaded as the firmware's own main.py loads it (module by module: the heap
# stays in one piece).
import time
from surepick.firmware import preload
preload.load()
from surepick.firmware import app
from surepick.firmware.hal import for_this_port
_handle = app.App._handle


def _hanging(self, ftype, rid, args):
    if rid == %d:
        while True:
            pass
    if rid == %d:
        time.sleep_ms(%d)
    _handle(self, ftype, rid, args)


app.App._handle = _hanging
app.main(for_this_port())
""" % (HANG_ID, OFF_CPU_ID, OFF_CPU_MS, HANG_ID, OFF_CPU_ID, OFF_CPU_MS)
BITE = re.compile(rb"vboard: watchdog reset \(not fed for (\d+) ms, timeout (\d+) ms\)")


def _reply(rid):
    return lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid


def _hang_board(tmp_path, seed=3):
    deploy_firmware(tmp_path)
    (tmp_path / "main.py").write_text(HANG_MAIN)
    ps = WorldService("nominal", seed=seed)
    hold_at_boot(ps)         # first_hello() lets the boot go on
    return ps, vboard.VirtualBoard(tmp_path, world_service=ps)


def _hang_and_wait_for_the_next_boot(board, con):
    boots = board.boot_count
    hellos = len([f for f in con.frames if f.ftype == link.T_HELLO])
    t0 = time.monotonic()
    con.send(link.request(link.T_PING, HANG_ID))
    hello = con.wait(lambda f: f.ftype == link.T_HELLO and
                     len([g for g in con.frames if g.ftype == link.T_HELLO]) > hellos, 20)
    wall = time.monotonic() - t0
    assert hello is not None, con.tail()
    assert board.boot_count == boots + 1
    assert not [f for f in con.frames if f.ftype == link.T_REPLY and f.fields[0] == HANG_ID]
    bite = BITE.search(bytes(con.text))
    assert bite is not None, con.tail()
    return hello, int(bite.group(1)), int(bite.group(2)), wall


def test_a_hang_mid_job_resets_into_interrupted(tmp_path):
    ps, board = _hang_board(tmp_path)
    pick, place, width = ps.job_um()
    with board:
        con = Console(board.address)
        try:
            first, _ = first_hello(con, 90, 20)
            assert first is not None and first.fields[3] == 1, con.tail()    # power-on
            con.send(link.job(11, pick, place, width))
            r = con.wait(_reply(11), 10)
            assert r is not None and r.fields[1] == link.OK, con.tail()
            lift = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[4] == states.LIFT, 60)
            assert lift is not None, con.tail()
            hello, silent, timeout, wall = _hang_and_wait_for_the_next_boot(board, con)
            assert hello.fields[3] == 2                                 # RESET_WATCHDOG
            assert timeout == WDT_MS
            # the board's own measure of the silence: never early, and not much late (it counts
            # in 10 ms steps of its own thread; a loaded host can only delay it)
            assert WDT_MS < silent <= WDT_MS + 100, silent
            # the boot found the job marker: INTERRUPTED latched, nothing running
            ev = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[2] == codes.K_FAULT
                          and f.fields[5] == codes.F_INTERRUPTED, 10)
            assert ev is not None, con.tail()
            con.send(link.request(link.T_STATUS, 12))
            st = con.wait(_reply(12), 10)
            assert st is not None and st.fields[1] == link.OK, con.tail()
            state, fault, busy, _, _, _, action = st.fields[2:9]
            assert (state, fault, busy, action) == (states.IDLE, codes.F_INTERRUPTED, 0, ACT_FAULT)
            con.send(link.job(13, pick, place, width))                  # refused until cleared
            r = con.wait(_reply(13), 10)
            assert r is not None and r.fields[1] == link.E_FAULTED, r
            print("\nhang in LIFT at plant %d ms: watchdog reset after %d ms of silence (board's "
                  "count), %.2f s wall from the request to the next HELLO; INTERRUPTED latched"
                  % (lift.fields[1], silent, wall))
        finally:
            con.close()


def test_a_hang_at_rest_resets_to_a_normal_boot(tmp_path):
    ps, board = _hang_board(tmp_path, seed=4)
    with board:
        con = Console(board.address)
        try:
            assert first_hello(con, 90, 20)[0] is not None, con.tail()
            hello, silent, timeout, wall = _hang_and_wait_for_the_next_boot(board, con)
            assert hello.fields[3] == 2 and WDT_MS < silent <= WDT_MS + 100
            con.send(link.request(link.T_STATUS, 2))
            st = con.wait(_reply(2), 10)
            assert st is not None and (st.fields[2], st.fields[3], st.fields[8]) == \
                (states.IDLE, 0, ACT_NORMAL), st
            # the board runs on: a PING answered, no second reset
            con.send(link.request(link.T_PING, 3))
            assert con.wait(_reply(3), 10) is not None
            assert board.boot_count == 2
        finally:
            con.close()


def test_a_loop_held_off_the_cpu_is_not_a_hang(tmp_path):
    # The board's process is not given the CPU for three timeouts of wall time in one tick (a
    # sleep stands for a loaded host holding it back): that time is not the board's, so no bite;
    # the same tick spinning is one (the tests above).
    ps, board = _hang_board(tmp_path, seed=6)
    with board:
        con = Console(board.address)
        try:
            assert first_hello(con, 90, 20)[0] is not None, con.tail()
            t0 = time.monotonic()
            con.send(link.request(link.T_PING, OFF_CPU_ID))
            r = con.wait(_reply(OFF_CPU_ID), 30)
            assert r is not None and r.fields[1] == link.OK, con.tail()
            assert time.monotonic() - t0 >= OFF_CPU_MS / 1000.0     # the handler did sleep
            con.send(link.request(link.T_PING, 5))
            assert con.wait(_reply(5), 10) is not None, con.tail()
            assert board.boot_count == 1 and BITE.search(bytes(con.text)) is None, con.tail()
        finally:
            con.close()


@pytest.mark.slow
def test_no_spurious_reset_and_the_longest_tick_at_rest(tmp_path):
    # A job, then flash writes at rest (config saves, log commits, the rest pose), then idle:
    # one boot throughout. The loop's own figures are read at the REPL after Ctrl-C.
    deploy_firmware(tmp_path)
    ps = WorldService("nominal", seed=5)
    pick, place, width = ps.job_um()
    hold_at_boot(ps)
    with vboard.VirtualBoard(tmp_path, world_service=ps) as board:
        con = Console(board.address)
        try:
            t0 = time.monotonic()
            assert first_hello(con, 90, 20)[0] is not None, con.tail()
            boot_s = time.monotonic() - t0
            con.send(link.job(1, pick, place, width))
            end = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[4] == states.IDLE
                           and f.fields[3] != states.IDLE, 90)
            assert end is not None and end.fields[5] == codes.R_PLACED, con.tail()
            for i in range(20):
                con.send(link.request(link.T_CONFIG_SET, 100 + i, ("grasp_dwell_ms", 350 + i)))
                assert con.wait(_reply(100 + i), 10) is not None, con.tail()
                con.send(link.request(link.T_LOG_SINCE, 200 + i, (0,)))
                assert con.wait(_reply(200 + i), 10) is not None, con.tail()
            con.pump(3.0)                      # idle, periodic log commits
            assert board.boot_count == 1, con.tail()
            con.send(b"\r\x03")                # Ctrl-C: the loop stops, the REPL has the board
            con.pump(0.5)
            con.send(b"from surepick.firmware import app; s = app.current.stats; print('STATS', "
                     b"s.ticks, s.worst_step_us, s.flash_ticks, s.worst_flash_us)\r")
            deadline = time.monotonic() + 10
            m = None
            while m is None and time.monotonic() < deadline:
                con.pump(0.1)
                m = re.search(rb"STATS (\d+) (\d+) (\d+) (\d+)", bytes(con.text))
            assert m is not None, con.tail()
            ticks, worst, flash_ticks, worst_flash = (int(v) for v in m.groups())
        finally:
            con.close()
    assert board.boot_count == 1
    assert flash_ticks >= 20 and worst_flash < WDT_MS * 1000 and worst < WDT_MS * 1000
    print("\n%d ticks, %d of them writing flash; longest tick without flash %d us, with flash %d us "
          "(the watchdog allows %d us); boot to HELLO %.2f s wall"
          % (ticks, flash_ticks, worst, worst_flash, WDT_MS * 1000, boot_s))
