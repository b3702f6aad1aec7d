# Host side of the virtual board's lockstep exchange: owns one sim.plant.Plant (the MuJoCo arm,
# built from a sim.scenarios scenario and seed) and serves the virtual HAL
# (tools/vhal/board_hal.py) over a loopback TCP socket. It is the virtual board's
# `plant_service` hook: start() -> (host, port), stop().
#
# Exchange, one message each way per control tick (little-endian):
#   board -> plant  14 bytes  'S' u16 advance_ms, 5 x u16 pulse_us (0 = PWM off, 0xFFFF = keep),
#                             u8 the firmware machine's state (0xFF = not known yet)
#   plant -> board  12 bytes  'R' u32 now_ms, u16 pot, u16 current, u16 rail, u8 flags:
#                             bit0 e-stop GP13, bit1 switch GP14, bit2 beam GP15 (pin levels),
#                             bit7 HOLD: stop virtual time until a whole console line has arrived
# One exchange = the pulses applied, the plant advanced exactly advance_ms (0: just read), the
# board's state noted, the scenario's injections due by then applied, every sensor read: what the
# firmware sees on its next tick. The order is sim.runner's (inject at t, then the tick that reads
# at t), so state triggers fire at the same plant time as in the host simulator. Virtual time is
# the plant's clock: a run depends on the scenario and seed only, never on wall-clock speed.
#
# The plant survives board resets (it is the physical world): a new connection just continues.
# A brownout (scenario) or a scheduled power cut stops the world at that exchange: no reply, the
# board's supervisor is told (on_controller_reset) and cuts the interpreter's power; the next
# boot finds the servos limp for the time the controller was down.
#
# Recording (host/vboard_run.py, the virtual-board run record): after record(), every exchange
# is kept as one tuple of ints, EXCHANGE_FIELDS: what the board sent and what it was answered.
# It changes nothing in the exchange itself.
import socket
import struct
import threading

from surepick.sim import scenarios
from surepick.sim.judge import Judge
from surepick.sim.plant import (ADC_CURRENT, ADC_POT, ADC_RAIL, PIN_BEAM, PIN_ESTOP, PIN_SWITCH, Plant,
                         N_SERVOS)
from surepick.engines.inproc import BOOT_MS, SAMPLE_MS
from surepick.shared_fsm import states
from surepick.shared_fsm.config import Config

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


class PlantService:
    def __init__(self, scenario="nominal", seed=0, overrides=None, plant_params=None, cycle=0,
                 host="127.0.0.1", port=0):
        self.scenario_name = scenario or "nominal"
        self.seed = int(seed or 0)
        sc = scenarios.get(self.scenario_name)
        self.values = sc.resolve(overrides)
        self.setup = sc.setup(self.values, scenarios.rng_for(self.seed, cycle))
        s = self.setup
        self.plant = Plant(part=s["part"], params=plant_params, seed=self.seed * 1000 + cycle,
                           part_pose=s["part_pose"], obstacle=s["obstacle"], debris=s["debris"])
        self._pending = list(s["injections"])      # (trigger, fault, kwargs) from the scenario
        self._queued = []                          # inject() calls from other threads
        self._cuts = []                            # plant ms of scheduled power cuts
        self._holds = []                           # plant ms where time waits for a console line
        self._state = None
        self._state_since = 0
        self._limp_ms = 0
        self.host = host
        self.port = port
        self.lock = threading.Lock()
        self.exchanges = 0
        self.connections = 0
        self.resets = []           # (plant ms, "brownout" | "power_cut") of controller resets
        # callable(): reset the controller now (the virtual board's power_cut); called from a
        # thread of its own. on_brownout is the older name of the same hook.
        self.on_controller_reset = None
        self.on_brownout = None
        self.holding = threading.Event()           # set while virtual time waits for the host
        cfg = Config()
        self.judge = Judge(cfg.approach_height_um / 1000.0)
        self._next_sample = 0
        self._last_grip_pulse = None
        self._server = None
        self._conn = None
        self._thread = None
        self._stopping = False
        self._pulses = [KEEP] * N_SERVOS
        self.exchange_log = None   # a list of EXCHANGE_FIELDS tuples once record() was called

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
        s = self.setup
        width = s["part_width_mm"]
        pick = s["pick_mm"] or scenarios.pick_pose_mm(s["part"], width)
        place = scenarios.place_pose_mm(s["part"])
        um = lambda p: (int(round(p[0] * 1000)), int(round(p[1] * 1000)), int(round(p[2] * 1000)),
                        int(round(p[3] * 1000)))
        return um(pick), um(place), int(round(width * 1000))

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

    def wait_holding(self, timeout=None):
        return self.holding.wait(timeout)

    def notify_state(self, state):
        # The firmware's machine state (a name or a number), for the scenario's "state" triggers.
        # The virtual HAL sends it with every exchange; this is for other drivers of the plant.
        with self.lock:
            self._note_state(state)

    def board_reset(self, down_ms=BOOT_MS):
        # The controller was reset (power cut, brownout, watchdog): its PWM stops, the servos go
        # limp for down_ms of plant time before the next boot talks to us.
        with self.lock:
            self._limp_ms = int(down_ms)

    def truth(self):
        with self.lock:
            return self.plant.truth()

    def verdict(self):
        # sim/judge.py's verdict on what the plant went through (sampled every SAMPLE_MS).
        with self.lock:
            return self.judge.verdict()

    @property
    def now_ms(self):
        return self.plant.now_ms

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
                self._session(conn)
            except _Cut:
                self._wait_closed(conn)
            except OSError:
                pass
            finally:
                conn.close()

    def _session(self, conn):
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
        with self.lock:
            self.holding.clear()
            plant = self.plant
            if self._limp_ms:
                plant.set_pulses([0] * N_SERVOS)           # controller in reset: no PWM
                plant.advance(self._limp_ms)
                self._pulses = [0] * N_SERVOS
                self._limp_ms = 0
                self._sample_judge()
            changed = False
            for i in range(N_SERVOS):
                if pulses[i] != KEEP and pulses[i] != self._pulses[i]:
                    self._pulses[i] = pulses[i]
                    changed = True
            if changed:
                plant.set_pulses(self._merged_pulses())
                self._watch_release()
            if advance_ms:
                plant.advance(advance_ms)
            self.exchanges += 1
            if state != NO_STATE:
                self._note_state(state)
            self._apply_injections()
            self._sample_judge()
            flags = 0
            if self._holds and plant.now_ms >= self._holds[0]:
                self._holds.pop(0)
                flags = HOLD
                self.holding.set()
            flags |= ((1 if plant.read_pin(PIN_ESTOP) else 0)
                      | (2 if plant.read_pin(PIN_SWITCH) else 0)
                      | (4 if plant.read_pin(PIN_BEAM) else 0))
            now = plant.now_ms & 0xFFFFFFFF
            pot = _u16(plant.read_u16(ADC_POT))
            cur = _u16(plant.read_u16(ADC_CURRENT))
            rail = _u16(plant.read_u16(ADC_RAIL))
            if self.exchange_log is not None:
                self.exchange_log.append((self.connections, advance_ms) + tuple(pulses)
                                         + (state, now, pot, cur, rail, flags))
            return REPLY.pack(0x52, now, pot, cur, rail, flags)

    def _note_state(self, state):
        if isinstance(state, int):
            state = states.name(state)
        if state != self._state:
            self._state = state
            self._state_since = self.plant.now_ms

    def _merged_pulses(self):
        # Channels the firmware never set keep whatever the plant's servos hold now.
        cur = list(self.plant.servos.pulses)
        return [cur[i] if self._pulses[i] == KEEP else self._pulses[i] for i in range(N_SERVOS)]

    def _apply_injections(self):
        plant = self.plant
        for name, kw in self._queued:
            plant.inject(name, **kw)
        self._queued = []
        t = plant.now_ms
        for item in list(self._pending):
            trigger, fault, kw = item
            if trigger[0] == "at":
                fire = t >= trigger[1]
            else:
                fire = self._state == trigger[1] and t - self._state_since >= trigger[2]
            if fire:
                self._pending.remove(item)
                plant.inject(fault, **kw)
                if fault == "brownout":
                    # The controller shares the rail: it resets now and boots when the rail is
                    # back, BOOT_MS later (sim.runner's model of the same brownout).
                    self._controller_reset("brownout", int(kw.get("duration_ms", 100)) + BOOT_MS)
        if self._cuts and t >= self._cuts[0]:
            self._cuts.pop(0)
            self._controller_reset("power_cut", BOOT_MS)

    def _controller_reset(self, why, down_ms):
        self.resets.append((self.plant.now_ms, why))
        self._limp_ms = down_ms
        self._state = None
        hook = self.on_controller_reset or self.on_brownout
        if hook is not None:
            threading.Thread(target=hook, name="plant-reset", daemon=True).start()
        raise _Cut(why)

    # ---- the ground-truth judge (sim/judge.py), as sim.runner feeds it ----

    def _sample_judge(self):
        t = self.plant.now_ms
        if t >= self._next_sample:
            self.judge.sample(t, self.plant.truth())
            self._next_sample = t - t % SAMPLE_MS + SAMPLE_MS

    def _watch_release(self):
        # The runner marks the moment the machine opens the jaw to place; here the same moment is
        # the gripper's pulse widening while the board's machine is in PLACE.
        p = self._pulses[4]
        if (self.judge.release_ms is None and self._state == "PLACE" and p != KEEP
                and self._last_grip_pulse is not None and p > self._last_grip_pulse):
            self.judge.release_ms = self.plant.now_ms
        if p != KEEP:
            self._last_grip_pulse = p
