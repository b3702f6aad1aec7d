# The firmware's main program: the controller core (controller.py: drivers, boot, tick order)
# plus the link, the flash log, telemetry, hardware in the loop and the status LED, run at a
# fixed rate that never blocks.
#
# The HAL is handed in (main.py passes hal.for_this_port(): the Pico's or the virtual board's; tests
# pass a stand-in), so nothing here imports `machine` or `time`.
#
# Per tick, in order: the controller's tick (inputs -> machine.step -> watches -> rescue /
# calibration -> motion.tick -> servos) -> link (at most link_rx_bytes request bytes,
# link_events_per_tick EVENT frames, one TELEMETRY frame when due) -> at-rest housekeeping (at
# most one flash write or garbage collection, and only once the arm has settled) -> LED; then the
# loop feeds the watchdog. Steady-state ticks allocate nothing; frames are built only when
# something is sent.
#
# The watchdog (wdt_ms, 500 ms at most) is fed only in a tick whose controller part completed
# (inputs read, machine stepped, servos driven: tick_ok), after the tick and before each flash
# write at rest (an erase may take hundreds of ms). A loop that hangs, or that stops completing
# the controller's tick, is reset into the boot path (boot_recovery: INTERRUPTED if a job ran).
# Under HIL lockstep the wait for the host's next frame feeds it too (the real servos are not
# driven under HIL, and a host pausing must not reset the board). Ctrl-C stops it (shutdown).
#
# Heap on the chip: the .mpy bytecode of every module imported lives in the RP2040's 240 KB
# MicroPython heap, next to what a job plans at its start. A module only a rare request needs
# (hal/hil.py: HIL_MODE) is imported by that request's handler, at rest, and a MemoryError there
# is an E_BUSY "heap" reply, never a stopped loop; the loop itself imports nothing. main()
# collects the imports' garbage before the App's long-lived objects are allocated.
import gc
import sys
from array import array

from ..shared_fsm import link
from ..shared_fsm.compat import const, micropython
from ..shared_fsm.codes import K_TRANSITION, K_FAULT, R_PLACED, F_ESTOP
from ..shared_fsm.machine import (Job, OK as M_OK, E_BUSY as M_BUSY, E_FAULTED as M_FAULTED,
                                  E_ESTOP_ACTIVE as M_ESTOP, E_HOLDING as M_HOLDING,
                                  E_ARM_OFF as M_ARM_OFF)
from ..shared_fsm.motion import job_moves
from ..shared_fsm.states import IDLE
from ..shared_fsm.ticks import ticks_diff as ms_diff, ticks_add as ms_add

from . import arm_file
from . import boot_recovery as rec
from . import cmdparse
from . import flashlog
from . import settings as settings_mod
from . import telemetry
from .controller import Controller, E_ARM_INVALID, E_PAYLOAD
from .framewriter import FrameWriter
from .status_led import (StatusLed, IDLE as LED_IDLE, BUSY as LED_BUSY, FAULT as LED_FAULT, ESTOP as LED_ESTOP,
                         STOPPED as LED_STOPPED)

FW_VERSION = "0.1.0"
LOG_BATCH = 16           # LOG frames per LOG_SINCE reply; the host asks again for more
_HIL_RX = link.MAX_FRAME_LEN + 1   # HIL: a whole sensor frame per tick, not link_rx_bytes
_HIL_LINES = 4                     # HIL: lines handled per tick at most
_CTRL_C = const(0x03)    # a raw Ctrl-C on the console stops the program (LineReader.poll)
_APPROACH = "approach_height_um"   # the setting a JOB may carry (docs/protocol.md)
_US_MASK = 0x3FFFFFFF
GC_REST_MS = 5000        # at rest, collect garbage at least this often (and before every job)

# Boot record (flashlog R_BOOT): the 12 ints.
_BOOT_FIELDS = ("seq", "t_ms", "reset_cause", "boot_count", "action", "grip", "pot_counts",
                "switch_pressed", "beam_broken", "marker", "rest_stored", "rejected")


# After a collection MicroPython's allocator searches for free blocks from the heap's bottom
# again, and only a one-block allocation moves its starting point up (to the block it took).
# The bottom is the firmware's long-lived objects with small holes between them, so until one-
# block objects have filled those holes every larger allocation scans past them all: on the
# emulated RP2040 0.6 ms each, and the first ticks of a production cycle overran the 4 ms period
# with three of them (docs/rp2040.md, heap on the chip). _past_the_holes() fills them in the
# collection's own tick (maintenance) with one-block floats, left as garbage until the next
# collection, until PLUG_RUN of them in a row sit side by side: the search then starts in free
# space. At most PLUG_MAX (64 KB of one-block objects on the chip): on a heap with no such run
# free, the allocator collects partway through, harmless in a maintenance tick.
PLUG_RUN = const(32)
PLUG_MAX = const(4096)
_PLUGS = sys.implementation.name == "micropython"    # the host's Python has no such allocator


def _past_the_holes():
    # -> how many one-block objects it took (0 on the host's Python)
    if not _PLUGS:
        return 0
    prev = 0
    run = 0
    x = 0.5
    for i in range(PLUG_MAX):
        a = id(x * i)              # a new float: one block; id() is its address
        d = a - prev
        if 0 < d <= 32:            # the block after the last one (16 B on the chip, 32 on 64-bit)
            run += 1
            if run >= PLUG_RUN:
                return i + 1
        else:
            run = 0
        prev = a
    return PLUG_MAX


class App(Controller):
    # production.py's Run: the running production run, or the last one since boot. A class
    # default, set on the instance by the first RUN: one more attribute at boot grew the App's
    # attribute table past the chip's largest free block (docs/production-run.md, "Heap").
    production = None
    # teleop_mode.py once the first TELEOP request loaded it (Controller.load_teleop); a class
    # default for the same reason.
    _teleop = None

    def __init__(self, hal, root=""):
        Controller.__init__(self, hal, root)
        self.led = StatusLed(hal)
        self.log = flashlog.FlashLog(root + "/log", rejected=self.settings.rejected)
        self.reader = cmdparse.LineReader()
        self.console_read = hal.console_read_byte     # the LineReader's byte source
        self.fw = FrameWriter()
        self.rec = array("i", [0] * 12)   # one event record, copied out of the ring
        self.stats = telemetry.LoopStats(self.cfg.loop_period_ms * 1000)
        self.tel = telemetry.Spread(FrameWriter())   # the periodic TELEMETRY, one part per tick
        self.next_gc = self.now_ms
        self._cache_settings()
        self.ev_sent = 0          # events fully forwarded (log record and frames)
        self.ev_piece = 0         # the next piece of event ev_sent + 1: 0 EVENT, 1 log, 2 FAULT
        self.ev_lost = 0
        self.tx_bytes = 0
        self.rx_lines = 0
        self.next_telemetry = self.now_ms
        self.last_commit = self.now_ms
        self.cycle_open = 0       # the marker is on flash: a cycle, or what it left, is not over
        self.marker_counted = 1   # 0: an interruption this boot counted is not yet marked on flash
        self.pose_saved = 0       # the pose the arm has been still in since is on flash
        self.boot_seen_seq = -1   # event seq of an interruption an earlier boot logged already
        self.hil = None           # hal/hil.py's HilPins while hardware-in-the-loop is on
        self._hil_saved = None    # servo and motion state when HIL began: restored on leaving
        self._hil_wait = None     # hal/hil.py's wait_input (the module loads at HIL_MODE)
        self.tick_ok = 0          # this tick's controller part completed: the watchdog may be fed

    def _cache_settings(self):
        # what the loop reads every tick, out of the settings dict
        self.rx_per_tick = self.settings.board["link_rx_bytes"]
        self.events_per_tick = self.settings.board["link_events_per_tick"]
        self.telemetry_hz = self.settings.board["telemetry_hz"]

    def apply_settings(self):
        Controller.apply_settings(self)
        self._cache_settings()

    # ---- boot ----

    def boot(self):
        # The controller's boot, then the boot record, the counters and HELLO.
        marker, rest_stored, switch, beam_on = Controller.boot(self)
        self.log.count(flashlog.C_BOOTS)
        self._log_boot(marker, rest_stored, switch, beam_on)
        if self.boot_action == rec.ACT_FAULT:
            self.cycle_open = 1      # the marker stays until nothing is held and no fault latched
            if not marker.get("counted"):
                self.log.count(flashlog.C_CYCLES_FAILED)   # counted once, however often it reboots
                self.marker_counted = 0
            else:
                # found again: its INTERRUPTED event is sent, not logged or counted again
                self.boot_seen_seq = self.m.events.next_seq - 1
        self.flash_tick = 1
        self.log.commit()
        self.last_commit = self.now_ms
        rj = self.settings.rejected
        self._send(link.hello(self.board_id(), FW_VERSION, self.reset_cause,
                              self.log.counters[flashlog.C_BOOTS], self.log.last_seq,
                              rj.count, rj.items[0] if rj.items else None))

    def board_id(self):
        uid = self.hal.unique_id()
        return ("pico-" + uid)[:link.MAX_TOKEN_LEN]

    def _log_boot(self, marker, rest_stored, switch, beam_on):
        r = [0] * 12
        r[1] = self.now_ms
        r[2] = self.reset_cause
        r[3] = self.log.counters[flashlog.C_BOOTS]
        r[4] = self.boot_action
        r[5] = self.boot_grip
        r[6] = self.m.inp.pot_counts
        r[7] = switch
        r[8] = beam_on
        r[9] = 0 if marker is None else (1 if marker.get("job") is not None else 2)
        r[10] = 1 if rest_stored else 0
        r[11] = self.settings.rejected.count
        self.log.append(flashlog.R_BOOT, r)

    # ---- the loop ----

    def run(self):
        hal = self.hal
        try:
            self.boot()
            period_us = self.cfg.loop_period_ms * 1000
            hal.wdt_start(self.settings.board["wdt_ms"])
            deadline = self._on_grid(period_us)
            while True:
                if self.hil is not None and self.hil.mode == link.HIL_LOCKSTEP:
                    self._lockstep_tick(period_us)
                    deadline = self._on_grid(period_us)
                    continue
                hal.wait_until_us(deadline)
                start = hal.ticks_us()
                c0 = hal.cpu_us()
                self.tick(hal.ticks_ms())
                self.feed_watchdog()
                self.stats.record(start, hal.ticks_diff(hal.cpu_us(), c0), self.flash_tick, hal.ticks_diff)
                deadline = hal.ticks_add(deadline, period_us)
                late = hal.ticks_diff(hal.ticks_us(), deadline)
                if late > 0:
                    # Behind (a flash write or a collection at rest, an overrun): the periods
                    # already begun are skipped, never made up in a burst; ticks keep starting
                    # on the period grid.
                    skip = late // period_us + 1
                    self.stats.late += 1
                    self.stats.skipped += skip
                    deadline = hal.ticks_add(deadline, skip * period_us)
        except KeyboardInterrupt:
            self.shutdown()
            raise

    def _on_grid(self, period_us):
        # The next tick start on the period grid (whole multiples of the period on ticks_us), so
        # ticks begin at a fixed phase and a plant stepping whole periods sees one tick each.
        now = self.hal.ticks_us()
        r = now % period_us
        return now if r == 0 else self.hal.ticks_add(now, period_us - r)

    def _lockstep_tick(self, period_us):
        # HIL lockstep: wait (at most one period, watchdog fed) for the next sensor frame, then
        # step once at the frame's virtual time. No frame, no step: virtual time stands still.
        hal = self.hal
        hil = self.hil
        start = hal.cpu_us()
        while not hil.fresh and self.hil is hil:
            r = self.reader.poll(self.console_read, _HIL_RX, _CTRL_C)
            if r != cmdparse.LINE_NONE:
                self._on_line(r)
            if hal.ticks_diff(hal.cpu_us(), start) >= period_us:
                break
            if r == cmdparse.LINE_NONE:
                self._hil_wait(1)
        hal.wdt_feed()
        if self.hil is hil and hil.fresh:
            c0 = hal.cpu_us()
            self.tick(hil.t_ms)
            self.stats.record((hil.t_ms * 1000) & _US_MASK, hal.ticks_diff(hal.cpu_us(), c0),
                              self.flash_tick, hal.ticks_diff)

    @micropython.native
    def tick(self, now):
        # One loop period. Returns nothing; everything it does is visible in the app's state.
        self.tick_ok = 0
        seq = self.m.events.next_seq
        Controller.tick(self, now)
        if self.still_since == now:
            self.pose_saved = 0            # the arm moved: the pose on flash is not this one
        self.tick_ok = 1          # inputs read, machine stepped, servos driven
        if self.hil is not None:
            self._send_act(now)
        self._link(now)
        busy = self.busy()
        if not busy:
            self._at_rest(now)
        if seq != self.m.events.next_seq:
            # The tick made an event: a transition's tick, the loop's longest, whose EVENT frame
            # goes out now (the plant and the host learn the state from it). The run's step and
            # the LED wait a tick: with them a production cycle's first tick took 4.01 ms of the
            # 4 ms period on the RP2040.
            return
        run = self.production
        if run is not None and run.on:
            run.step(self, now)
        self._led(now, busy)

    def feed_watchdog(self):
        # Only in a tick that did its work (module comment); a no-op anywhere else (the boot).
        if self.tick_ok:
            self.hal.wdt_feed()

    def planning(self):
        # Between two plans of a search's planning at rest, inside a tick that has read its
        # inputs and stepped its machine: that work is being done, the loop is not hung.
        self.hal.wdt_feed()

    def planned(self):
        # A search's plan done: collected, without filling the low holes (_past_the_holes): the
        # machine waits PLAN_WAIT_MS for a plan on every engine, and on the chip the filling made
        # the planning longer than that (its next probe 16 ms later than the host simulator's).
        self.hal.wdt_feed()
        self._collect(False)

    @micropython.native
    def _led(self, now, busy):
        m = self.m
        if m.fault == F_ESTOP or m.inp.estop:
            mode = LED_ESTOP
        elif m.fault:
            mode = LED_FAULT
        elif self.production is not None and self.production.loud:
            mode = LED_STOPPED       # a run stopped on its own: loud until the next job or run
        elif busy:
            mode = LED_BUSY
        else:
            mode = LED_IDLE
        self.led.update(now, mode)

    # ---- link ----

    def _send(self, frame):
        if frame is not None:
            self.tx_bytes += len(frame)
            self.hal.console_write(frame)

    @micropython.native
    def _link(self, now):
        if self.hil is None and not self.teleop.on:
            r = self.reader.poll(self.console_read, self.rx_per_tick, _CTRL_C)
            if r != cmdparse.LINE_NONE:
                self._on_line(r)
        else:
            # HIL: a few whole lines per tick, so sensor frames never queue up behind the loop
            # (real time uses the newest one).
            # Teleop likewise: a backlog of setpoints drains, only the newest one is offered.
            for _ in range(_HIL_LINES):
                r = self.reader.poll(self.console_read, _HIL_RX, _CTRL_C)
                if r == cmdparse.LINE_NONE:
                    break
                self._on_line(r)
        if self.teleop.pend_rid:
            self._teleop.offer_pending(self)
        # One heavy piece of link work per tick at most (on the RP2040 a TELEMETRY part, a log
        # record or a frame costs 0.2-0.5 ms, and a transition's tick is already the longest):
        # a piece of event forwarding if one is due, else a part of the TELEMETRY frame.
        if self.ev_sent != self.m.events.next_seq - 1:
            self._forward_events()
            busy_link = 1
        else:
            busy_link = 0
        if self.teleop.on or self.teleop.ended:
            self._teleop.report(self, now)
        if busy_link:
            return
        tel = self.tel
        if tel.part:
            self._send(tel.step(self))       # the frame is built over three ticks
        else:
            hz = self.telemetry_hz
            if hz and ms_diff(now, self.next_telemetry) >= 0:
                self.next_telemetry = ms_add(now, 1000 // hz)
                tel.step(self)

    def _forward_events(self):
        # The oldest unforwarded event, `events_per_tick` pieces of it per tick: its EVENT frame
        # (in the tick that made it, when nothing is queued: the host learns of a transition
        # as soon as before), then its flash-log record and counters, then, for a fault, its
        # FAULT frame.
        ev = self.m.events
        if self.ev_sent < ev.oldest_seq() - 1:
            self.ev_lost += ev.oldest_seq() - 1 - self.ev_sent
            self.ev_sent = ev.oldest_seq() - 1
            self.ev_piece = 0
        n = self.events_per_tick
        last = ev.next_seq - 1
        while self.ev_sent < last and n > 0:
            n -= 1
            self._forward_piece(ev)

    def _forward_piece(self, ev):
        seq = self.ev_sent + 1
        piece = self.ev_piece
        e = self.rec
        if piece == 0:
            ev.copy(seq, e)
            w = self.fw
            w.begin(link.T_EVENT)
            w.add_ints(e, 12)
            self._send(w.finish())
            # a TELEMETRY frame half built took its state before this event: start it again
            # (as soon as the link is free, so no frame is lost), or it would arrive after the
            # event and say the old state (a placed job "running")
            if self.tel.part:
                self.tel.part = 0
                self.next_telemetry = self.now_ms
            self.ev_piece = 1
        elif piece == 1:
            self._log_event(e, seq)
            if e[2] == K_FAULT:
                self.ev_piece = 2
            else:
                self.ev_piece = 0
                self.ev_sent = seq
        else:
            self._send(self._fault_frame(e))
            self.ev_piece = 0
            self.ev_sent = seq

    def _log_event(self, e, seq):
        # The event's flash-log record (RAM ring; flash at rest) and counters.
        kind = e[2]
        log = self.log
        again = seq == self.boot_seen_seq      # an interruption an earlier boot logged already
        if kind == K_FAULT:
            if not again:
                log.append(flashlog.R_FAULT, e)
                log.count(flashlog.C_FAULTS)
                if e[3] != IDLE:
                    log.count(flashlog.C_CYCLES_FAILED)
                    if self.cycle_open and self.persist:
                        # counted now: a reset before the fault is cleared must not count the
                        # cycle again at the next boot (the marker says so once at rest)
                        self.marker_counted = 0
        elif kind == K_TRANSITION:
            log.append(flashlog.R_TRANSITION, e)
            if e[4] == IDLE and e[5] == R_PLACED:
                log.count(flashlog.C_CYCLES_OK)
        else:
            log.append(flashlog.R_NOTE, e)     # a rescue's PLACED: the cycle was counted as failed

    def _fault_frame(self, e):
        # FAULT: t_ms, fault, state it happened in, attempt, reason, faults_total
        w = self.fw
        w.begin(link.T_FAULT)
        w.add(e[1])
        w.add(e[5])
        w.add(e[3])
        w.add(e[6] & 255)
        w.add(e[5])
        w.add(self.log.counters[flashlog.C_FAULTS])
        return w.finish()

    def _on_line(self, r):
        if r == cmdparse.LINE_OVERLONG:
            self._send(cmdparse.error_reply(0, link.E_TOO_LONG))
            return
        self.rx_lines += 1
        line = self.reader.line()
        err, ftype, rid, args = cmdparse.parse_line(line)
        if err == link.E_UNKNOWN_TYPE and ftype == link.T_RUN:
            # RUN's schema loads with the first RUN (_load_run), then the line is read again
            if self._load_run(link.request_id_of(line)) is None:
                return
            err, ftype, rid, args = cmdparse.parse_line(line)
        if err != link.OK:
            if cmdparse.needs_reply(err):
                self._send(cmdparse.error_reply(rid, err))
            return
        try:
            self._handle(ftype, rid, args)
        except Exception as e:  # a handler bug must not stop the loop; KeyboardInterrupt passes
            self._reply(rid, link.E_INTERNAL, (type(e).__name__[:link.MAX_TOKEN_LEN],))

    def _reply(self, rid, code, payload=()):
        f = link.reply(rid, code, payload)
        if f is None:                 # a payload the link cannot carry: say so, not silence
            f = link.reply(rid, code)
        self._send(f)

    def _handle(self, ftype, rid, args):
        if ftype == link.T_PING:
            self._reply(rid, link.OK, (self.board_id(), FW_VERSION))
        elif ftype == link.T_HIL_SENSORS:
            self._hil_sensors(rid, args)
        elif ftype == link.T_HIL_MODE:
            self._hil_mode(rid, args[0])
        elif ftype == link.T_STATUS:
            self._send(telemetry.frame(self))
            self._reply(rid, link.OK, self.status_payload())
        elif ftype == link.T_JOB:
            self._job(rid, args)
        elif ftype == link.T_ABORT:
            self._abort(rid)
        elif ftype == link.T_CLEAR_FAULT:
            self._clear_fault(rid)
        elif ftype == link.T_LOG_SINCE:
            self._log_since(rid, args[0])
        elif ftype == link.T_CONFIG_GET:
            self._config_get(rid, args[0])
        elif ftype == link.T_CONFIG_SET:
            self._config_set(rid, args[0], args[1])
        elif ftype == link.T_CALIBRATE:
            self._calibrate(rid, args[0])
        elif ftype == link.T_SETPOINT or ftype == link.T_TELEOP:
            self._teleop_request(ftype, rid, args)
        elif ftype == link.T_REJECTS:
            rj = self.settings.rejected      # count, items kept, then item `index` if kept
            item = rj.items[args[0]] if args[0] < len(rj.items) else ()
            self._reply(rid, link.OK, (rj.count, len(rj.items)) + item)
        elif ftype == link.T_RESCUE:
            self._rescue(rid, args)
        elif ftype == link.T_RUN or ftype == link.T_RUN_STOP or ftype == link.T_RUN_STATUS:
            self._run_frame(ftype, rid, args)
        elif ftype == link.T_ARM_READ:
            self._arm_read(rid, args[0])
        else:
            self._reply(rid, link.E_UNSUPPORTED)

    def status_payload(self):
        m = self.m
        return (m.state, m.fault, self.activity(), self.log.counters[flashlog.C_BOOTS],
                self.log.last_seq, self.stats.worst_step_us, self.boot_action,
                self.settings.rejected.count, m.max_attempts if m.busy() else 0)

    def activity(self):
        # What keeps the arm busy (link.BUSY_*), so a host taking the board over can say what it
        # would interrupt. At rest (BUSY_NONE) means nothing runs and no servo is moving.
        if self.m.busy() or self.job_waiting is not None or self.running():
            return link.BUSY_JOB
        if self.rescue_op is not None:
            return link.BUSY_RESCUE
        if self.cal is not None:
            return link.BUSY_CALIBRATION
        if self.teleop.on:
            return link.BUSY_TELEOP
        if self.motion.active:
            return link.BUSY_MOVING
        for sv in self.servos:
            if sv.vel:
                return link.BUSY_MOVING
        return link.BUSY_NONE

    def conditions(self):
        # TELEMETRY's conditions (link.COND_*): what keeps jobs refused or makes a reset unsafe
        # besides the state and the fault, so a host can name it and the command that leaves it.
        # Allocates nothing (it is built in a telemetry part's tick, alone); bytecode, not native:
        # native code would take a kilobyte of the chip's heap for a few ints a frame.
        c = 0
        if self.m.holding:
            c |= link.COND_HOLDING
        if self.arm_off:
            c |= link.COND_ARM_OFF
            if not self.arm_pose_known:
                c |= link.COND_POSE_UNKNOWN
        elif not self.settled():
            c |= link.COND_AWAY
        else:
            j = self.motion.joints
            r = self.rest_q
            if j[0] != r[0] or j[1] != r[1] or j[2] != r[2] or j[3] != r[3]:
                c |= link.COND_AWAY          # a reset would start the arm elsewhere
        if not self.servos[4].enabled:
            c |= link.COND_GRIPPER_OFF
        tm = self.teleop
        if tm.on:
            c |= link.COND_TELEOP_HELD if tm.mode == self._teleop.HELD else link.COND_TELEOP
        if self.cycle_open:
            c |= link.COND_CYCLE_OPEN
        e = self.estop
        if e.closed_streak < e.reset_reads:
            c |= link.COND_ESTOP_OPEN
        if self.hil is not None:
            c |= link.COND_HIL
        if self.arm_error:
            c |= link.COND_ARM_INVALID
        return c

    def running(self):
        return self.production is not None and self.production.on

    def _job(self, rid, a):
        if self.running():
            self._reply(rid, link.E_BUSY, ("run",))     # the run picks its own parts
            return
        job = Job(a[0:4], a[4:8], a[8], a[9] if len(a) > 9 else 0)
        # A refused job changes nothing: what refuses any job is asked before anything is set
        # up; the job's approach height (JOB's last field; 0: the board's own) is set in RAM,
        # put back if the job is refused, and saved with the job's marker once the arm settles.
        r = self.job_refusal()
        was = self.cfg.approach_height_um
        if not r and len(a) > 10 and a[10] and a[10] != was:
            try:
                self.settings.set(_APPROACH, a[10])
            except ValueError:
                self._reply(rid, link.E_BAD_VALUE, (_APPROACH,))
                return
            self.apply_settings()
        if not r:
            r = self._start_job(job)
        if self.cfg.approach_height_um != was:
            if r == M_OK:
                if self.persist:         # (a HIL job's height stays in RAM, as a calibration)
                    self.settings_unsaved = 1
            else:
                self.settings.set(_APPROACH, was)
                self.apply_settings()
        self._start_reply(rid, r)

    def _start_reply(self, rid, r):
        # JOB's and RUN's answer from the controller's start_job (docs/protocol.md)
        if r == M_OK:
            self._reply(rid, link.OK)
        elif r == M_BUSY:
            self._reply(rid, link.E_BUSY)
        elif r == M_FAULTED:
            self._reply(rid, link.E_FAULTED, self._fault_payload())
        elif r == M_ESTOP:
            self._reply(rid, link.E_STATE, ("estop",))
        elif r == M_HOLDING:
            self._reply(rid, link.E_STATE, ("holding",))    # RESCUE place or release first
        elif r == M_ARM_OFF:
            self._reply(rid, link.E_STATE, ("arm_unpowered",))  # RESCUE first
        elif r == E_ARM_INVALID:
            self._reply(rid, link.E_STATE, ("arm_invalid",))    # deploy a valid /arm.json
        elif r == E_PAYLOAD:
            # the servo that cannot hold the description's part: its joint, the torque it needs
            # and its stall torque (mN m), the part's mass (g) (host/link/answers.py words it)
            w = self.payload_refused
            self._reply(rid, link.E_BAD_VALUE, ("payload", self.arm.servo_names[w[0]], int(w[1] * 1000),
                                                int(w[2] * 1000), int(self.arm.bench["part_g"])))
        else:
            self._reply(rid, link.E_BAD_VALUE, (("unreachable" if r == 3 else "bad_job"),))

    def _start_job(self, job):
        # -> the controller's start_job answer. A JOB request and each cycle of a production
        # run (production.py) start here.
        checked = 0
        if not self.job_refusal():
            # The payload check first (it loads its module for the moment): its garbage is
            # collected with the plans', below them, not left among them.
            self.payload_refused = self.payload_check(job)
            if self.payload_refused:
                return E_PAYLOAD
            checked = 1
        if not self.busy():
            # At rest, before anything moves: every move of every attempt is planned ahead
            # (motion.py: a straight move is four or more loop periods of IK on an RP2040; a
            # retry planned when it comes overran the loop), the watchdog fed between plans as
            # between flash writes; then the heap is collected so that the moves never wait for
            # a collection, and the loop's figures start afresh. Collected after each plan too:
            # the plans then sit together and leave the heap's big block whole (_planned_one).
            self.stats.begin_cycle()
            self.motion.prepare(job_moves(job, self.cfg, job.max_attempts or self.cfg.max_attempts,
                                          self.m.lift_up_um), self._planned_one)
            self._collect()
        r = self.start_job(job, checked)
        if r == M_OK:
            self.cycle_open = 1
            self.marker_counted = 1
        return r

    def _teleop_request(self, ftype, rid, args):
        # TELEOP and SETPOINT: teleop_mode.py loads with the first one (heap on the chip); a
        # board never in teleop answers TELEOP off and stray setpoints without loading it.
        if self._teleop is None:
            if ftype == link.T_SETPOINT:
                self._reply(rid, link.E_STATE, ("not_teleop", args[0]))
                return
            if not args[0]:
                self._reply(rid, link.E_STATE, ("not_teleop",))
                return
            try:
                self._teleop = self.load_teleop()
            except MemoryError:
                self._reply(rid, link.E_BUSY, ("heap",))
                return
        if ftype == link.T_SETPOINT:
            self._teleop.handle_setpoint(self, rid, args)
        else:
            self._teleop.handle_mode(self, rid, args[0])

    def _run_frame(self, ftype, rid, args):
        # RUN, RUN_STOP, RUN_STATUS (production.py, loaded by the first RUN: heap on the chip)
        if ftype == link.T_RUN:
            production = self._load_run(rid)
            if production is None:
                return
        elif self.production is None:
            if ftype == link.T_RUN_STATUS:
                self._reply(rid, link.OK, (0,))      # no run since boot
            else:
                self._reply(rid, link.E_STATE, ("no_run",))
            return
        else:
            from . import production
        production.request(self, ftype, rid, args)

    def _load_run(self, rid):
        # -> production.py with RUN's schema (link.load_run_frame), loaded by the first RUN; or
        # None, the RUN answered. Only at rest: anything running refuses a RUN before the load,
        # which takes a tick longer than the period, counted as maintenance like a collection.
        if self.running() or self.busy() or self.rescue_op is not None or self.cal is not None:
            self._reply(rid, link.E_BUSY)
            return None
        try:
            link.load_run_frame()
            from . import production
        except MemoryError:
            self._reply(rid, link.E_BUSY, ("heap",))
            return None
        self.flash_tick = 1
        return production

    def _fault_payload(self):
        # E_FAULTED: the latched fault, the state it latched in, the attempt (docs/protocol.md)
        m = self.m
        return (m.fault, m.fault_state, m.attempt)

    def _abort(self, rid):
        if self.cal is not None:
            self.cal.cancel(self)
            self.cal = None
            self._reply(rid, link.OK)
        elif self.abort_job():
            self._reply(rid, link.OK)
        elif self.teleop.on:
            self.teleop.leave(self._teleop.WHY_ABORT)
            self._reply(rid, link.OK)
        else:
            self._reply(rid, link.E_STATE)

    def _clear_fault(self, rid):
        self.release_estop()
        if not self.m.fault:
            self._reply(rid, link.E_STATE, ("no_fault",))
            return
        if self.m.clear_fault() == M_ESTOP:
            self._reply(rid, link.E_STATE, ("estop",))
            return
        self._reply(rid, link.OK)      # the marker goes once nothing is held and the arm is on

    def _rescue(self, rid, a):
        if self.hil is not None:          # the real arm is not the one the host simulates
            self._reply(rid, link.E_STATE, ("hil",))
            return
        if len(a) not in (2, 6) or (a[1] == link.NEAR_GIVEN) != (len(a) == 6):
            self._reply(rid, link.E_BAD_VALUE, ("pose",))   # x, y, z and pitch, with NEAR_GIVEN only
            return
        err = self.rescue(a[0], a[1], self.now_ms, a[2:6] if len(a) == 6 else None)
        if err:
            self._reply(rid, err[0], err[1])
        else:
            self._reply(rid, link.OK)      # progress follows as EVENTs (RESCUE, PLACED/RESTED/fault)

    def _log_since(self, rid, after):
        if self.ev_piece == 1:
            self._forward_piece(self.m.events)   # an event already sent as a frame is in the log
        if not self.busy() and self.settled():
            self._flash_commit()         # include what is still in RAM, if at rest
        n = 0
        last = after
        for seq, rtype, r in self.log.read_since(after, LOG_BATCH):
            self._send(link.log_record(seq, rtype, r))
            n += 1
            last = seq
        # + the oldest seq the log still holds and the boot count: a host that stored up to a
        # record rotated away since tells a rotated log from a restarted one by them
        self._reply(rid, link.OK, (n, last, 1 if self.log.last_seq > last else 0, self.log.first_seq,
                                   self.log.counters[flashlog.C_BOOTS]))

    def _arm_read(self, rid, offset):
        # ARM_READ: arm_read.py, loaded for the request only
        from . import arm_read
        try:
            arm_read.answer(self, rid, offset)
        finally:
            arm_read = None
            arm_file.drop(arm_file.FIRMWARE, "arm_read")

    def _config_get(self, rid, key):
        if not self.settings.is_key(key):
            self._reply(rid, link.E_UNKNOWN_KEY, (key,))
            return
        self._reply(rid, link.OK, (key, self.settings.get(key)))

    def _config_set(self, rid, key, value):
        if not self.settings.is_key(key):
            self._reply(rid, link.E_UNKNOWN_KEY, (key,))
            return
        if self.busy() or not self.settled():
            self._reply(rid, link.E_BUSY)   # persisting writes flash: only at rest, settled
            return
        try:
            self.settings.set(key, value)
        except ValueError:
            self._reply(rid, link.E_BAD_VALUE, (key,))
            return
        self.apply_settings()
        self._flash_begin()
        if not self.settings.save(self.root + settings_mod.PATH):
            self._reply(rid, link.E_INTERNAL, ("flash_refused",))   # in force until a reboot only
            return
        self._reply(rid, link.OK, (key, self.settings.get(key), self.settings.needs_reboot(key)))

    def _calibrate(self, rid, target):
        if self.hil is not None:          # it would persist a calibration of the simulated sensors
            self._reply(rid, link.E_STATE, ("hil",))
            return
        if self.busy():
            self._reply(rid, link.E_BUSY)
            return
        if self.m.fault:
            self._reply(rid, link.E_FAULTED, self._fault_payload())
            return
        err = self.start_calibration(target, rid, self.now_ms)
        if err:
            self._reply(rid, err[0], err[1])

    def calibrated(self, cal, code, payload):
        # The controller has applied (and persisted) the calibration: reply to the request.
        self._reply(cal.rid, code, payload)

    # ---- hardware in the loop (docs/protocol.md HIL_MODE, HIL_SENSORS, HIL_ACT) ----

    def _drivers(self):
        return self.sensors.drivers() + tuple(self.servos)

    def _hil_mode(self, rid, mode):
        if mode == link.HIL_OFF:
            if self.hil is None:
                self._reply(rid, link.E_STATE, ("not_hil",))
                return
            self._hil_leave()
            self._reply(rid, link.OK, (mode,))
            return
        if self.hil is not None:              # switching lockstep <-> real time
            self.hil.mode = mode
            self.hil.got = 0
            self._reply(rid, link.OK, (mode,))
            return
        if self.busy() or self.rescue_op is not None or self.cal is not None:
            self._reply(rid, link.E_BUSY)
            return
        try:
            # loaded at the request that needs it, at rest (module comment: heap on the chip)
            from .hal import hil as hil_hal
        except MemoryError:
            self._reply(rid, link.E_BUSY, ("heap",))
            return
        pins = self.settings.pins()
        mo = self.motion
        self._hil_saved = ([(sv.pos, sv.last_target, sv.pulse, sv.enabled) for sv in self.servos],
                           array("i", mo.joints), mo.jaw_um, self.m.out.jaw_um)
        h = hil_hal.HilPins(pins, mode, [sv.pulse for sv in self.servos])
        self._hil_wait = hil_hal.wait_input
        hal = self.hal
        # Until the first frame: the readings as they are now, e-stop closed, switch and beam idle.
        h.adc[0] = hal.read_u16(pins.adc_pot)
        h.adc[1] = hal.read_u16(pins.adc_current)
        h.adc[2] = hal.read_u16(pins.adc_rail)
        h.levels = link.HIL_PIN_SWITCH | link.HIL_PIN_BEAM
        for d in self._drivers():
            d.hal = h
        self.hil = h
        self.persist = 0          # a simulated arm: no marker, rest pose or calibration on flash
        self._reply(rid, link.OK, (mode,))

    def _hil_leave(self):
        # Back to board_hal. The real PWM was never written under HIL, so the arm still stands
        # where HIL began: servos, planner and jaw command are put back there (nothing moves).
        m = self.m
        if self.cal is not None:
            self.cal.cancel(self)
            self.cal = None
        if m.busy():
            m.abort()                     # latched ABORTED: a human clears it
        saved, joints, jaw, jaw_cmd = self._hil_saved
        for d in self._drivers():
            d.hal = self.hal
        for i in range(5):
            sv = self.servos[i]
            sv.pos, sv.last_target, sv.pulse, sv.enabled = saved[i]
            sv.vel = 0
            sv.rem = 0
        mo = self.motion
        mo.joints[:] = joints
        mo.jaw_um = jaw
        mo.active = 0
        mo.seq = m.out.move_seq
        m.out.jaw_um = jaw_cmd
        self.pot.value = -1               # filters re-seed from the real sensors
        self.current.filt = -1
        self.hil = None
        self._hil_saved = None
        self.persist = 1
        now = self.hal.ticks_ms()
        self.last_ms = now
        self.next_telemetry = now
        self.last_commit = now
        mo.last_tick = now

    def _hil_sensors(self, rid, args):
        h = self.hil
        if h is None:
            self._reply(rid, link.E_STATE, ("not_hil",))
            return
        if h.got == 0 and h.mode == link.HIL_LOCKSTEP:
            # Virtual time starts here: the loop's own timers restart on the frame's clock.
            t = args[0]
            p = self.cfg.loop_period_ms
            self.last_ms = ms_add(t, -p)
            self.motion.last_tick = self.last_ms
            self.next_telemetry = t
            self.last_commit = t
        h.sensor_id = rid
        h.take(args)

    def _send_act(self, now):
        # HIL_ACT: the pulses this tick wrote, on the sensor frame it stepped on.
        h = self.hil
        h.fresh = 0
        h.ticks += 1
        p = h.pulses
        w = self.fw
        st = self.stats
        w.begin(link.T_HIL_ACT)
        w.add(h.sensor_id)
        w.add(h.ticks & _US_MASK)
        w.add(now)
        w.add(p[0])
        w.add(p[1])
        w.add(p[2])
        w.add(p[3])
        w.add(p[4])
        w.add(self.m.state)
        w.add(self.m.fault)
        w.add(st.last_step_us & _US_MASK)
        w.add(st.mean_period_us() & _US_MASK)
        self._send(w.finish())

    # ---- at rest: the only place flash is written (besides request handlers at rest) ----

    def _flash_begin(self):
        # Every flash write at rest starts here: this tick's work is done, so the write gets the
        # watchdog's whole timeout.
        self.flash_tick = 1
        self.feed_watchdog()

    def write_marker(self, job):
        # A job's marker is written once the arm settles: in the link's handler or early in a
        # tick, after a tick that completed. Either way the write gets the whole timeout.
        self.hal.wdt_feed()
        return Controller.write_marker(self, job)

    def save_rest(self):
        self._flash_begin()
        Controller.save_rest(self)

    def clear_marker(self):
        self._flash_begin()
        Controller.clear_marker(self)

    def _planned_one(self):
        # Between two of a job's plans: the watchdog fed, and the plan's garbage collected before
        # the next one is made, so the next plan's garbage fills the same holes and the plans
        # kept pile up together above them, instead of lying strewn over the heap's big block
        # with garbage between them (measured on the emulated RP2040, docs/rp2040.md). Copying
        # the plans down after the planning (firmware/repack.py, as the Arm) packs them too,
        # but into the small low holes the loop's own small allocations find first, and a tick
        # then searched the heap long enough to overrun the period.
        self.feed_watchdog()
        gc.collect()

    def _flash_commit(self):
        if self.log.pending or self.log._counters_dirty:
            self._flash_begin()
            self.log.commit()
        self.last_commit = self.now_ms

    def _collect(self, fill=True):
        # Garbage collection at rest, timed (the tick counts as maintenance, like a flash write,
        # and gets the watchdog's whole timeout the same way); then, unless fill is false, the
        # heap's low holes filled (_past_the_holes).
        hal = self.hal
        self.feed_watchdog()
        t0 = hal.cpu_us()
        gc.collect()
        if fill:
            _past_the_holes()
        self.stats.gc_done(hal.ticks_diff(hal.cpu_us(), t0))
        self.flash_tick = 1
        self.next_gc = ms_add(self.now_ms, GC_REST_MS)

    def _at_rest(self, now):
        # Not busy; at most one flash action or collection per tick, and only once the arm has
        # settled.
        if not self.settled():
            return
        if ms_diff(now, self.next_gc) >= 0:
            self._collect()
            return
        m = self.m
        if self.cycle_open:
            if not m.fault and not m.holding and not self.arm_off:
                self._end_cycle()          # over: rest pose, marker off, log
                return
            if not self.marker_counted:
                # This boot counted the interruption: commit that, then say so on the marker
                # (a second reset before the operator acts must not count it again).
                self._flash_commit()
                self.flash_tick = 1
                job = self.known_job()
                rec.write_marker_at(self.root, job, 1)
                self.marker_counted = 1
                return
            if not self.pose_saved and not self.arm_off and self.persist:
                # A fault (or a part still held) ended the cycle: the arm stands frozen here;
                # the next boot may be told so (NEAR_REST). The marker stays.
                self.save_rest()
                self.pose_saved = 1
                self._flash_commit()
                return
        if ms_diff(now, self.last_commit) >= self.settings.board["log_commit_ms"]:
            self._flash_commit()

    def _end_cycle(self):
        self.save_rest()
        self.clear_marker()
        self.cycle_open = 0
        self.pose_saved = 1
        self._flash_commit()

    def shutdown(self):
        # Ctrl-C: a human (or mpremote) takes the REPL. The servos keep their last pulses (an arm
        # gone limp falls, an opened gripper drops the part); the watchdog stops (no loop to
        # watch, and it must not reset the board under the human or a deploy); the e-stop is
        # still honoured: a press freezes every servo where it is (hal guard_estop, docs/safety.md,
        # taking over the board); the log and the pose the arm now holds are saved (allowed:
        # nothing moves any more).
        hal = self.hal
        try:
            hal.wdt_stop()
        except Exception:
            pass
        try:
            hal.guard_estop()
        except Exception as e:  # say so at the REPL: the human must know the e-stop is not guarded
            print("surepick: the e-stop is NOT guarded at the REPL:", repr(e))
        try:
            if self.hil is not None:
                self._hil_leave()       # the real arm never moved: its pose is the saved one
            if self.motion is not None:
                self._forward_events()
                self.save_rest()
            self.log.commit()
        except Exception:
            pass


current = None   # the App main() runs: still there at the REPL after Ctrl-C, for a look at it


def main(hal, root=""):
    global current
    gc.collect()      # the imports' garbage: the App's objects fill its holes, not fresh heap
    current = App(hal, root)
    current.run()
