# The board's clock a tool waits by (vboard/control.py board_clock): a board this machine serves
# with a world (`surepick board --scenario`) gives its plant's time through its control channel;
# any other port has none (a Pico's time is the wall clock's).
import subprocess
import time

from surepick.host import deploy as dp
from surepick.host.vboard.control import board_clock

from tests.support.cli import SUREPICK_BIN
from tests.support.monitor import BoardProcess, free_port
from tests.support.needs import NEEDS_MICROPYTHON


def test_a_port_no_board_here_serves_has_no_board_clock():
    assert board_clock("socket://127.0.0.1:%d" % free_port()) is None
    assert board_clock("/dev/ttyACM7") is None


@NEEDS_MICROPYTHON
def test_a_served_board_with_a_world_gives_its_running_clock(tmp_path):
    flash = tmp_path / "flash"
    flash.mkdir()
    board = BoardProcess(flash, free_port(), tmp_path / "board.log")
    try:
        assert dp.deploy(board.address, wait_hello=True, hello_timeout=30).hello is not None
        clock = board_clock(board.address)
        assert clock is not None
        first = clock()
        # the plant's time runs while the firmware drives the arm: a job (the scenario's poses)
        r = subprocess.run([SUREPICK_BIN, "job", "start", "--port", board.address], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        end = time.monotonic() + 120
        while clock() <= first and time.monotonic() < end:
            time.sleep(0.2)
        assert clock() > first >= 0.0
    finally:
        board.stop()
    assert clock() is None                                      # gone with the board
