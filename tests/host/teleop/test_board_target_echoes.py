# BoardTarget's bookkeeping of the board's answers, against a scripted link: a slow answer stops
# holding up the next setpoints after ECHO_LOST_S but is still taken (counted late) when it
# comes; only one never answered within ECHO_GIVE_UP_S is counted lost.
import collections
import threading
import time
from types import SimpleNamespace

from surepick.shared_fsm import link
from surepick.host.teleop import board_target
from surepick.host.teleop.board_target import IN_FLIGHT, BoardTarget


class ScriptedLink:
    # What BoardTarget uses of a LinkClient: request, send, new_id, read_frames.
    def __init__(self):
        self.frames = collections.deque()
        self.sent = []
        self.lock = threading.Lock()
        self._id = 0

    def request(self, ftype, fields, timeout):
        return SimpleNamespace(ok=True, code=link.OK, payload=(1, 0, 90000, -90000, 0, 20000))

    def new_id(self):
        self._id += 1
        return self._id

    def send(self, data):
        self.sent.append(data)

    def answer(self, seq):
        fields = (0, 1, 0, seq, 0, 90000, -90000, 0, 20000, 20000, 0, 0)
        with self.lock:
            self.frames.append(SimpleNamespace(ftype=link.T_TELEOP_STATE, fields=fields))

    def read_frames(self, timeout):
        time.sleep(0.002)
        with self.lock:
            out = list(self.frames)
            self.frames.clear()
        return out


def _wait(pred, s=2.0):
    end = time.monotonic() + s
    while not pred():
        assert time.monotonic() < end
        time.sleep(0.005)


def test_a_late_answer_is_taken_and_a_missing_one_is_lost(monkeypatch):
    monkeypatch.setattr(board_target, "ECHO_LOST_S", 0.05)
    monkeypatch.setattr(board_target, "ECHO_GIVE_UP_S", 0.4)
    c = ScriptedLink()
    t = BoardTarget(c)
    try:
        seqs = [t.command([0, 90, -90, 0], 20000) for _ in range(IN_FLIGHT)]
        assert seqs == [1, 2, 3]
        assert t.command([0, 90, -90, 0], 20000) == 4 and t.skipped == 1    # IN_FLIGHT wait: nothing sent
        assert t.echo_for(1) is None                 # not answered, not yet overdue
        time.sleep(0.06)
        assert t.echo_for(1) is None                 # overdue: still waited for ...
        assert t.command([0, 90, -90, 0], 20000) == 4 and len(c.sent) == 4   # ... but no longer in the way
        c.answer(1)
        _wait(lambda: 1 in t.echoes)
        t_ans, state = t.echo_for(1)
        assert state["seq"] == 1 and t.late == 1 and t.lost == 0
        c.answer(3)                                  # answers 2 and 3 (the board applied the later one)
        _wait(lambda: 3 in t.echoes)
        assert t.echo_for(2)[1]["seq"] == 3 and t.echo_for(3)[1]["seq"] == 3 and t.late == 1
        assert t.echo_for(4) is None                 # never answered
        time.sleep(0.06)
        assert t.echo_for(4) is None and t.lost == 0
        time.sleep(0.4)
        assert t.echo_for(4) == (None, None) and t.lost == 1
    finally:
        t._stop.set()
