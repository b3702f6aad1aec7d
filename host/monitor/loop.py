# The monitor's loop: connect, find out which board it is, back-fill its log into
# the store (LOG_SINCE from the last stored seq), then follow the live frames, polling the log
# again whenever new events were seen. When the port goes away (board reset, cable pulled,
# laptop asleep, virtual board killed) it reconnects on its own and back-fills again, so
# nothing the board had committed to its flash log is ever missing from the store.
#
# One thread runs all of it (run(stop)); frame callbacks only record what happened, requests
# are made from the loop, never from inside a callback. Other threads (a test, a view key
# binding) send requests with call(), which hands them to the loop.
#
# Through a link hub (host/link/hub.py) other tools use the board meanwhile; while the hub has
# lent the console to mpremote or a deploy, the monitor asks nothing and says so, then
# identifies the board again and back-fills when the console is returned.
#
# Rotated or restarted? The board's log is a ring of segments: while the monitor is away the
# board may delete the segment holding the record stored last. The board then still counts on
# from it: its oldest record is newer than ours, its boot count has not gone down and its
# counters (carried at the start of every segment) have not either. That is the same log with
# records lost to rotation (counted as a gap, same epoch). A board whose oldest record is not
# newer than ours but lacks ours, or differs from it, or whose counters went down, restarted its
# log (wiped flash, another board with the same id): a new epoch.
import queue
import threading
import time

from surepick.firmware import flashlog
from surepick.shared_fsm import codes, link
from surepick.host.link import hub_client
from surepick.host.link.frames import as_dict
from surepick.host import rejects
from surepick.host.monitor.names import EVENT_RECORD_TYPES
from surepick.host.link.client import LinkClient
from surepick.host.link.errors import ConsoleLent, Disconnected, LinkError, PortBusy, RequestTimeout

_BACKOFF_S = (0.2, 0.5, 1.0, 2.0)   # reconnect waits, then every 2 s
_IDENTIFY_RETRY_S = 2.0
_REQUEST_S = 2.0
_IDLE_POLL_S = 10.0                # ask for the log now and then even when no event was seen
_FLUSH_S = 1.0
_CLAIM_RETRY_S = 2.0               # watching only: try to become the board's writer this often
_ARM_RETRY_S = 2.0                 # the board's arm description, asked again while the arm works


class MonitorLoop:
    """Follow the board on one port into the store and a BoardStatus. out(kind, data) receives what happens, for the plain printer:
    kind in hello / event / fault / record / telemetry / note."""

    def __init__(self, port, store, status, board_id=None, log_poll_s=1.0, out=None,
                 on_text=None, clock=time.monotonic, hub=hub_client.USE):
        self.port = port
        self.hub = hub
        self.store = store
        self.status = status
        self.forced_id = board_id
        self.log_poll_s = log_poll_s
        self.out = out or (lambda kind, data: None)
        self.on_text = on_text or status.add_text
        self.clock = clock
        self.client = None
        self.board_id = None
        self.epoch = 0
        self.reconnects = 0
        self.records_added = 0
        self._totals = {"frames": 0, "corrupt": 0, "echoed": 0, "text_bytes": 0, "timeouts": 0}
        self._calls = queue.Queue()
        self.writer = False          # this monitor stores the board's records (claimed in the store)
        self._next_claim = 0.0
        self._run_shown = 0
        self._reset_link_state()

    def _reset_link_state(self):
        self._hello = None
        self._need_identify = True
        self._next_identify = 0.0
        self._need_backfill = False
        self._events_since_poll = 0
        self._last_poll = 0.0
        self._lent = None
        self._ask_run = True          # RUN_STATUS wanted (connected, a run record seen)
        self._last_run_ask = 0.0
        self._run_status = True       # the firmware answers RUN_STATUS (False: one without runs)
        self._arm_wanted = True       # the board's arm description, read once per connect and boot
        self._next_arm = 0.0

    # ---- the loop ----

    def run(self, stop):
        sid = self.store.start_link_session(self.port)
        first = True
        failures = 0
        try:
            while not stop.is_set():
                try:
                    self.client = LinkClient(self.port, on_frame=self._on_frame, on_text=self.on_text,
                                             hub=self.hub, name="surepick monitor").open()
                except LinkError as e:
                    self._note("waiting for the board: %s" % e)
                    stop.wait(_BACKOFF_S[min(failures, len(_BACKOFF_S) - 1)])
                    failures += 1
                    continue
                failures = 0
                if not first:
                    self.reconnects += 1
                first = False
                self._reset_link_state()
                self.status.update(connected=True, reconnects=self.reconnects,
                                   via_hub=self.client.via_hub)
                self._note("connected to %s%s" % (self.port, " through the link hub" if self.client.via_hub else ""))
                try:
                    self._serve(stop)
                except PortBusy as e:
                    self._note(str(e))
                except Disconnected as e:
                    self._note("link lost: %s; reconnecting" % e)
                finally:
                    self._close_client()
                if not stop.is_set():
                    stop.wait(_BACKOFF_S[0])
        finally:
            self._close_client()
            self.store.end_link_session(sid, self._totals["frames"], self._totals["corrupt"],
                                   self.reconnects, self.records_added)

    def _close_client(self):
        if self.client is None:
            return
        for k in ("frames", "corrupt", "echoed", "text_bytes"):
            self._totals[k] += self.client.parser.stats()[k]
        self._totals["timeouts"] += self.client.timeouts
        self.client.close()
        self.client = None
        self.status.update(connected=False, link=self.link_stats())

    def link_stats(self):
        s = dict(self._totals)
        if self.client is not None:
            p = self.client.parser.stats()
            for k in ("frames", "corrupt", "echoed", "text_bytes"):
                s[k] += p[k]
            s["timeouts"] += self.client.timeouts
        s["reconnects"] = self.reconnects
        return s

    def _serve(self, stop):
        last_flush = self.clock()
        while not stop.is_set():
            now = self.clock()
            if self._console_lent():
                pass                         # nothing is asked while mpremote has the console
            else:
                try:
                    self._ask(now)
                except ConsoleLent:
                    self._console_lent()
            self.client.pump(0.05)
            self._emit_run()
            if now - last_flush >= _FLUSH_S:
                self.store.flush()
                last_flush = now
            self.status.update(link=self.link_stats())

    def _ask(self, now):
        if self._hello is not None:
            self._on_hello(self._hello)
        elif self._need_identify and now >= self._next_identify:
            self._identify()
        if self.board_id is not None and not self.writer and now >= self._next_claim:
            self._claim()
        if self.board_id is not None and self.writer and (
                self._need_backfill
                or (self._events_since_poll and now - self._last_poll >= self.log_poll_s)
                or now - self._last_poll >= _IDLE_POLL_S):
            self._backfill()
        if self._arm_wanted and self.writer and not self._need_backfill and now >= self._next_arm:
            self._read_arm(now)      # after the back-fill: the epoch it belongs to is settled
        self._ask_run_status(now)
        self._run_calls()

    def _ask_run_status(self, now):
        # The run's counters from the board, once a run record came (or on connect), and now and
        # then while a run goes on (a record missed by a monitor that only watches).
        if not self._run_status or self.board_id is None:
            return
        if not self._ask_run and (now - self._last_run_ask < _IDLE_POLL_S
                                  or (self.status.run_figures()[1] or {}).get("state") != "running"):
            return
        self._ask_run = False
        self._last_run_ask = now
        try:
            r = self.client.request(link.T_RUN_STATUS, (), _REQUEST_S)
        except RequestTimeout:
            return                    # asked again with the next run record, or the idle poll
        except ConsoleLent:
            self._ask_run = True
            raise
        if r.ok:
            self.status.on_run_status(r.payload)
        else:
            self._run_status = False  # a firmware without production runs (or an older one)

    def _emit_run(self):
        if self.status.run_version == self._run_shown:
            return
        version, figures = self.status.run_figures()
        self._run_shown = version
        if figures is not None:
            self.out("run", figures)

    def _console_lent(self):
        # True while the hub has lent the board's console (the note said once); when it comes
        # back, whatever ran meanwhile (a deploy, a reset) is found out by asking again. A
        # lending that began and ended between two looks (a quick mpremote) counts the same.
        lent = self.client.lent_to
        returns = self.client.take_returns()
        if returns and self._lent is None:
            self._note_lent(returns[0])
        if returns:
            self._note("the board's console is back from %s" % returns[-1])
            self._lent = None
            self.status.update(lent_to=None)
            self._need_identify = True
            self._next_identify = 0.0
            self._need_backfill = True
        if lent and self._lent is None:
            self._note_lent(lent)
        return bool(lent)

    def _note_lent(self, lent):
        self._lent = lent
        self.status.update(lent_to=lent)
        self._note("the board's console is lent to %s: not asking anything until it is returned" % lent)
        self._fail_calls(ConsoleLent("the board's console is lent to %s" % lent))

    # ---- requests from other threads ----

    def call(self, ftype, args=(), timeout=_REQUEST_S, wait=None):
        """Send one request over the monitor's own link (from any thread) -> link.client.Reply.
        Raises RequestTimeout when the board does not answer within `timeout` s, Disconnected
        when the link is not up within `wait` s (default: timeout)."""
        done = threading.Event()
        box = {}
        self._calls.put((ftype, tuple(args), timeout, done, box))
        if not done.wait((wait if wait is not None else timeout) + timeout + 1.0):
            box.setdefault("error", Disconnected("%s: the link is not up" % self.port))
            box["cancelled"] = True
        if "error" in box:
            raise box["error"]
        return box["reply"]

    def _run_calls(self):
        while True:
            try:
                ftype, args, timeout, done, box = self._calls.get_nowait()
            except queue.Empty:
                return
            if box.get("cancelled"):
                continue
            try:
                box["reply"] = self.client.request(ftype, args, timeout)
            except (RequestTimeout, ConsoleLent) as e:
                box["error"] = e
            except Disconnected as e:
                box["error"] = e
                done.set()
                raise
            finally:
                done.set()

    def _fail_calls(self, error):
        while True:
            try:
                _, _, _, done, box = self._calls.get_nowait()
            except queue.Empty:
                return
            box["error"] = error
            done.set()

    # ---- who is it ----

    def _identify(self):
        self._need_identify = False
        try:
            r = self.client.request(link.T_PING, (), _REQUEST_S)
            st = self.client.request(link.T_STATUS, (), _REQUEST_S)
        except RequestTimeout:
            self._note("no answer from the firmware on %s (stopped in the REPL?); still listening"
                       % self.port)
            self._need_identify = True
            self._next_identify = self.clock() + _IDENTIFY_RETRY_S
            return
        boots = st.payload[3] if st.ok and len(st.payload) > 3 else None
        bid, assumed, fw = None, False, None
        if r.payload and isinstance(r.payload[0], str):
            bid = r.payload[0]              # a firmware that names itself in PING replies
            if len(r.payload) > 1 and isinstance(r.payload[1], str):
                fw = r.payload[1]           # (board_id, fw_version)
        elif self.forced_id:
            bid = self.forced_id
        elif self.board_id:
            bid = self.board_id             # known from a HELLO earlier in this run
        else:
            bid = self.store.board_on_port(self.port)
            assumed = bid is not None
        if bid is None:
            self._note("board id unknown until the board says hello: reset it (or pass --board-id); "
                       "records are back-filled then")
            return
        if assumed:
            self._note("assuming %s, the board last seen on %s, until it says hello" % (bid, self.port))
        self._set_board(bid, fw, assumed)
        self._read_config()
        if fw is not None:
            self.status.update(fw_version=fw)
        if boots is not None:
            self.status.update(boot_count=boots)
        if st.ok and len(st.payload) > 7 and st.payload[7]:   # the boot rejected something
            self._fetch_rejects()

    def _on_hello(self, hello):
        self._hello = None
        self._need_identify = False
        self._set_board(hello[0], hello[1], False)
        if self.writer:
            try:
                self._backfill()         # settles the epoch the boot belongs to
            except ConsoleLent:
                self._hello = hello      # again once the console is back
                raise
            self.store.add_boot(self.board_id, self.epoch, hello)
            self._read_config()
            self._arm_wanted, self._next_arm = True, 0.0   # a deploy --arm reboots the board
        self.status.on_hello(hello)
        self._ask_run = True
        self.out("hello", hello)
        if self.status.rejected:
            self._fetch_rejects()

    def _fetch_rejects(self):
        # What the board's boot rejected from its flash, item by item (host/rejects.py).
        try:
            got = rejects.fetch(self.client, _REQUEST_S)
        except RequestTimeout:
            return
        if got is not None:
            self.status.update(rejected=got[0], rejects=got[1])
            self.out("rejects", got)

    def _set_board(self, bid, fw, assumed):
        # No verdict on a log restart from the numbers in a HELLO or STATUS: a HELLO says where
        # the log stood at boot and can be read after a back-fill already stored newer records.
        # The back-fill decides from the board's log itself.
        if bid != self.board_id:
            self.status.clear_faults()
            self.writer = False
            self._next_claim = 0.0
        self.board_id = bid
        self._fw = fw
        self.status.update(board_id=bid, board_id_assumed=assumed)
        self._claim()
        self._need_backfill = True

    def _claim(self):
        # Become the board's one writer in this database, or watch only (and try again later).
        bid = self.board_id
        holder = self.store.claim(bid)
        self._next_claim = self.clock() + _CLAIM_RETRY_S
        if holder is not None:
            if self.status.writer_elsewhere != holder:
                self._note("%s is already being recorded into %s by %s: this monitor only watches "
                           "(and records once that one stops)" % (bid, self.store.path, holder))
                self.status.update(writer_elsewhere=holder)
            return
        self.writer = True
        if self.status.writer_elsewhere:
            self._note("now recording %s into %s" % (bid, self.store.path))
        self.epoch = self.store.touch_board(bid, self.port, getattr(self, "_fw", None))
        self.status.update(writer_elsewhere=None, records_stored=self.store.count_records(bid),
                           last_seq=self.store.last_seq(bid, self.epoch),
                           lost_to_rotation=self.store.lost_records(bid))
        self.status.add_fault_records(self.store.recent_faults(bid, self.epoch))
        for r in self.store.last_run_records(bid, self.epoch):
            self.status.on_run_record(r)
        self._need_backfill = True

    # ---- the log ----

    def _backfill(self):
        # LOG_SINCE from the last stored seq until the board has no more. The record AT the
        # last stored seq is asked for again and compared (see the top of this file).
        self._need_backfill = False
        self._events_since_poll = 0
        self._last_poll = self.clock()
        bid = self.board_id
        stored = self.store.last_seq(bid, self.epoch)
        after = max(stored - 1, 0)
        check = stored > 0
        for _ in range(100000):  # bounded: every round moves `after` forward
            try:
                r = self.client.request(link.T_LOG_SINCE, (after,), _REQUEST_S, collect=(link.T_LOG,))
            except RequestTimeout:
                self._need_backfill = True
                self._note("log back-fill: no reply; will ask again")
                return
            if not r.ok:
                self._note("log back-fill refused: %s %s" % (r.code_name, list(r.payload)))
                return
            recs = [(f.fields[0], f.fields[1], f.fields[2:]) for f in r.frames]
            if check:
                check = False
                verdict = self._continuity(bid, stored, recs, r.payload)
                if verdict is not None:
                    self.epoch = self.store.new_epoch(bid)
                    self._note("%s's log %s: it restarted; keeping both, the new records as epoch %d"
                               % (bid, verdict, self.epoch))
                    stored, after = 0, 0
                    continue
            new = [x for x in recs if x[0] > stored]
            if new:
                added = self.store.add_records(bid, self.epoch, new)
                self.records_added += added
                stored = max(stored, new[-1][0])
                for x in new:
                    self.out("record", x)
                    if x[1] in EVENT_RECORD_TYPES and x[2][2] == codes.K_RUN:
                        self.status.on_run_record(x[2])
                        self._ask_run = True
            more = len(r.payload) > 2 and r.payload[2] == 1
            last = r.payload[1] if len(r.payload) > 1 and isinstance(r.payload[1], int) else after
            if not more or last <= after:
                break
            after = last
        self.status.update(records_stored=self.store.count_records(bid), records_added=self.records_added,
                          last_seq=self.store.last_seq(bid, self.epoch),
                          lost_to_rotation=self.store.lost_records(bid),
                          backfills=self.status.backfills + 1)
        self.status.add_fault_records(self.store.recent_faults(bid, self.epoch))

    def _continuity(self, bid, stored, recs, payload):
        # Is the board's log the one we stored up to `stored`? None: yes (a gap lost to rotation
        # is recorded); else why not, for the note. recs: the first LOG_SINCE(stored - 1) batch.
        if recs and recs[0][0] == stored:
            if self.store.record(bid, self.epoch, stored) != (recs[0][1], tuple(recs[0][2])):
                return "holds a different record %d" % stored
            return None
        if not recs:
            return "has no record %d (its log ends before it)" % stored
        first = recs[0][0]             # the oldest record the board holds above stored - 1
        oldest = payload[3] if len(payload) > 3 and isinstance(payload[3], int) else None
        if oldest is not None and 0 < oldest <= stored:
            return "has no record %d although it holds older ones" % stored
        boots = payload[4] if len(payload) > 4 and isinstance(payload[4], int) else self._boot_count()
        known = self.store.last_boot_count(bid, self.epoch)
        if boots is not None and boots < known:
            return "has no record %d and counts %d boots, fewer than the %d seen" % (stored, boots, known)
        counters = next((tuple(r[:5]) for _, rtype, r in recs if rtype == flashlog.R_COUNTERS), None)
        mine = self.store.last_counters(bid, self.epoch)
        if counters is not None and mine is not None and any(a < b for a, b in zip(counters, mine)):
            return "has no record %d and its counters %s went below the stored %s" % (stored, counters, mine)
        self.store.add_gap(bid, self.epoch, stored, first)
        self._note("%s's log rotated past record %d while it was not fetched: records %d..%d (%d) "
                   "were lost to rotation; same log, epoch %d kept"
                   % (bid, stored, stored + 1, first - 1, first - stored - 1, self.epoch))
        return None

    def _boot_count(self):
        # A firmware whose LOG_SINCE reply does not carry its boot count says it in STATUS.
        try:
            st = self.client.request(link.T_STATUS, (), _REQUEST_S)
        except RequestTimeout:
            return None
        return st.payload[3] if st.ok and len(st.payload) > 3 and isinstance(st.payload[3], int) else None

    # ---- live frames (called from inside pump/request: record, never request) ----

    def _on_frame(self, f):
        t = f.ftype
        if t == link.T_TELEMETRY:
            d = as_dict(f)
            self.status.on_telemetry(d)
            if self.board_id is not None and self.writer:
                self.store.add_telemetry(self.board_id, f.fields)
            self.out("telemetry", d)
        elif t == link.T_EVENT:
            self.status.on_event(f.fields)
            self._events_since_poll += 1
            if f.fields[2] == codes.K_RUN:
                self._ask_run = True
            self.out("event", f.fields)
        elif t == link.T_FAULT:
            self.out("fault", as_dict(f))
        elif t == link.T_HELLO:
            self._hello = f.fields

    def _note(self, text):
        self.status.update(note=text)
        self.out("note", text)

    def _read_config(self):
        # The board's settings, once per connect and boot (about 100 CONFIG_GETs, well under a
        # second): a board recording made from this store then says what the board ran with.
        from surepick.host import board_settings
        try:
            values = board_settings.read_all(self.client, _REQUEST_S)
        except (RequestTimeout, ValueError) as e:
            self._note("could not read the board's settings: %s" % e)
            return
        if values:
            self.store.add_config(self.board_id, self.epoch, values)

    def _read_arm(self, now):
        # The arm the board runs (its /arm.json over ARM_READ, a flash read of a few dozen
        # requests), once per connect and boot: a board recording made from this store then says
        # which arm ran. The board answers it at rest only (E_BUSY while the arm works, nothing
        # moved, the job undisturbed): asked again until it is at rest. What the board cannot
        # tell (older firmware, an invalid file) is stored as such; the monitor goes on.
        from surepick.host import board_arm
        try:
            what, description, sentence = board_arm.read_description(self.client, _REQUEST_S)
        except board_arm.ArmBusy:
            if not self._next_arm:
                self._note("the arm is working: its description is read once it is at rest")
            self._next_arm = now + _ARM_RETRY_S
            return
        except RequestTimeout:        # as for the settings: asked again at the next connect or boot
            self._arm_wanted = False
            self._note("could not read the board's arm description: no answer")
            return
        self._arm_wanted = False
        self.store.add_arm(self.board_id, self.epoch, what, description, sentence)
        if what in ("invalid", "unknown"):
            self._note("the board's arm is not known to recordings: %s" % sentence)
