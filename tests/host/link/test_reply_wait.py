# A request waits for its REPLY its timeout in wall time and then, when the board's clock is known
# (a board this machine serves with a world runs slower than a Pico, slower still on a loaded
# machine), the timeout again in the board's own time while that clock moves. The board is played
# by hand on a real loopback socket; its clock is the hand's, moved only by the thread that plays
# it, so the outcome follows the board's time whatever this machine's pace.
import re
import threading
import time

import pytest

from surepick.host.link import hub_client
from surepick.host.link.client import LinkClient
from surepick.host.link.errors import RequestTimeout
from surepick.shared_fsm import link

from tests.support.hand_board import HandBoard


class SlowBoard:
    # The hand's board: its clock moves `step_s` every `every_s` of wall time; it answers the
    # first request once its clock reads `answer_at_s` (never, if None).
    def __init__(self, step_s, every_s=0.1, answer_at_s=None):
        self.board = HandBoard()
        self.step_s, self.every_s, self.answer_at_s = step_s, every_s, answer_at_s
        self.t_s = 0.0
        self.answered_at_s = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._play, daemon=True)

    def clock(self):
        return self.t_s

    def _play(self):
        self.board.accept()
        (ftype, fields), = self.board.requests(1)
        while not self.stop.wait(self.every_s):
            self.t_s += self.step_s
            if self.answer_at_s is not None and self.t_s >= self.answer_at_s and self.answered_at_s is None:
                self.answered_at_s = self.t_s
                self.board.send(link.reply(fields[0], link.OK, (7,)))

    def __enter__(self):
        self.thread.start()
        self.client = LinkClient(self.board.port, hub=hub_client.DIRECT).open()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        self.client.close()
        self.board.close()


def test_a_reply_later_than_the_timeout_in_wall_time_but_within_it_in_the_boards_time_is_taken():
    # the board's clock runs at a fifth of the wall's: it answers at 1.0 s of its time, 5 s of wall
    with SlowBoard(step_s=0.02, answer_at_s=1.0) as b:
        b.client.board_clock = b.clock
        t0 = time.monotonic()
        r = b.client.request(link.T_STATUS, (), timeout=2.0)
        waited = time.monotonic() - t0
    assert r.ok and r.payload == (7,) and 1.0 <= b.answered_at_s < 2.0
    assert waited > 2.0           # past the timeout in wall time (the board's clock ran slower)


def test_without_the_boards_clock_the_wait_is_the_wall_clocks():
    with SlowBoard(step_s=0.02, answer_at_s=1.0) as b:
        t0 = time.monotonic()
        with pytest.raises(RequestTimeout) as e:
            b.client.request(link.T_STATUS, (), timeout=2.0)
        waited = time.monotonic() - t0
    assert waited >= 2.0 and "within 2.0 s (is the firmware running?" in str(e.value)


def test_a_board_whose_clock_runs_but_never_answers_times_out_in_its_time():
    with SlowBoard(step_s=0.05) as b:
        b.client.board_clock = b.clock
        with pytest.raises(RequestTimeout) as e:
            b.client.request(link.T_STATUS, (), timeout=1.0)
        ran = b.t_s
    # The client reads the board's clock at its own pace, so how far past 1.0 s it had run when
    # the client looked depends on this machine's: at least the timeout, at most the clock's end.
    m = re.search(r"within 1\.0 s and ([0-9.]+) s of the board's own time after", str(e.value))
    assert m is not None, str(e.value)
    assert 1.0 <= float(m.group(1)) <= round(ran, 1), (m.group(1), ran)


def test_a_board_whose_clock_stopped_times_out_after_twice_the_timeout_of_wall_time():
    with SlowBoard(step_s=0.0) as b:
        b.client.board_clock = b.clock
        t0 = time.monotonic()
        with pytest.raises(RequestTimeout) as e:
            b.client.request(link.T_STATUS, (), timeout=1.0)
        waited = time.monotonic() - t0
    assert waited >= 2.0 and "within 1.0 s and 0.0 s of the board's own time after" in str(e.value)


def test_a_board_clock_that_cannot_be_read_is_the_wall_clock():
    with SlowBoard(step_s=0.02, answer_at_s=1.0) as b:
        b.client.board_clock = lambda: None
        with pytest.raises(RequestTimeout) as e:
            b.client.request(link.T_STATUS, (), timeout=1.0)
    assert "board's own time" not in str(e.value)
