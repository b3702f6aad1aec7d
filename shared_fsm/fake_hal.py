# A scripted stand-in for the arm, gripper and sensors, for tests and the demo. Integer maths
# and a tiny LCG, so it runs the same under MicroPython and CPython. It models just enough:
# arrival after a delay (or late, or never), a part that is caught when the jaws close around it,
# switch bounce and pad ringing after the close, squeeze/hold current, a beam across the jaws,
# a part that slips out in transfer, and sensor faults.
from .compat import const
from .ticks import ticks_diff as _diff

_ON_SOURCE = const(0)
_HELD = const(1)
_RELEASED = const(2)
_DROPPED = const(3)
_GONE = const(4)

DEFAULTS = {
    "part": 1,                 # 0: no part at all
    "part_appears_ms": 0,      # part arrives late: absent until this time after start
    "part_x_um": 160000,
    "part_y_um": -60000,
    "part_z_um": 12500,
    "part_width_um": 25000,
    "capture_um": 4000,        # a grasp this close to the part's centre catches it
    "arrive_ms": 300,          # time from a move command to its arrival
    "slow_move": 0,            # this move number (1-based) arrives after slow_arrive_ms
    "slow_arrive_ms": 0,
    "never_arrive_move": 0,    # this move number never arrives
    "bounce_ms": 16,           # switch contact bounce after the pad touches
    "ring_ms": 300,            # pad ringing after the close: short releases
    "ring_period_ms": 40,
    "slip_after_ms": 0,        # the part falls out this long after the lift starts
    "flicker_after_ms": 0,     # a brief switch+beam flicker this long after the lift starts
    "flicker_ms": 20,
    "switch_stuck": -1,        # -1 works; 0 stuck open; 1 stuck closed
    "beam_blocked": 0,
    "pot_broken": 0,
    "sticky": 0,               # the part stays stuck to the fingers when they open
    "estop_at_ms": 0,
    "touch_move": 0,           # this move number: a finger lands on something touch_after_ms into it,
    "touch_after_ms": 0,       # and the rail sags touch_sag_mv (the arm at stall) until the next move
    "touch_sag_mv": 800,
    "current_ma_per_mm": 90,
    "seed": 1,
}


class FakeHal:
    def __init__(self, cfg, options=None):
        self.cfg = cfg
        o = {}
        for k in DEFAULTS:
            o[k] = DEFAULTS[k]
        if options:
            for k in options:
                if k not in DEFAULTS:
                    raise ValueError("unknown fake HAL option: %s" % k)
                o[k] = options[k]
        self.o = o
        self.t0 = None
        self.part = _ON_SOURCE if o["part"] and not o["part_appears_ms"] else _GONE
        self.contact_t = 0
        self.lift_t = -1
        self.jaw_um = 40000
        self.cmd_jaw_um = 40000
        self.tx = 0
        self.ty = 0
        self.tz = 0
        self.seq = 0
        self.moves = 0
        self.move_t = 0
        self.arrived_seq = 0
        self.at_x = 0
        self.at_y = 0
        self.at_z = 200000
        self.rng = o["seed"] * 2654435761 % 4294967296 or 1
        self.last_now = 0

    def _rand_bit(self):
        self.rng = (self.rng * 1103515245 + 12345) % 2147483648
        return (self.rng >> 16) & 1

    def sense(self, now, inp):
        # Write this tick's readings into the machine's Inputs.
        o = self.o
        if self.t0 is None:
            self.t0 = now
        t = _diff(now, self.t0)
        if self.part == _GONE and o["part"] and o["part_appears_ms"] and t >= o["part_appears_ms"]:
            self.part = _ON_SOURCE
        held = self.part == _HELD
        if held and self.lift_t >= 0:
            since = _diff(now, self.lift_t)
            if o["slip_after_ms"] and since >= o["slip_after_ms"]:
                self.part = _DROPPED
                held = False
        around = self._around_part()
        # jaw: stops on the part when the part is between the jaws
        cmd = self.cmd_jaw_um
        stop = o["part_width_um"] - 1000 if (held or around) else 0
        target = cmd if cmd > stop else stop
        dt = _diff(now, self.last_now) if self.last_now else 2
        step = 150 * (dt if dt > 0 else 1)
        if target > self.jaw_um + step:
            self.jaw_um += step
        elif target < self.jaw_um - step:
            self.jaw_um -= step
        else:
            self.jaw_um = target
        if around and cmd < o["part_width_um"] and self.jaw_um <= o["part_width_um"] - 1000:
            if self.part != _HELD:
                self.part = _HELD
                self.contact_t = now
                held = True
        if held and cmd > o["part_width_um"] + 1000 and not o["sticky"]:
            # let go: still on the source if it was never lifted
            self.part = _RELEASED if self.lift_t >= 0 else _ON_SOURCE
            held = False
        # readings
        cfg = self.cfg
        if o["pot_broken"]:
            inp.pot_counts = 65535
        else:
            inp.pot_counts = cfg.pot_closed_counts + self.jaw_um * cfg.pot_counts_per_mm // 1000
        squeeze = self.jaw_um - cmd if held else 0
        cur = 10 + (squeeze * o["current_ma_per_mm"] // 1000 if squeeze > 0 else 0)
        if self.jaw_um != target:
            cur += 60
        inp.current_ma = cur if cur < 650 else 650
        sw = 1 if held else 0
        if held:
            since = _diff(now, self.contact_t)
            if since < o["bounce_ms"]:
                sw = self._rand_bit()
            elif since < o["ring_ms"] and (since % o["ring_period_ms"]) < 4:
                sw = 0
            if self.lift_t >= 0 and o["flicker_after_ms"]:
                f = _diff(now, self.lift_t) - o["flicker_after_ms"]
                if 0 <= f < o["flicker_ms"]:
                    sw = 0
        if o["switch_stuck"] >= 0:
            sw = o["switch_stuck"]
        inp.switch_pressed = sw
        beam = 1 if (held or around) else 0
        if held and self.lift_t >= 0 and o["flicker_after_ms"]:
            f = _diff(now, self.lift_t) - o["flicker_after_ms"]
            if 0 <= f < o["flicker_ms"]:
                beam = 0
        inp.beam_broken = 1 if o["beam_blocked"] else beam
        inp.estop = 1 if (o["estop_at_ms"] and t >= o["estop_at_ms"]) else 0
        touching = (o["touch_move"] and self.moves == o["touch_move"]
                    and _diff(now, self.move_t) >= o["touch_after_ms"])
        inp.rail_mv = 5500 - o["touch_sag_mv"] if touching else 5500
        inp.arrived_seq = self.arrived_seq
        inp.jaw_done = 1  # the fake's jaw command takes effect at once
        inp.jaw_setpoint_um = self.cmd_jaw_um
        self.last_now = now

    def actuate(self, now, out):
        # Take this tick's commands from the machine's Outputs.
        o = self.o
        self.cmd_jaw_um = out.jaw_um
        if out.hold:
            self.seq = out.move_seq  # the move is dropped where it is: it never arrives
            return
        if out.move_seq != self.seq:
            self.seq = out.move_seq
            self.moves += 1
            self.move_t = now
            if self.part == _HELD and out.z_um > self.at_z and self.lift_t < 0:
                self.lift_t = now
            self.tx = out.x_um
            self.ty = out.y_um
            self.tz = out.z_um
        if self.arrived_seq != self.seq and self.moves:
            need = o["arrive_ms"]
            if self.moves == o["slow_move"]:
                need = o["slow_arrive_ms"]
            if self.moves == o["never_arrive_move"]:
                return
            if _diff(now, self.move_t) >= need:
                self.arrived_seq = self.seq
                self.at_x = self.tx
                self.at_y = self.ty
                self.at_z = self.tz

    def _around_part(self):
        # The open jaws are around the part when the last arrived pose is at the part.
        if self.part != _ON_SOURCE or self.arrived_seq != self.seq:
            return False
        o = self.o
        dx = self.at_x - o["part_x_um"]
        dy = self.at_y - o["part_y_um"]
        c = o["capture_um"]
        return -c <= dx <= c and -c <= dy <= c and self.at_z <= o["part_z_um"] + 2000

    def part_state(self):
        return ("on_source", "held", "released", "dropped", "gone")[self.part]
