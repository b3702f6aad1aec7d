# When does the monitor decide that a board's log restarted? Only from the board's log itself:
# the record stored last must still be on the board, unchanged. A HELLO's log_last_seq is where
# the log stood at boot and can arrive after a back-fill has stored newer records (seen against
# the real firmware: the restarted board committed 12..15, the back-fill stored them, then its
# HELLO saying 13 was read); that must not open a new epoch. A wiped or replaced log must.
# The board side is the firmware's own FlashLog in a directory, answered as firmware/app.py
# answers LOG_SINCE (and CONFIG_GET, which the monitor sends after each back-fill to record the
# board's settings); the MonitorLoop's steps are called directly, in the order that matters.
from surepick.firmware.flashlog import C_BOOTS, R_TRANSITION, FlashLog
from surepick.firmware.settings import Settings
from surepick.host.link.frames import Frame
from surepick.host.link.client import Reply
from surepick.host.monitor.loop import MonitorLoop
from surepick.host.monitor.status import BoardStatus
from surepick.host.monitor.store import Store
from surepick.shared_fsm import link

BID = "pico-e0c4000000000001"
BATCH = 4      # small batches: the back-fill must page


class LogBoard:
    # The link client's request() over a FlashLog, as the firmware answers LOG_SINCE (with the
    # oldest seq the log holds and the boot count), and over the firmware's own Settings at their
    # defaults, as it answers CONFIG_GET. Making one is a boot: the count goes up.
    def __init__(self, path, **geometry):
        self.path = path
        self.log = FlashLog(path, **geometry)
        self.log.count(C_BOOTS)
        self.log.commit()
        self.settings = Settings()

    def add(self, n, t0):
        for i in range(n):
            self.log.append(R_TRANSITION, [i, t0 + i, 0, 1, 2, 3, 0, 1000 + i, 0, 10, 0, 0])
        self.log.commit()

    def request(self, ftype, args=(), timeout=2.0, collect=()):
        if ftype == link.T_CONFIG_GET:           # as firmware/app.py's _config_get
            key = args[0]
            if not self.settings.is_key(key):
                return Reply(1, link.E_UNKNOWN_KEY, (key,), [])
            return Reply(1, link.OK, (key, self.settings.get(key)), [])
        assert ftype == link.T_LOG_SINCE, ftype
        after = args[0]
        frames, last = [], after
        for seq, rtype, r in self.log.read_since(after, BATCH):
            frames.append(Frame(link.T_LOG, (seq, rtype) + tuple(r)))
            last = seq
        return Reply(1, link.OK, (len(frames), last, 1 if self.log.last_seq > last else 0, self.log.first_seq,
                                  self.log.counters[C_BOOTS]), frames)


def hello(board, boots=None):
    return (BID, "0.1.0", 1, 1, board.log.counters[C_BOOTS] if boots is None else boots, board.log.last_seq)


def monitor_loop(tmp_path, board):
    notes = []
    s = MonitorLoop("socket://127.0.0.1:1", Store(str(tmp_path / "m.db")), BoardStatus("x"),
                out=lambda kind, data: notes.append(data) if kind == "note" else None)
    s.client = board
    return s, notes


def stored(s, epoch):
    rows = s.store.db.execute("SELECT seq, rtype, t_ms FROM records WHERE board_id=? AND epoch=? ORDER BY seq",
                              (BID, epoch)).fetchall()
    return [tuple(r) for r in rows]


def on_board(board):
    return [(seq, rtype, r[1]) for seq, rtype, r in FlashLog(board.path).read_since(0)]


def test_a_stale_hello_after_the_backfill_keeps_the_epoch(tmp_path):
    board = LogBoard(str(tmp_path / "log"))
    board.add(10, 100)
    s, notes = monitor_loop(tmp_path, board)
    s._on_hello(hello(board, 1))
    assert stored(s, 0) == on_board(board)
    # the board restarts: its HELLO is sent at boot, then two more commits follow at once
    board = LogBoard(board.path)
    stale = hello(board, 2)
    board.add(3, 500)
    s.client = board
    s._set_board(BID, None, False)      # identified by PING/STATUS first ...
    s._backfill()                       # ... and back-filled past the HELLO's last_seq
    assert s.store.last_seq(BID, 0) > stale[5]
    s._on_hello(stale)                  # then the HELLO is read
    assert s.epoch == 0, notes
    assert stored(s, 0) == on_board(board)
    assert stored(s, 1) == []
    assert not any("restarted" in n for n in notes), notes


def test_a_wiped_log_shorter_than_the_stored_one_is_a_new_epoch(tmp_path):
    board = LogBoard(str(tmp_path / "log"))
    board.add(12, 100)
    s, notes = monitor_loop(tmp_path, board)
    s._on_hello(hello(board, 1))
    first = stored(s, 0)
    assert first == on_board(board)
    wiped = LogBoard(str(tmp_path / "log2"))     # new flash: seqs start again at 1
    wiped.add(3, 900)
    s.client = wiped
    s._on_hello(hello(wiped, 1))
    assert s.epoch == 1
    assert stored(s, 0) == first                 # nothing of the old log lost
    assert stored(s, 1) == on_board(wiped)
    assert any("has no record %d" % first[-1][0] in n for n in notes), notes


def test_a_wiped_log_that_grew_past_the_stored_one_is_a_new_epoch(tmp_path):
    board = LogBoard(str(tmp_path / "log"))
    board.add(5, 100)
    s, notes = monitor_loop(tmp_path, board)
    s._on_hello(hello(board, 1))
    first = stored(s, 0)
    other = LogBoard(str(tmp_path / "log2"))     # same id, other log, already longer
    other.add(9, 7000)
    s.client = other
    s._set_board(BID, None, False)
    s._backfill()
    assert s.epoch == 1
    assert stored(s, 0) == first
    assert stored(s, 1) == on_board(other)
    assert any("holds a different record %d" % first[-1][0] in n for n in notes), notes


SMALL = dict(n_segments=3, seg_records=8)     # rotates after a couple of dozen records


def test_a_log_rotated_past_the_stored_record_keeps_the_epoch_and_counts_the_loss(tmp_path):
    board = LogBoard(str(tmp_path / "log"), **SMALL)
    board.add(5, 100)
    s, notes = monitor_loop(tmp_path, board)
    s._on_hello(hello(board))
    before = stored(s, 0)
    last = before[-1][0]
    board.add(40, 1000)                          # while the monitor is away
    first = board.log.first_seq
    assert first > last + 1                      # the stored record and some after it are gone
    for rounds in range(3):                      # and again: a monitor killed many times
        s._set_board(BID, None, False)
        s._backfill()
    assert s.epoch == 0, notes
    assert stored(s, 0) == before + on_board(board)
    assert [g[2:5] for g in s.store.gaps(BID)] == [(last, first, first - last - 1)]
    assert s.status.lost_to_rotation == first - last - 1
    assert any("rotated past record %d" % last in n and "(%d)" % (first - last - 1) in n for n in notes), notes
    # the board reboots (same flash) and rotates again: still the same log
    board = LogBoard(board.path, **SMALL)
    board.add(30, 5000)
    s.client = board
    s._on_hello(hello(board))
    assert s.epoch == 0 and len(s.store.gaps(BID)) == 2, notes
    assert not any("restarted" in n for n in notes), notes


def test_a_wiped_log_that_rotated_past_the_stored_record_is_a_new_epoch(tmp_path):
    board = LogBoard(str(tmp_path / "log"), **SMALL)
    for _ in range(3):                           # three boots of the old log
        board = LogBoard(board.path, **SMALL)
    board.add(5, 100)
    s, notes = monitor_loop(tmp_path, board)
    s._on_hello(hello(board))
    before = stored(s, 0)
    wiped = LogBoard(str(tmp_path / "log2"), **SMALL)    # new flash, and it has already rotated
    wiped.add(40, 7000)
    assert wiped.log.first_seq > before[-1][0]
    s.client = wiped
    s._set_board(BID, None, False)
    s._backfill()
    assert s.epoch == 1, notes
    assert stored(s, 0) == before and stored(s, 1) == on_board(wiped)
    assert s.store.gaps(BID) == []
    assert any("counts 1 boots, fewer than the 4 seen" in n for n in notes), notes
