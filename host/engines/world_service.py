# The virtual board's world, served: one sim.world.World (the MuJoCo arm of a scenario and seed,
# its injected faults and its judge) behind the lockstep exchange that the virtual HAL
# (firmware/hal/virtual.py) speaks over a loopback TCP socket. It has no world logic of its own:
# each message is one World.exchange. It is the virtual board's `world_service` hook:
# start() -> (host, port), stop().
#
# Exchange, one message each way per control tick (little-endian):
#   board -> plant  14 bytes  'S' u16 advance_ms, 5 x u16 pulse_us (0 = PWM off, 0xFFFF = keep),
#                             u8 the firmware machine's state (0xFF = not known yet)
#   plant -> board  12 bytes  'R' u32 now_ms, u16 pot, u16 current, u16 rail, u8 flags:
#                             bit0 e-stop GP13, bit1 switch GP14, bit2 beam GP15 (pin levels),
#                             bit7 HOLD: stop virtual time until a whole console line has arrived
# Virtual time is the world's clock: a run depends on the scenario and seed only, never on
# wall-clock speed. The board's loop period is what it asks the plant to advance by: the service
# knows it from the exchanges, never from a config of its own.
#
# The world survives board resets (it is the physical world): a new connection just continues.
# A brownout (scenario) or a scheduled power cut stops the world at that exchange: no reply, the
# board's supervisor is told (on_controller_reset) and cuts the interpreter's power; the next
# boot finds the servos limp for the time the controller was down.
#
# Recording (engines/vboard.py, the virtual-board run record): after record(), every exchange
# is kept as one tuple of ints, EXCHANGE_FIELDS: what the board sent and what it was answered.
import socket
import struct
import threading
import time

from surepick.shared_fsm.states import IDLE
from surepick.sim.plant import N_SERVOS
from surepick.sim.world import World

REQUEST = struct.Struct("<BH5HB")
REPLY = struct.Struct("<BIHHHB")
assert REQUEST.size == 14 and REPLY.size == 12
KEEP = 0xFFFF
NO_STATE = 0xFF
HOLD = 0x80
# One recorded exchange: the connection it came on (1 = first boot, +1 per controller reset),
# the request (advance, the five pulse fields as sent, KEEP included, the board's state byte)
# and the reply (plant clock, pot, current, rail counts, flags as sent, HOLD included).
EXCHANGE_FIELDS = ("conn", "advance_ms", "p0", "p1", "p2", "p3", "p4", "state", "now_ms", "pot",
                   "current", "rail", "flags")


def _u16(v):
    v = int(v)
    return 0 if v < 0 else (65535 if v > 65535 else v)


class _Cut(Exception):
    # The controller lost power at this exchange: it gets no reply.
    pass


class WorldService:
    # cfg: the machine Config the board runs with (the judge's lift height), None for the defaults.
    # arm: the arm description the world is built from (an Arm; None: the reference arm). The
    # board must boot with the same one as its /arm.json (engines/vboard.py writes it there).
    def __init__(self, scenario="nominal", seed=0, overrides=None, plant_params=None, cycle=0,
                 host="127.0.0.1", port=0, realtime=False, cfg=None, arm=None, default_part=None):
        self.scenario_name = scenario or "nominal"
        self.seed = int(seed or 0)
        self.overrides = overrides
        self.plant_params = plant_params
        self.cycle = int(cycle)
        self.cfg = cfg
        self.arm = arm
        self.default_part = default_part           # a part spec for the scenario's usual cube (a stand-in bench's)
        self.world = World(self.scenario_name, overrides, self.seed, self.cycle, plant_params, cfg=cfg, arm=arm,
                           default_part=default_part)
        # The pace of a reset's limp phase: the board's loop period, as its exchanges advance
        # the plant (1 ms, the plant's own step, until one has).
        self.period_ms = 1
        self._queued = []                          # inject() calls from other threads
        self._cuts = []                            # plant ms of scheduled power cuts
        self._holds = []                           # plant ms where time waits for a console line
        self._end_tail_ms = None                   # hold_after_cycle_end(), until the end is seen
        self.end_hold_ms = None                    # where that hold was placed
        self._last_state = NO_STATE
        self._limp_ms = 0
        self.host = host
        self.port = port
        self.lock = threading.Lock()
        self.exchanges = 0
        self.connections = 0
        # callable(): reset the controller now (the virtual board's power_cut); called from a
        # thread of its own.
        self.on_controller_reset = None
        self.holding = threading.Event()           # set while virtual time waits for the host
        self._server = None
        self._conn = None
        self._thread = None
        self._stopping = False
        self._pulses = [KEEP] * N_SERVOS
        self.exchange_log = None   # a list of EXCHANGE_FIELDS tuples once record() was called
        # realtime: virtual time runs no faster than the wall clock, as on a Pico (a person or a
        # second program watching a job sees it at its true pace); the run is the same either way.
        self.realtime = bool(realtime)
        self._pace0 = None         # (wall s, plant ms) of the first paced exchange

    # the world's parts, for callers that look at them
    @property
    def plant(self):
        return self.world.plant

    @property
    def judge(self):
        return self.world.judge

    @property
    def setup(self):
        return self.world.setup

    @property
    def values(self):
        return self.world.values

    @property
    def resets(self):
        # [(plant ms, "brownout" | "power_cut")] of controller resets
        return [(r.t_ms, r.why) for r in self.world.resets]

    def record(self):
        # Keep every exchange from now on (self.exchange_log); returns the list.
        with self.lock:
            if self.exchange_log is None:
                self.exchange_log = []
            return self.exchange_log

    # ---- the hook the virtual board calls ----

    def start(self):
        if self._server is not None:
            return self.address
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((self.host, self.port))
        srv.listen(2)
        self._server = srv
        self.address = srv.getsockname()[:2]
        self._thread = threading.Thread(target=self._serve, name="plant-service", daemon=True)
        self._thread.start()
        return self.address

    def stop(self):
        self._stopping = True
        for s in (self._conn, self._server):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None
        self._conn = None
        self._thread = None

    # ---- things a test or the board supervisor may do (any thread) ----

    def job_um(self):
        # The scenario's job as the operator would send it: (pick, place, width_um), um/mdeg.
        return self.world.job_um()

    def inject(self, name, **kw):
        # Applied at the next exchange, between two control ticks.
        with self.lock:
            self._queued.append((name, kw))

    def power_cut_at(self, t_ms):
        # Cut the controller's power at plant time t_ms (the exchange that reaches it).
        with self.lock:
            self._cuts.append(int(t_ms))
            self._cuts.sort()

    def hold_for_line_at(self, t_ms):
        # At plant time t_ms virtual time stops until the board has a whole console line (the
        # virtual HAL buffers it), so what the host sends then is read at that tick, however
        # slowly it arrives. wait_holding() tells the host when to send.
        with self.lock:
            self._holds.append(int(t_ms))
            self._holds.sort()

    def hold_after_cycle_end(self, tail_ms):
        # Virtual time stops tail_ms after the exchange in which the machine's state came back to
        # IDLE (a cycle's end: placed, or a fault), waiting for a console line. Placed here, in
        # that exchange, so where a run ends is a point of virtual time: a host that set the hold
        # when it saw the end event would set it wherever the board had run on to meanwhile
        # (a slow or busy host: a longer record). end_hold_ms says where it was placed.
        with self.lock:
            self._end_tail_ms = int(tail_ms)

    def wait_holding(self, timeout=None):
        return self.holding.wait(timeout)

    def notify_state(self, state):
        # The firmware's machine state (a name or a number), for the scenario's "state" triggers.
        # The virtual HAL sends it with every exchange; this is for other drivers of the world.
        with self.lock:
            self.world.note_state(state)

    def board_reset(self, down_ms=None):
        # The controller was reset (power cut, watchdog): its PWM stops, the servos go limp for
        # down_ms of plant time before the next boot talks to us.
        from surepick.sim.world import BOOT_MS
        with self.lock:
            self._limp_ms = int(BOOT_MS if down_ms is None else down_ms)

    def reset_world(self):
        """The scenario's next cycle while the board runs on (sim/world.py World.continue_from:
        the part respawned, the arm at home, faults armed again, a fresh judge, the same clock),
        its servos given the pulses the board drives now. RuntimeError while the board's
        machine is busy. Returns the new cycle index."""
        with self.lock:
            new = World(self.scenario_name, self.overrides, self.seed, self.world.cycle + 1,
                        self.plant_params, cfg=self.cfg, arm=self.arm, default_part=self.default_part)
            new.continue_from(self.world)
            self.world = new
            self.cycle = new.cycle
            self._queued = []
            new.plant.set_pulses(self._merged_pulses())
            return new.cycle

    def truth(self):
        with self.lock:
            return self.world.plant.truth()

    def look(self):
        # The bench as a person there sees it (vboard/bench.py).
        from surepick.host.vboard import bench
        with self.lock:
            return bench.look(self.world.plant, self.world.now_ms)

    def verdict(self):
        # sim/judge.py's verdict on what the world went through.
        with self.lock:
            return self.world.verdict()

    @property
    def now_ms(self):
        return self.world.now_ms

    # ---- serving ----

    def _serve(self):
        while not self._stopping:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            old, self._conn = self._conn, conn
            if old is not None:
                old.close()
            self.connections += 1
            try:
                self._serve_connection(conn)
            except _Cut:
                self._wait_closed(conn)
            except OSError:
                pass
            finally:
                conn.close()

    def _serve_connection(self, conn):
        buf = bytearray(REQUEST.size)
        view = memoryview(buf)
        while not self._stopping:
            got = 0
            while got < REQUEST.size:
                n = conn.recv_into(view[got:])
                if not n:
                    return
                got += n
            tag, advance, p0, p1, p2, p3, p4, state = REQUEST.unpack(buf)
            if tag != 0x53:
                return  # not our protocol: drop the connection
            reply = self._exchange(advance, (p0, p1, p2, p3, p4), state)
            conn.sendall(reply)

    def _wait_closed(self, conn):
        # A controller without power says nothing more: swallow whatever it had in flight until
        # its supervisor has killed it (the connection closes), then serve the next boot.
        try:
            while not self._stopping and conn.recv(256):
                pass
        except OSError:
            pass

    def _exchange(self, advance_ms, pulses, state=NO_STATE):
        reply = self._exchange_locked(advance_ms, pulses, state)
        if self.realtime:
            self._pace()
        return reply

    def _pace(self):
        now_ms = self.world.plant.now_ms
        if self._pace0 is None:
            self._pace0 = (time.monotonic(), now_ms)
        ahead = self._pace0[0] + (now_ms - self._pace0[1]) / 1000.0 - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)

    def _exchange_locked(self, advance_ms, pulses, state):
        with self.lock:
            self.holding.clear()
            world = self.world
            if advance_ms:
                self.period_ms = advance_ms
            if self._limp_ms:
                world.limp(self._limp_ms, self.period_ms)     # the controller was in reset
                self._pulses = [0] * N_SERVOS
                self._limp_ms = 0
            driven = False
            for i in range(N_SERVOS):
                if pulses[i] != KEEP:
                    self._pulses[i] = pulses[i]
                    driven = True
            reset = world.exchange(self._merged_pulses() if driven else None,
                                   None if state == NO_STATE else state, advance_ms)
            self.exchanges += 1
            if state != NO_STATE:
                if self._end_tail_ms is not None and state == IDLE and self._last_state not in (NO_STATE, IDLE):
                    self.end_hold_ms = world.now_ms + self._end_tail_ms
                    self._holds.append(self.end_hold_ms)
                    self._holds.sort()
                    self._end_tail_ms = None
                self._last_state = state
            for name, kw in self._queued:
                reset = world.inject(name, **kw) or reset
            self._queued = []
            if self._cuts and world.now_ms >= self._cuts[0]:
                self._cuts.pop(0)
                reset = world.power_cut()
            if reset is not None:
                self._controller_reset(reset)
            plant = world.plant
            flags = 0
            if self._holds and plant.now_ms >= self._holds[0]:
                self._holds.pop(0)
                flags = HOLD
                self.holding.set()
            pot, cur, rail, estop, switch, beam = world.read_inputs()
            flags |= (1 if estop else 0) | (2 if switch else 0) | (4 if beam else 0)
            now = plant.now_ms & 0xFFFFFFFF
            pot = _u16(pot)
            cur = _u16(cur)
            rail = _u16(rail)
            if self.exchange_log is not None:
                self.exchange_log.append((self.connections, advance_ms) + tuple(pulses)
                                         + (state, now, pot, cur, rail, flags))
            return REPLY.pack(0x52, now, pot, cur, rail, flags)

    def _merged_pulses(self):
        # Channels the firmware never set keep whatever the world's servos hold now.
        cur = self.world.plant.servos.pulses
        return [cur[i] if self._pulses[i] == KEEP else self._pulses[i] for i in range(N_SERVOS)]

    def _controller_reset(self, reset):
        self._limp_ms = reset.down_ms
        hook = self.on_controller_reset
        if hook is not None:
            threading.Thread(target=hook, name="plant-reset", daemon=True).start()
        raise _Cut(reset.why)
