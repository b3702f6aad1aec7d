# The monitor's SQLite store. The board's flash log records (LOG frames) are the durable
# truth: each is stored exactly once, keyed by (board_id, epoch, seq). `epoch` starts at 0 and
# rises when a board's log restarts (flash wiped, or a different board with the same id): the
# same seq then names a different record, and keeping both is the only way to lose nothing.
# Telemetry samples and boots (HELLO frames) are kept beside them for the view and for stats.
# A gap is a run of records the board's log rotated away before the monitor could fetch them:
# same log, same epoch, the records simply never reached the store (counted, never invented).
#
# One writer per board and database: a monitor claims the board (claim(): an flock on
# <db>-writers/<board_id>.lock, released when its process ends, however it ends); a second
# monitor of the same board on the same database only watches until the claim is free.
import functools
import json
import os
import sqlite3
import time

from surepick.host.user_error import BadInput

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS boards (
    board_id TEXT PRIMARY KEY, first_seen REAL, last_seen REAL, fw_version TEXT,
    epoch INTEGER NOT NULL DEFAULT 0, port TEXT);
CREATE TABLE IF NOT EXISTS boots (
    board_id TEXT NOT NULL, epoch INTEGER NOT NULL, boot_count INTEGER NOT NULL,
    fw_version TEXT, reset_cause INTEGER, log_last_seq INTEGER, seen_at REAL,
    PRIMARY KEY (board_id, epoch, boot_count));
CREATE TABLE IF NOT EXISTS records (
    board_id TEXT NOT NULL, epoch INTEGER NOT NULL, seq INTEGER NOT NULL,
    rtype INTEGER NOT NULL,
    ev_seq INTEGER, t_ms INTEGER, kind INTEGER, from_state INTEGER, to_state INTEGER,
    reason INTEGER, attempt INTEGER, pot_counts INTEGER, switch_pressed INTEGER,
    current_ma INTEGER, beam_broken INTEGER, present_mask INTEGER,
    received_at REAL NOT NULL,
    PRIMARY KEY (board_id, epoch, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS telemetry (
    board_id TEXT, received_at REAL, t_ms INTEGER, state INTEGER, attempt INTEGER,
    fault INTEGER, cycles_ok INTEGER, cycles_failed INTEGER, faults_total INTEGER,
    pot_counts INTEGER, current_ma INTEGER, switch_pressed INTEGER, beam_broken INTEGER,
    present_mask INTEGER, rail_mv INTEGER, estop INTEGER, loop_period_us INTEGER,
    worst_step_us INTEGER, overruns INTEGER);
CREATE INDEX IF NOT EXISTS telemetry_time ON telemetry (board_id, received_at);
CREATE TABLE IF NOT EXISTS gaps (
    board_id TEXT NOT NULL, epoch INTEGER NOT NULL, after_seq INTEGER NOT NULL,
    next_seq INTEGER NOT NULL, lost INTEGER NOT NULL, noted_at REAL,
    PRIMARY KEY (board_id, epoch, after_seq));
CREATE TABLE IF NOT EXISTS link_sessions (
    id INTEGER PRIMARY KEY, port TEXT, started_at REAL, ended_at REAL, frames INTEGER,
    corrupt INTEGER, reconnects INTEGER, records_added INTEGER);
"""

RECORD_COLUMNS = ("ev_seq", "t_ms", "kind", "from_state", "to_state", "reason", "attempt",
                  "pot_counts", "switch_pressed", "current_ma", "beam_broken", "present_mask")
TELEMETRY_COLUMNS = ("t_ms", "state", "attempt", "fault", "cycles_ok", "cycles_failed",
                     "faults_total", "pot_counts", "current_ma", "switch_pressed", "beam_broken",
                     "present_mask", "rail_mv", "estop", "loop_period_us", "worst_step_us",
                     "overruns")

_INSERT_RECORD = ("INSERT OR IGNORE INTO records (board_id, epoch, seq, rtype, %s, received_at) "
                  "VALUES (?, ?, ?, ?, %s, ?)" % (", ".join(RECORD_COLUMNS), ", ".join("?" * 12)))
_INSERT_TELEMETRY = ("INSERT INTO telemetry (board_id, received_at, %s) VALUES (?, ?, %s)"
                     % (", ".join(TELEMETRY_COLUMNS), ", ".join("?" * len(TELEMETRY_COLUMNS))))


class StoreError(BadInput):
    """The database cannot be used (not SQLite, newer schema, not writable)."""


class Store:
    # One connection, used by one thread at a time (the monitor loop writes; readers such
    # as `surepick log` open their own Store).
    def __init__(self, path, readonly=False):
        self.path = str(path)
        try:
            if readonly:
                self.db = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True, check_same_thread=False)
            else:
                self.db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints
                self.db.executescript(_SCHEMA)
                self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                self.db.commit()
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        except sqlite3.DatabaseError as e:
            raise StoreError("%s is not a surepick monitor database: %s" % (self.path, e)) from None
        if row is None or not str(row[0]).isdigit() or int(row[0]) > SCHEMA_VERSION:
            raise StoreError("%s has schema %s; this surepick reads schema %d"
                             % (self.path, row and row[0], SCHEMA_VERSION))
        self._telemetry = []
        self._claims = {}            # board_id -> open lock file descriptor

    def close(self):
        self.flush()
        self.db.close()
        for fd in self._claims.values():
            os.close(fd)
        self._claims = {}

    # ---- one writer per board ----

    def claim(self, board_id):
        # -> None when this store is (now) the board's only writer, else who holds it (text).
        if board_id in self._claims:
            return None
        d = self.path + "-writers"
        os.makedirs(d, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(d, board_id + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        import fcntl
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            os.close(fd)
            return holder
        import sys
        os.ftruncate(fd, 0)
        os.pwrite(fd, ("pid %d (%s)" % (os.getpid(), " ".join(os.path.basename(a) if i == 0 else a
                                                             for i, a in enumerate(sys.argv[:3])))).encode(), 0)
        self._claims[board_id] = fd
        return None

    def claimed(self, board_id):
        return board_id in self._claims

    # ---- what the monitor read from the board at connect: its settings (CONFIG_GET per key) and
    # the arm it runs (ARM_READ, host/board_arm.py), which a board recording
    # (records/board_recording.py) writes as its config and arm. Each is a table of its own,
    # created when first written, so an older database reads as "nothing stored".

    _READ_AT_CONNECT = {
        "configs": "settings TEXT NOT NULL",
        # what: file / reference / invalid / unknown (board_arm.read_description);
        # description: the validated dict, or NULL
        "arms": "what TEXT NOT NULL, description TEXT, sentence TEXT",
    }

    def _add_read(self, table, values, now):
        self.db.execute("CREATE TABLE IF NOT EXISTS %s (board_id TEXT NOT NULL, epoch INTEGER NOT NULL, "
                        "read_at REAL NOT NULL, %s)" % (table, self._READ_AT_CONNECT[table]))
        row = values[:2] + (now or time.time(),) + values[2:]
        self.db.execute("INSERT INTO %s VALUES (%s)" % (table, ", ".join("?" * len(row))), row)
        self.db.commit()

    def _reads(self, table, columns, board_id, epoch):
        # -> rows of (read_at, *columns), oldest first; [] when the table was never written
        assert table in self._READ_AT_CONNECT
        try:
            return self.db.execute("SELECT read_at, %s FROM %s WHERE board_id=? AND epoch=? ORDER BY read_at"
                                   % (columns, table), (board_id, epoch)).fetchall()
        except sqlite3.OperationalError:       # no such table: nothing stored yet
            return []

    def add_config(self, board_id, epoch, settings, now=None):
        self._add_read("configs", (board_id, epoch, json.dumps(settings, sort_keys=True)), now)

    def configs(self, board_id, epoch):
        # -> [(read_at, {key: value})], oldest first; [] when none was stored.
        return [(t, json.loads(v)) for t, v in self._reads("configs", "settings", board_id, epoch)]

    def add_arm(self, board_id, epoch, what, description, sentence, now=None):
        text = None if description is None else json.dumps(description, sort_keys=True)
        self._add_read("arms", (board_id, epoch, what, text, sentence), now)

    def arms(self, board_id, epoch):
        # -> [(read_at, what, description dict or None, sentence)], oldest first; [] when none.
        return [(t, w, None if d is None else json.loads(d), s)
                for t, w, d, s in self._reads("arms", "what, description, sentence", board_id, epoch)]

    # ---- boards and epochs ----

    def board(self, board_id):
        # -> (epoch, fw_version, port) or None
        return self.db.execute("SELECT epoch, fw_version, port FROM boards WHERE board_id=?",
                               (board_id,)).fetchone()

    def board_on_port(self, port):
        # The board last seen on this port (an assumption until it says hello).
        row = self.db.execute("SELECT board_id FROM boards WHERE port=? ORDER BY last_seen DESC "
                              "LIMIT 1", (port,)).fetchone()
        return row[0] if row else None

    def touch_board(self, board_id, port=None, fw_version=None, now=None):
        now = now or time.time()
        self.db.execute("INSERT OR IGNORE INTO boards (board_id, first_seen, last_seen, epoch) "
                        "VALUES (?, ?, ?, 0)", (board_id, now, now))
        self.db.execute("UPDATE boards SET last_seen=?, port=COALESCE(?, port), "
                        "fw_version=COALESCE(?, fw_version) WHERE board_id=?",
                        (now, port, fw_version, board_id))
        self.db.commit()
        return self.board(board_id)[0]

    def new_epoch(self, board_id):
        self.db.execute("UPDATE boards SET epoch = epoch + 1 WHERE board_id=?", (board_id,))
        self.db.commit()
        return self.board(board_id)[0]

    def add_boot(self, board_id, epoch, hello, now=None):
        # hello: HELLO fields (board_id, fw_version, proto, reset_cause, boot_count, log_last_seq)
        self.db.execute("INSERT OR IGNORE INTO boots VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (board_id, epoch, hello[4], hello[1], hello[3], hello[5], now or time.time()))
        self.db.commit()

    # ---- records ----

    def last_seq(self, board_id, epoch):
        row = self.db.execute("SELECT MAX(seq) FROM records WHERE board_id=? AND epoch=?",
                              (board_id, epoch)).fetchone()
        return row[0] or 0

    def record(self, board_id, epoch, seq):
        # -> (rtype, 12 ints) or None
        row = self.db.execute("SELECT rtype, %s FROM records WHERE board_id=? AND epoch=? AND seq=?"
                              % ", ".join(RECORD_COLUMNS), (board_id, epoch, seq)).fetchone()
        return None if row is None else (row[0], tuple(row[1:]))

    def add_records(self, board_id, epoch, recs, now=None):
        # recs: iterable of (seq, rtype, 12 ints). -> how many were new (the rest were already
        # stored: a record is stored exactly once).
        now = now or time.time()
        before = self.db.total_changes
        self.db.executemany(_INSERT_RECORD, [(board_id, epoch, seq, rtype) + tuple(r) + (now,)
                                             for seq, rtype, r in recs])
        self.db.commit()
        return self.db.total_changes - before

    def last_counters(self, board_id, epoch):
        # -> the counters (cycles_ok, cycles_failed, faults, boots, dropped) of the newest stored
        # counters record, or None
        row = self.db.execute("SELECT ev_seq, t_ms, kind, from_state, to_state FROM records "
                              "WHERE board_id=? AND epoch=? AND rtype=5 ORDER BY seq DESC LIMIT 1",
                              (board_id, epoch)).fetchone()
        return None if row is None else tuple(row)

    def last_boot_count(self, board_id, epoch):
        # The highest boot count known for the board's log: boot and counters records keep it in
        # their 4th int (the from_state column), HELLO frames in the boots table. 0 if none.
        a = self.db.execute("SELECT MAX(from_state) FROM records WHERE board_id=? AND epoch=? "
                            "AND rtype IN (3, 5)", (board_id, epoch)).fetchone()[0]
        b = self.db.execute("SELECT MAX(boot_count) FROM boots WHERE board_id=? AND epoch=?",
                            (board_id, epoch)).fetchone()[0]
        return max(a or 0, b or 0)

    def add_gap(self, board_id, epoch, after_seq, next_seq, now=None):
        # Records after_seq+1 .. next_seq-1 were rotated off the board before they were fetched.
        self.db.execute("INSERT OR IGNORE INTO gaps VALUES (?, ?, ?, ?, ?, ?)",
                        (board_id, epoch, after_seq, next_seq, next_seq - after_seq - 1, now or time.time()))
        self.db.commit()

    def gaps(self, board_id=None):
        # -> [(board_id, epoch, after_seq, next_seq, lost, noted_at)], oldest first
        q = "SELECT board_id, epoch, after_seq, next_seq, lost, noted_at FROM gaps"
        args = ()
        if board_id:
            q += " WHERE board_id=?"
            args = (board_id,)
        try:
            return [tuple(r) for r in self.db.execute(q + " ORDER BY board_id, epoch, after_seq", args)]
        except sqlite3.OperationalError:     # a database from before gaps were kept, read-only
            return []

    def lost_records(self, board_id):
        return sum(g[4] for g in self.gaps(board_id))

    def count_records(self, board_id=None):
        if board_id is None:
            return self.db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM records WHERE board_id=?", (board_id,)).fetchone()[0]

    def recent_faults(self, board_id, epoch, limit=8):
        # -> newest first: (seq, 12 ints) of rtype 2 (fault) records
        rows = self.db.execute("SELECT seq, %s FROM records WHERE board_id=? AND epoch=? AND rtype=2 "
                               "ORDER BY seq DESC LIMIT ?" % ", ".join(RECORD_COLUMNS),
                               (board_id, epoch, limit)).fetchall()
        return [(r[0], tuple(r[1:])) for r in rows]

    def last_run_records(self, board_id, epoch):
        # -> [12 ints] oldest first: the last production run's records (codes.K_RUN, from its
        # RUN_START on). A monitor that starts on this database shows the run from them.
        from surepick.firmware import flashlog
        from surepick.shared_fsm import codes, run_codes
        row = self.db.execute("SELECT MAX(seq) FROM records WHERE board_id=? AND epoch=? AND rtype!=? AND kind=? "
                              "AND reason=?", (board_id, epoch, flashlog.R_BOOT, codes.K_RUN,
                                               run_codes.R_RUN_START)).fetchone()
        if row[0] is None:
            return []
        rows = self.db.execute("SELECT %s FROM records WHERE board_id=? AND epoch=? AND seq>=? AND rtype!=? "
                               "AND kind=? ORDER BY seq" % ", ".join(RECORD_COLUMNS),
                               (board_id, epoch, row[0], flashlog.R_BOOT, codes.K_RUN)).fetchall()
        return [tuple(r) for r in rows]

    # ---- telemetry (buffered: one transaction per batch) ----

    def add_telemetry(self, board_id, fields, now=None):
        # the stored columns; newer firmware appends the loop's cycle figures after them
        self._telemetry.append((board_id, now or time.time()) + tuple(fields[:len(TELEMETRY_COLUMNS)]))
        if len(self._telemetry) >= 256:
            self.flush()

    def flush(self):
        if self._telemetry:
            self.db.executemany(_INSERT_TELEMETRY, self._telemetry)
            self.db.commit()
            self._telemetry = []

    def records(self, board_id=None, since=None):
        # -> every stored record as a dict (board_id, epoch, seq, rtype, RECORD_COLUMNS...,
        # received_at), oldest first per board and epoch. since: ("seq", N) for log seq above
        # N, or ("time", epoch seconds) for records received at or after it.
        q = "SELECT board_id, epoch, seq, rtype, %s, received_at FROM records" % ", ".join(RECORD_COLUMNS)
        where, args = [], []
        if board_id:
            where.append("board_id=?")
            args.append(board_id)
        if since:
            where.append("seq>?" if since[0] == "seq" else "received_at>=?")
            args.append(since[1])
        if where:
            q += " WHERE " + " AND ".join(where)
        q += " ORDER BY board_id, epoch, seq"
        cols = ("board_id", "epoch", "seq", "rtype") + RECORD_COLUMNS + ("received_at",)
        return [dict(zip(cols, r)) for r in self.db.execute(q, args)]

    # ---- link sessions (one per monitor run on a port) ----

    def start_link_session(self, port, now=None):
        cur = self.db.execute("INSERT INTO link_sessions (port, started_at) VALUES (?, ?)",
                              (port, now or time.time()))
        self.db.commit()
        return cur.lastrowid

    def end_link_session(self, sid, frames, corrupt, reconnects, added, now=None):
        self.flush()
        self.db.execute("UPDATE link_sessions SET ended_at=?, frames=?, corrupt=?, reconnects=?, "
                        "records_added=? WHERE id=?",
                        (now or time.time(), frames, corrupt, reconnects, added, sid))
        self.db.commit()


def _told(method):
    # A damaged file (a page torn by a crash, a disk, a copy cut short) shows only when that page
    # is read, by whichever method reads it: the user is told which file and the way out.
    @functools.wraps(method)
    def guarded(self, *args, **kw):
        try:
            return method(self, *args, **kw)
        except sqlite3.OperationalError as e:
            if "locked" not in str(e):
                raise _damaged(self.path, e) from None
            raise StoreError("%s is busy: another process has held it for longer than the wait (%s); try again "
                             "when it is done" % (self.path, e)) from None
        except sqlite3.DatabaseError as e:
            raise _damaged(self.path, e) from None
    return guarded


def _damaged(path, e):
    return StoreError("%s cannot be read: %s (the file is damaged or not a surepick monitor database); "
                      "`sqlite3 %s .recover` saves what it still holds; `surepick monitor --db NEW.sqlite3` "
                      "fetches again what the board's log still holds" % (path, e, path))


for _name, _method in list(vars(Store).items()):
    if callable(_method) and not _name.startswith("__"):
        setattr(Store, _name, _told(_method))


def default_db_path():
    import os

    import platformdirs
    d = platformdirs.user_data_dir("surepick", appauthor=False)
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, "monitor.sqlite3")
