# Taking a busy board over, as a user does it: the `surepick` command against the real firmware on
# the virtual board, lockstep with the MuJoCo plant, while a job runs. deploy, config set and
# calibrate refuse the busy arm and name its state, and the job goes on undisturbed; with --force
# they abort the job through the link and wait until the board reports the arm at rest (checked
# in the plant's exchange log: no pulse changes before the takeover), then do their work.
import re
import socket
import threading
import time

from surepick.host.engines.world_service import EXCHANGE_FIELDS, WorldService
from surepick.host.link import busy
from surepick.host.link.client import LinkClient
from surepick.host.link.frames import FrameParser
from surepick.shared_fsm import codes, link, states
from surepick.host.vboard import VirtualBoard

from tests.support.cli import surepick
from tests.support.needs import NEEDS_MICROPYTHON
from tests.support.vboard import Console, deploy_firmware, first_hello, hold_at_boot

F = {name: i for i, name in enumerate(EXCHANGE_FIELDS)}
PULSES = slice(F["p0"], F["p4"] + 1)
BUSY = re.compile(r"the board is busy: (\w+), attempt (\d) of (\d) \(job running\); wait for it to "
                  r"finish, `surepick job abort`, or --force")


def _event_to(state):
    return lambda f: f.ftype == link.T_EVENT and f.fields[4] == state


def _start_job(board, ps, rid, until):
    # Send the scenario's job and follow it until it enters `until`; the console is closed after
    # (one client at a time: the command under test connects next).
    pick, place, width = ps.job_um()
    con = Console(board.address)
    try:
        if board.boot_count == 1 and not getattr(board, "_hello_seen", False):
            assert first_hello(con, 99, 20)[0] is not None, con.tail()
            board._hello_seen = True
        con.send(link.job(rid, pick, place, width))
        r = con.wait(lambda f: f.ftype == link.T_REPLY and f.fields[0] == rid, 10)
        assert r is not None and r.fields[1] == link.OK, (r, con.tail())
        assert con.wait(_event_to(until), 60) is not None, con.tail()
    finally:
        con.close()


def _status(board):
    with LinkClient(board.address) as c:
        return busy.status(c)


@NEEDS_MICROPYTHON
def test_busy_board_is_refused_and_the_job_goes_on(tmp_path):
    deploy_firmware(tmp_path)
    ps = WorldService("nominal", seed=2, realtime=True)   # a job at a Pico's pace
    hold_at_boot(ps)                     # _start_job's first_hello lets the boot go on
    with VirtualBoard(tmp_path, world_service=ps) as board:
        _start_job(board, ps, 1, states.DESCEND)
        for args in (("deploy", "--source", "--no-wait"), ("config", "set", "grasp_dwell_ms", "380"),
                     ("calibrate", "pot")):
            r = surepick(*args, "--port", board.address)
            m = BUSY.search(r.stderr)
            assert r.returncode == 1 and m, (args, r.stdout, r.stderr)
            assert m.group(1) in ("DESCEND", "GRASP", "VERIFY", "LIFT", "TRANSFER", "PLACE")
            assert (m.group(2), m.group(3)) == ("1", "3")
        r = surepick("config", "get", "grasp_dwell_ms", "--port", board.address)   # reads are fine
        assert r.returncode == 0 and "grasp_dwell_ms = 350" in r.stdout, r.stderr
        # nothing was interrupted: one boot, and the cycle ends placed
        con = Console(board.address)
        try:
            end = con.wait(lambda f: f.ftype == link.T_EVENT and f.fields[4] == states.IDLE
                           and f.fields[3] != states.IDLE, 60)
            assert end is not None and end.fields[5] == codes.R_PLACED, con.tail()
        finally:
            con.close()
        assert board.boot_count == 1
        assert not (tmp_path / "config.json").exists()      # the refused set wrote nothing


@NEEDS_MICROPYTHON
def test_force_brings_the_arm_to_rest_then_takes_over(tmp_path):
    deploy_firmware(tmp_path)
    ps = WorldService("nominal", seed=2, realtime=True)   # a job at a Pico's pace
    hold_at_boot(ps)                     # _start_job's first_hello lets the boot go on
    log = ps.record()
    with VirtualBoard(tmp_path, world_service=ps) as board:
        # config set --force in LIFT: aborted, at rest, then saved
        _start_job(board, ps, 1, states.LIFT)
        r = surepick("config", "set", "grasp_dwell_ms", "380", "--force", "--port", board.address)
        assert r.returncode == 0 and "grasp_dwell_ms = 380 ms (saved)" in r.stdout, (r.stdout, r.stderr)
        assert "--force: aborting it" in r.stdout
        st = _status(board)
        assert (st.state, st.fault, st.busy) == (states.IDLE, codes.F_ABORTED, link.BUSY_NONE)
        # calibrate --force on the aborted (latched) board: refused, the fault named
        r = surepick("calibrate", "pot", "--force", "--port", board.address)
        assert r.returncode == 1 and re.search(r"the board has a latched fault: ABORTED \(in [A-Z_]+, attempt 1\): "
                                               r"the job was aborted", r.stderr), (r.stdout, r.stderr)
        # the part is still held where the abort froze the arm: the operator places it
        r = surepick("job", "rescue", "--place", "--wait", "--port", board.address, timeout=180)
        assert r.returncode == 0, (r.stdout, r.stderr)
        # in the bin, let go, at rest (the plant's truth: the judge scores the machine's own
        # PLACE, and an operator's rescue is not one)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            t = ps.truth()
            if t["in_bin"] and not t["finger_contact"] and t["part_speed_mps"] < 0.02:
                break
            time.sleep(0.2)
        assert t["in_bin"] and not t["finger_contact"] and t["part_speed_mps"] < 0.02, t


@NEEDS_MICROPYTHON
def test_force_deploy_in_transfer_waits_for_rest(tmp_path):
    deploy_firmware(tmp_path)
    ps = WorldService("nominal", seed=2, realtime=True)
    hold_at_boot(ps)                     # _start_job's first_hello lets the boot go on
    log = ps.record()
    with VirtualBoard(tmp_path, world_service=ps) as board:
        # deploy --force in TRANSFER: aborted, at rest, deployed, hello
        _start_job(board, ps, 1, states.TRANSFER)
        n0 = len(log)
        # compiled, as deploy ships by default: as source the firmware does not fit a Pico-sized
        # heap at boot (compiling app.py needs a block the .mpy firmware never asks for)
        r = surepick("deploy", "--force", "--port", board.address, timeout=180)
        assert r.returncode == 0 and "hello from" in r.stdout, (r.stdout, r.stderr)
        assert "the board is busy: TRANSFER" in r.stdout and "--force: aborting it" in r.stdout
        assert board.boot_count == 3          # mpremote's soft reset into the raw REPL, deploy's own
    # In the plant's log, the last exchanges before the soft reset (the first connection's end):
    # the arm was at rest, no pulse changing, for the STILL_POLLS statuses and the takeover.
    first = [row for row in log[n0:] if row[F["conn"]] == log[n0][F["conn"]]]
    tail = first[-100:]
    assert len({row[PULSES] for row in tail}) == 1, tail[:3]
    moving = [i for i in range(1, len(first)) if first[i][PULSES] != first[i - 1][PULSES]]
    assert moving, "the arm never moved after the job was sent"
    print("\ndeploy --force in TRANSFER: the last pulse change %d ms of plant time before the soft "
          "reset; %d exchanges at rest before it"
          % (first[-1][F["now_ms"]] - first[moving[-1]][F["now_ms"]], len(first) - moving[-1]))


class _NeverRests:
    # A link stand-in whose arm never comes to rest: STATUS always says BUSY_MOVING.
    def __init__(self):
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.address = "socket://127.0.0.1:%d" % self.srv.getsockname()[1]
        self.aborts = 0
        self.abort_at = self.closed_at = None      # the board's clock: the tool's wait, no start-up
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.srv.accept()
        parser = FrameParser(accept_requests=True)
        while True:
            data = conn.recv(4096)
            if not data:
                self.closed_at = time.monotonic()
                return
            for f in parser.feed(data):
                rid = f.fields[0]
                if f.ftype == link.T_STATUS:
                    conn.sendall(link.encode(link.T_TELEMETRY, (1, states.IDLE, 0, codes.F_ABORTED)
                                             + (0,) * 13))
                    conn.sendall(link.reply(rid, link.OK, (states.IDLE, codes.F_ABORTED,
                                                           link.BUSY_MOVING, 1, 0, 0, 0, 0, 0)))
                elif f.ftype == link.T_ABORT:
                    self.aborts += 1
                    self.abort_at = time.monotonic()
                    conn.sendall(link.reply(rid, link.E_STATE))


def test_force_gives_up_when_the_arm_does_not_come_to_rest():
    board = _NeverRests()
    r = surepick("config", "set", "grasp_dwell_ms", "380", "--force", "--rest-timeout", "1.5",
                 "--port", board.address)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert ("the arm did not come to rest within 2 s of the abort (last: IDLE, fault ABORTED "
            "latched (the arm is still moving)); nothing was taken over") in r.stderr, r.stderr
    assert board.aborts == 1 and board.closed_at is not None
    # It waited its --rest-timeout, not the default: from the abort to letting the board go, as
    # the board saw it (the tool's start-up is not in it), well under busy.REST_TIMEOUT_S.
    waited = board.closed_at - board.abort_at
    assert 1.5 <= waited < busy.REST_TIMEOUT_S, waited
