# A geometric stand-in for the part search's world (shared_fsm/search.py), for tests under
# CPython and under the `micropython` binary alike (plain Python, floats only here): the arm is
# where its last move ended (a move arrives `move_ticks` ticks after it is commanded; MOVE_BACK
# ends where the move before it began; MOVE_PLAN arrives at once), the jaw is where it was sent.
# A square part of side `w_mm` at (x, y) yawed `yaw_deg` stands `h_mm` tall on a support at
# `floor_mm`. Fingers and beam are those of the reference gripper, oriented as a serial arm
# with a base yaw orients them: the jaws close square to the line from the base axis.
#  - going down, the moment a finger's footprint overlaps the part while its tips are below the
#    part's top, the arm stops there and the servo rail sags 500 mV (until the arm goes up);
#  - the beam is broken when its segment between the open fingers crosses the part below the
#    part's top.
# The search's own model (radial/tangential frame at the pick pose, cells, discs) is not used:
# this is the independent oracle its decisions are checked against.
import math

BEAM_BEHIND_MM = 5.0       # sim/arm.xml: beam 5 mm behind the jaw centre
TIP_MM = 10.0              # finger tips 10 mm past it
FINGER_MM = 20.0           # a finger's width across the closing direction
LEFT_MM = 10.0             # pad face to the left finger's outer face
RIGHT_MM = 6.0             # the right finger's
RAIL_MV = 5600
SAG_MV = 500


def square(cx, cy, w, yaw_deg):
    a = math.radians(yaw_deg)
    c, s = math.cos(a), math.sin(a)
    h = w / 2.0
    return [(cx + c * dx - s * dy, cy + s * dx + c * dy) for dx, dy in ((-h, -h), (h, -h), (h, h), (-h, h))]


def _axes(poly):
    out = []
    for i in range(len(poly)):
        x0, y0 = poly[i]
        x1, y1 = poly[(i + 1) % len(poly)]
        out.append((y0 - y1, x1 - x0))
    return out


def _span(poly, ax):
    v = [p[0] * ax[0] + p[1] * ax[1] for p in poly]
    return min(v), max(v)


def overlap(p, q):
    # convex polygons (or a segment: two points) overlap, by separating axes
    for ax in _axes(p) + _axes(q):
        if ax[0] == 0 and ax[1] == 0:
            continue
        a0, a1 = _span(p, ax)
        b0, b1 = _span(q, ax)
        if a1 < b0 - 1e-9 or b1 < a0 - 1e-9:
            return False
    return True


def gripper_footprint(x, y, opening_mm):
    # (left finger, right finger, beam segment) at a jaw centre over (x, y), mm
    n = math.sqrt(x * x + y * y)
    ux, uy = x / n, y / n           # radial
    tx, ty = -uy, ux                # across the jaws, towards the left finger
    half = opening_mm / 2.0
    f = FINGER_MM / 2.0

    def rect(c0, c1):
        return [(x + r * ux + c * tx, y + r * uy + c * ty) for r, c in ((-f, c0), (f, c0), (f, c1), (-f, c1))]
    left = rect(half, half + LEFT_MM)
    right = rect(-half - RIGHT_MM, -half)
    beam = [(x - half * tx, y - half * ty), (x + half * tx, y + half * ty)]
    return left, right, beam


class Bench:
    def __init__(self, m, part=None, move_ticks=20, w_mm=25.0, h_mm=25.0, floor_mm=3.0, beam_stuck=False):
        # part: (x_mm, y_mm, yaw_deg) or None
        self.m = m
        self.part = None if part is None else square(part[0], part[1], w_mm, part[2])
        self.top = floor_mm + h_mm
        self.move_ticks = move_ticks
        self.beam_stuck = beam_stuck
        self.seq = 0
        self.left = 0
        self.at = (160.0, -60.0, 120.0)     # x, y, z of the jaw centre, mm
        self.start = self.at                # where the last move began
        self.target = self.at
        self.landed = 0
        self.moves = []                     # every move: (kind, x, y, z mm)
        self.touches = 0

    def sense(self, now):
        inp = self.m.inp
        cfg = self.m.cfg
        inp.pot_counts = cfg.pot_closed_counts + self.m.out.jaw_um * cfg.pot_counts_per_mm // 1000
        inp.jaw_done = 1
        inp.jaw_setpoint_um = self.m.out.jaw_um
        inp.rail_mv = RAIL_MV - (SAG_MV if self.landed else 0)
        inp.arrived_seq = self.seq if self.left == 0 else self.seq - 1
        inp.beam_broken = 1 if (self.beam_stuck or self._beam()) else 0

    def act(self, now):
        out = self.m.out
        if out.move_seq != self.seq:
            self.seq = out.move_seq
            kind = out.move_kind
            self.moves.append((kind, out.x_um / 1000.0, out.y_um / 1000.0, out.z_um / 1000.0))
            if kind == 3:                    # MOVE_PLAN: nothing moves
                self.left = 0
                return
            if kind == 2:                    # MOVE_BACK: to where the last move began
                self.target = self.start
            else:
                self.target = (out.x_um / 1000.0, out.y_um / 1000.0, out.z_um / 1000.0)
            self.start = self.at
            self.left = self.move_ticks
            self.landed = 0
        if self.left > 0:
            self.left -= 1
            f = 1.0 - self.left / float(self.move_ticks)
            p = tuple(a + (b - a) * f for a, b in zip(self.start, self.target))
            if self._lands(p):
                self.landed = 1
                self.touches += 1
                self.left = 0                 # blocked: as far as it goes (arrival is the servo's)
                return
            self.at = p

    def _lands(self, p):
        if self.part is None or p[2] - TIP_MM >= self.top or p[2] >= self.at[2]:
            return False
        left, right, beam = gripper_footprint(p[0], p[1], self.m.out.jaw_um / 1000.0)
        return overlap(left, self.part) or overlap(right, self.part)

    def _beam(self):
        if self.part is None or self.at[2] + BEAM_BEHIND_MM >= self.top:
            return False
        left, right, beam = gripper_footprint(self.at[0], self.at[1], self.m.out.jaw_um / 1000.0)
        return overlap(beam, self.part)

    def grasp_clear(self, x, y):
        # A grasp coming straight down at (x, y) with the jaws open would not land on the part,
        # and its beam would cross it.
        left, right, beam = gripper_footprint(x, y, self.m.cfg.jaw_max_um / 1000.0)
        return not overlap(left, self.part) and not overlap(right, self.part) and overlap(beam, self.part)


def run_search(m, bench, limit_ms=120000, period=4, start=0):
    # Step the machine (with a job started) until it leaves APPROACH's search or the time is up.
    # -> (ticks, events since the start)
    now = start
    ticks = 0
    first = m.events.last_seq()
    while now - start < limit_ms:
        bench.sense(now)
        m.step(now)
        bench.act(now)
        now += period
        ticks += 1
        if m.state != 1 or (m.phase != 6 and ticks > 1):     # not APPROACH, or no longer searching
            break
    return ticks, m.events.since(first)
