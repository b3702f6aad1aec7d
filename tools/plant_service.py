# Host side of the virtual board's lockstep exchange: owns one sim.plant.Plant (the MuJoCo arm,
# built from a sim.scenarios scenario and seed) and serves the virtual HAL
# (tools/vhal/board_hal.py) over a loopback TCP socket. It is the virtual board's
# `plant_service` hook: start() -> (host, port), stop().
#
# Exchange, one message each way per control tick (little-endian):
#   board -> plant  13 bytes  'S' u16 advance_ms, 5 x u16 pulse_us (0 = PWM off, 0xFFFF = keep)
#   plant -> board  12 bytes  'R' u32 now_ms, u16 pot, u16 current, u16 rail, u8 pin levels
#                             (bit0 e-stop GP13, bit1 switch GP14, bit2 beam GP15)
# The plant applies the pulses, advances exactly advance_ms (0: just read), then reads every
# sensor: what the firmware sees on its next tick. Virtual time is the plant's clock, so a run
# depends on the scenario and seed only, never on wall-clock speed. The plant survives board
# resets (it is the physical world): a new connection just continues.
import socket
import struct
import threading

from ..sim import scenarios
from ..sim.plant import (ADC_CURRENT, ADC_POT, ADC_RAIL, PIN_BEAM, PIN_ESTOP, PIN_SWITCH, Plant,
                         N_SERVOS)
from ..shared_fsm import states

REQUEST = struct.Struct("<BH5H")
REPLY = struct.Struct("<BIHHHB")
assert REQUEST.size == 13 and REPLY.size == 12
KEEP = 0xFFFF


def _u16(v):
    v = int(v)
    return 0 if v < 0 else (65535 if v > 65535 else v)


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
        self._state = None
        self._state_since = 0
        self._limp_ms = 0
        self.host = host
        self.port = port
        self.lock = threading.Lock()
        self.exchanges = 0
        self.connections = 0
        self.on_brownout = None    # callable(): the virtual board resets the controller
        self._server = None
        self._conn = None
        self._thread = None
        self._stopping = False
        self._pulses = [KEEP] * N_SERVOS

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

    def notify_state(self, state):
        # The firmware's machine state (a name or a number), for the scenario's "state" triggers;
        # whoever watches the board's EVENT frames may call this.
        if isinstance(state, int):
            state = states.name(state)
        with self.lock:
            if state != self._state:
                self._state = state
                self._state_since = self.plant.now_ms

    def board_reset(self, down_ms=250):
        # The controller was reset (power cut, brownout, watchdog): its PWM stops, the servos go
        # limp for down_ms of plant time before the next boot talks to us.
        with self.lock:
            self._limp_ms = int(down_ms)

    def truth(self):
        with self.lock:
            return self.plant.truth()

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
            tag, advance, p0, p1, p2, p3, p4 = REQUEST.unpack(buf)
            if tag != 0x53:
                return  # not our protocol: drop the connection
            reply = self._exchange(advance, (p0, p1, p2, p3, p4))
            conn.sendall(reply)

    def _exchange(self, advance_ms, pulses):
        with self.lock:
            plant = self.plant
            if self._limp_ms:
                plant.set_pulses([0] * N_SERVOS)           # controller in reset: no PWM
                plant.advance(self._limp_ms)
                self._pulses = [0] * N_SERVOS
                self._limp_ms = 0
            changed = False
            for i in range(N_SERVOS):
                if pulses[i] != KEEP and pulses[i] != self._pulses[i]:
                    self._pulses[i] = pulses[i]
                    changed = True
            if changed:
                plant.set_pulses(self._merged_pulses())
            self._apply_injections()
            if advance_ms:
                plant.advance(advance_ms)
            self.exchanges += 1
            bits = ((1 if plant.read_pin(PIN_ESTOP) else 0)
                    | (2 if plant.read_pin(PIN_SWITCH) else 0)
                    | (4 if plant.read_pin(PIN_BEAM) else 0))
            return REPLY.pack(0x52, plant.now_ms & 0xFFFFFFFF, _u16(plant.read_u16(ADC_POT)),
                              _u16(plant.read_u16(ADC_CURRENT)), _u16(plant.read_u16(ADC_RAIL)), bits)

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
                if fault == "brownout" and self.on_brownout is not None:
                    threading.Thread(target=self.on_brownout, daemon=True).start()
