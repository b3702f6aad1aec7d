# A test that connects to a board it started late (a slow or busy machine) still gets the boot's
# HELLO when the boot is held for it (tests/support/vboard.hold_at_boot, first_hello); without the
# hold, the HELLO went to a console nobody had open and is lost, as on a USB port. The lateness
# is forced here: the host connects only once the board is at its first reading (held) or has
# run a second of virtual time past its boot (not held).
import time

from surepick.host.engines.world_service import WorldService
from surepick.host.vboard import VirtualBoard
from surepick.shared_fsm import link
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import Console, deploy_firmware, first_hello, hold_at_boot

pytestmark = NEEDS_MICROPYTHON


def test_a_late_host_gets_the_hello_of_a_held_boot(tmp_path):
    deploy_firmware(tmp_path)
    ps = WorldService("nominal", seed=1)
    hold_at_boot(ps)
    with VirtualBoard(tmp_path, world_service=ps) as board:
        assert ps.wait_holding(60), "the boot never reached its first reading"
        con = Console(board.address)
        try:
            hello, st = first_hello(con, 1)
            assert hello is not None and hello.fields[3] == 1, con.tail()       # the power-on boot
            assert st is not None and st.fields[1] == link.OK, con.tail()
        finally:
            con.close()


def test_without_the_hold_a_late_host_misses_the_hello(tmp_path):
    deploy_firmware(tmp_path)
    ps = WorldService("nominal", seed=1)
    with VirtualBoard(tmp_path, world_service=ps) as board:
        deadline = time.monotonic() + 60
        while ps.now_ms < 1000:
            assert time.monotonic() < deadline, "the board never ran a second of virtual time"
            time.sleep(0.05)
        con = Console(board.address)
        try:
            con.send(link.request(link.T_STATUS, 1))
            st = con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == 1, 30)
            assert st is not None and st.fields[1] == link.OK, con.tail()     # the board answers...
            assert not [f for f in con.frames if f.ftype == link.T_HELLO]   # ...but its HELLO is gone
        finally:
            con.close()
