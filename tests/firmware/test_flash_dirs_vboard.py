# A directory where one of the board's files belongs (its settings, rest pose, job marker, arm
# description, or the temporary file each is written through): the board boots, and its loop
# keeps running through every write it makes (a job's marker, the rest pose at the end of the
# cycle, a setting saved), on the virtual board with the firmware as deployed and the plant in
# lockstep. Whatever the directory held is moved aside (<name>.dir), never deleted.
import pytest

from surepick.host.engines.world_service import WorldService
from surepick.host.engines.vboard import BoardConsole
from surepick.shared_fsm import codes, link
from surepick.host.vboard import VirtualBoard
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import deploy_firmware, first_hello, hold_at_boot

pytestmark = NEEDS_MICROPYTHON

PICO_HEAP = "192wK"
PATHS = ("job.json", "rest.json", "config.json", "arm.json", "job.json.tmp", "rest.json.tmp",
         "config.json.tmp")


def _reply(con, rid, timeout=30):
    return con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid, timeout)


@pytest.mark.parametrize("path", PATHS)
def test_a_directory_where_a_board_file_belongs_boots_and_the_loop_keeps_running(tmp_path, path):
    flash = tmp_path / "flash"
    flash.mkdir()
    deploy_firmware(flash)
    (flash / path).mkdir()
    (flash / path / "keep.txt").write_text("someone's file\n")
    ps = WorldService("nominal", seed=1)
    pick, place, width = ps.job_um()
    hold_at_boot(ps)
    with VirtualBoard(flash, world_service=ps, heap=PICO_HEAP) as board:
        con = BoardConsole(board.address)
        try:
            hello, st = first_hello(con, 1, 120)
            assert hello is not None, board.transcript()[-1500:]
            assert st is not None and st.fields[1] == link.OK, con.tail()
            if st.fields[3] != 0:                # an unreadable marker: an interruption, latched
                assert path == "job.json" and st.fields[3] == codes.F_INTERRUPTED, st.fields
                con.send(link.request(link.T_CLEAR_FAULT, 2))
                r = _reply(con, 2)
                assert r is not None and r.fields[1] == link.OK, (r, con.tail())
            # a setting saved (settings file), a whole job (marker, then the rest pose at its end)
            # (flash is written only once the arm has been still for flash_settle_ms after boot:
            # E_BUSY until then, however soon after HELLO the request arrives)
            for rid in range(100, 160):
                con.send(link.request(link.T_CONFIG_SET, rid, ("grasp_dwell_ms", 300)))
                r = _reply(con, rid)
                if r is None or r.fields[1] != link.E_BUSY:
                    break
                now = max([f.fields[0] for f in con.frames if f.ftype == link.T_TELEMETRY] or [0])
                con.wait(lambda f, now=now: f.ftype == link.T_TELEMETRY and f.fields[0] > now, 10)
            assert r is not None and r.fields[1] == link.OK, (r, con.tail())
            t0 = 0
            if path not in ("job.json", "arm.json"):
                # (an interrupted cycle may hold a part, and an arm description that could not
                # be read refuses every job: neither runs one)
                con.send(link.job(4, pick, place, width))
                r = _reply(con, 4)
                assert r is not None and r.fields[1] == link.OK, (r, con.tail())
                placed = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[5] == codes.R_PLACED, 120)
                assert placed is not None, con.tail()
                t0 = placed.fields[1]
            # past the next rest (its writes done: marker, rest pose), the loop still answers
            later = con.wait(lambda f: f.ftype == link.T_TELEMETRY and f.fields[0] - t0 > 3000, 60)
            assert later is not None, con.tail()
            con.send(link.request(link.T_PING, 5))
            r = _reply(con, 5)
            assert r is not None and r.fields[1] == link.OK, (r, board.transcript()[-1500:])
            con.send(link.request(link.T_STATUS, 6))
            st = _reply(con, 6)
            assert st is not None and st.fields[1] == link.OK, st
        finally:
            con.close()
    assert board.error is None or "Traceback" not in str(board.error)
    assert b"Traceback" not in board.transcript()
    moved = flash / (path + ".dir")
    if (flash / path).is_dir():
        # left where it was: the board never had to write there (an arm description is only read)
        assert path == "arm.json" and (flash / path / "keep.txt").is_file()
    else:
        assert (moved / "keep.txt").read_text() == "someone's file\n"
    if path == "job.json":
        assert (flash / path).is_file()          # the interruption, marked as counted
