# Non-blocking motion: turns the state machine's Cartesian move commands into per-tick joint
# setpoints with bounded velocity and acceleration per joint, and reports arrival back through
# Inputs.arrived_seq. Straight moves (descend, lift, place, retreat) follow the Cartesian segment
# through IK waypoints, so the jaw really travels straight up and down.
#
# Planning a move (once per move) uses floats and may allocate; tick() uses integers only and
# writes into preallocated arrays, so the board's loop does not allocate.
#
# Planning is the longest thing the loop does (one IK solution per waypoint: about 16 ms for a
# straight move on an RP2040, four or more loop periods). prepare() plans every move a job may
# command ahead, at rest, into a cache keyed by everything a plan depends on (start joints,
# target, kind, profile): each attempt's approach, descent, lift, transfer and retreat on a
# failed grasp, at the retry offsets the machine will use, and the placing. A move that hits it
# costs a copy; a miss is planned as before. The plans are the same either way, so the arm's
# motion does not depend on the cache.
from array import array

from .compat import const, micropython
from .ticks import ticks_diff
from .config import MAX_ATTEMPTS
from .machine import MOVE_FREE, MOVE_LINE, MOVE_BACK, MOVE_PLAN, spiral_dx_um, spiral_dy_um

N_JOINTS = const(4)
MAX_WAYPOINTS = const(24)
_S_FULL = const(16384)      # path parameter at the end of a move (fixed point, 14 bits)
CACHE_SIZE = 5 * MAX_ATTEMPTS + 2   # plans kept by prepare(): every move job_moves() gives
AHEAD_SIZE = 8     # plans kept by plan_ahead(): what a search names next (its probe, or an attempt)
BACK_REWIND_MS = const(100)   # MOVE_BACK starts where the setpoint was this long ago (_retrace)


def job_moves(job, cfg, attempts, up=0):
    # Every move a job of `attempts` attempts may command, most likely first: (start, kind,
    # gentle, x, y, z, pitch), where start is the index of the move whose end it starts from
    # (-1: where the arm is now). Attempt k grasps at the pick pose shifted by the machine's
    # spiral; after it the arm either lifts (up um over the approach: the machine's
    # lift_up_um), transfers and places, or retreats straight up (the machine's RECOVER) and
    # tries again from there. A prediction for prepare(): one that is wrong only costs
    # planning time when the move comes.
    h = cfg.approach_height_um
    px, py, pz, pp = job.pick
    tx, ty, tz, tp = job.place
    moves = []
    retreat = -1          # where the next attempt starts: the last attempt's retreat
    for k in range(1, attempts + 1):
        gx = px + spiral_dx_um(cfg, k)
        gy = py + spiral_dy_um(cfg, k)
        a = len(moves)
        moves.append((retreat, MOVE_FREE, 0, gx, gy, pz + h, pp))        # APPROACH
        moves.append((a, MOVE_LINE, 0, gx, gy, pz, pp))                  # DESCEND
        moves.append((a + 1, MOVE_LINE, 1, gx, gy, pz + h + up, pp))     # LIFT
        moves.append((a + 2, MOVE_FREE, 1, tx, ty, tz + h, tp))          # TRANSFER
        if k == 1:
            moves.append((a + 3, MOVE_LINE, 1, tx, ty, tz, tp))          # PLACE (the same from
            moves.append((a + 4, MOVE_LINE, 0, tx, ty, tz + h, tp))      # every transfer) and retreat
        retreat = len(moves)
        moves.append((a + 1, MOVE_LINE, 0, gx, gy, pz + h, pp))          # RECOVER's retreat
    return moves


class _Target:
    # what _plan reads of the machine's Outputs
    def __init__(self, kind, gentle, x, y, z, pitch):
        self.move_kind = kind
        self.move_gentle = gentle
        self.x_um = x
        self.y_um = y
        self.z_um = z
        self.pitch_mdeg = pitch
        self.move_seq = -1


class Motion:
    # arm: the Arm whose kinematics plan the moves (shared_fsm/arm.py); None: the reference arm.
    def __init__(self, cfg, start_joints_mdeg, start_jaw_um, arm=None):
        self.cfg = cfg
        if arm is None:
            from . import kinematics          # host callers without an arm: the reference arm
            arm = kinematics.REFERENCE
        self.arm = arm
        self.joints = array("i", start_joints_mdeg)   # current setpoint, mdeg
        self.jaw_um = int(start_jaw_um)               # current jaw setpoint, um
        self.wp = array("i", [0] * (MAX_WAYPOINTS * N_JOINTS))
        self.n_wp = 0
        self.seq = 0          # move being executed (or last finished)
        self.arrived_seq = 0
        self.error_seq = 0
        self.error_text = ""
        self.start = 0
        self.t_acc = 1        # ms
        self.t_total = 0      # ms, end of the profile
        self.s_acc = 0        # path parameter reached at the end of the acceleration phase
        self.active = 0
        self.last_tick = 0
        self.jaw_rem = 0      # sub-um remainder of the jaw slew, keeps the rate exact
        self.cache = {}       # plan key -> (n_wp, waypoints, t_acc, t_total, s_acc)
        self.ahead = {}       # the same, from plan_ahead() (replaced by each call)
        self.hits = 0
        self.back = 0         # 1: the move in progress is a MOVE_BACK, s running back from back_from
        self.back_from = 0
        self.d_max = 0.0      # the planned move's largest joint travel, mdeg (a MOVE_BACK's profile)

    @micropython.native
    def tick(self, now, out, inp):
        # Call once per loop after the machine's step: starts new moves, advances the profile,
        # slews the jaw, and reports arrival/errors into `inp` for the next step.
        if out.hold:
            # Freeze where we are: the current setpoint becomes the target, the move is dropped.
            self.active = 0
            self.seq = out.move_seq
        elif out.move_seq != self.seq:
            self.seq = out.move_seq
            k = out.move_kind
            if k == MOVE_PLAN:
                self.active = 0
                self.arrived_seq = self.seq   # the planning itself happened before this tick
            elif k == MOVE_BACK:
                self._retrace(now, out.move_gentle)
            else:
                self.back = 0
                self._plan(now, out)
        if self.active:
            self._advance(now)
        self._slew_jaw(now, out.jaw_um)  # on a fault the machine froze the command at the setpoint
        self.last_tick = now
        inp.arrived_seq = self.arrived_seq
        inp.error_seq = self.error_seq
        inp.jaw_done = 1 if self.jaw_um == out.jaw_um else 0
        inp.jaw_setpoint_um = self.jaw_um

    def jaw_only(self, now, target):
        # The jaw's slew alone, exactly as tick() does it: for a replay that follows the jaw
        # setpoint (where a fault freezes the jaw) without the planner. -> the new setpoint.
        self._slew_jaw(now, target)
        self.last_tick = now
        return self.jaw_um

    @micropython.native
    def _slew_jaw(self, now, target):
        dt = ticks_diff(now, self.last_tick)
        if dt <= 0 or dt > 100:
            dt = 1
        total = self.cfg.jaw_speed_um_s * dt + self.jaw_rem
        step = total // 1000
        self.jaw_rem = total - step * 1000
        d = target - self.jaw_um
        if d > step:
            d = step
        elif d < -step:
            d = -step
        self.jaw_um += d

    def _key(self, out):
        j = self.joints
        return (out.move_kind, out.move_gentle, out.x_um, out.y_um, out.z_um, out.pitch_mdeg,
                j[0], j[1], j[2], j[3])

    def prepare(self, moves, between=None):
        # Plan `moves` (job_moves()) into the cache. At rest only: it takes as long as the plans;
        # between() is called after each plan (the app feeds its watchdog). Nothing moves: the
        # setpoint, the move in progress and the sequence are kept.
        self.cache = {}
        self.cache = self._fill(moves, CACHE_SIZE, between)

    def plan_ahead(self, moves, between=None):
        # Plan `moves` (the same format; start -1 is where the setpoint is now) into the ahead
        # cache, replacing what it held: what a search will command next (a MOVE_PLAN request).
        # At rest only, as prepare().
        self.ahead = {}
        self.ahead = self._fill(moves, AHEAD_SIZE, between)

    def _fill(self, moves, limit, between):
        saved = (array("i", self.joints), array("i", self.wp), self.n_wp, self.t_acc, self.t_total,
                 self.s_acc, self.active, self.start, self.error_seq, self.error_text, self.d_max)
        cache = {}
        here = array("i", self.joints)
        ends = []             # each move's end joints (None: not planned)
        paths = {}            # waypoints by everything but the profile: a lift and a retreat share them
        err = self.error_seq
        for mv in moves:
            src = here if mv[0] < 0 else ends[mv[0]]
            if src is None or len(cache) >= limit:
                ends.append(None)
                continue
            self.joints[:] = src
            t = _Target(mv[1], mv[2], mv[3], mv[4], mv[5], mv[6])
            key = self._key(t)
            plan = cache.get(key)
            if plan is None:
                path = paths.get(key[0:1] + key[2:])
                if path is None:
                    self.error_seq = err
                    dist = self._waypoints(t)
                    if dist is None:
                        ends.append(None)     # unreachable: the machine will find out itself
                        continue
                    n = self.n_wp * N_JOINTS
                    path = (self.n_wp, self.wp[0:n], dist)
                    paths[key[0:1] + key[2:]] = path
                self._time_scale(0, path[2], t.move_gentle)
                plan = (path[0], path[1], self.t_acc, self.t_total, self.s_acc, self.d_max)
                cache[key] = plan
                if between is not None:
                    between()
            n = (plan[0] - 1) * N_JOINTS
            ends.append(plan[1][n:n + N_JOINTS])
        (joints, wp, self.n_wp, self.t_acc, self.t_total, self.s_acc, self.active, self.start,
         self.error_seq, self.error_text, self.d_max) = saved
        self.joints[:] = joints
        self.wp[:] = wp
        return cache

    def _plan(self, now, out):
        hit = None
        if self.cache or self.ahead:
            key = self._key(out)
            hit = self.cache.get(key)
            if hit is None:
                hit = self.ahead.get(key)
        if hit is None:
            self._compute(now, out)
            return
        self.hits += 1
        self.n_wp = hit[0]
        self.wp[0:len(hit[1])] = hit[1]
        self.t_acc = hit[2]
        self.t_total = hit[3]
        self.s_acc = hit[4]
        self.d_max = hit[5]
        self.start = now
        self.active = 1

    def _compute(self, now, out):
        dist = self._waypoints(out)
        if dist is not None:
            self._time_scale(now, dist, out.move_gentle)

    def _waypoints(self, out):
        # Waypoints in joint space (mdeg) into self.wp -> each joint's travel along them, or
        # None (error_seq and error_text set) if the move cannot be planned. A free move is one
        # segment; a straight move gets one IK solution every line_step_um along the Cartesian
        # segment.
        try:
            arm = self.arm
            goal = arm.inverse(out.x_um / 1000.0, out.y_um / 1000.0, out.z_um / 1000.0,
                                      out.pitch_mdeg / 1000.0)
            pts = [[self.joints[j] / 1000.0 for j in range(N_JOINTS)]]
            if out.move_kind == MOVE_LINE:
                x0, y0, z0, p0 = arm.forward(pts[0])
                dx = out.x_um / 1000.0 - x0
                dy = out.y_um / 1000.0 - y0
                dz = out.z_um / 1000.0 - z0
                dp = out.pitch_mdeg / 1000.0 - p0
                length_um = (dx * dx + dy * dy + dz * dz) ** 0.5 * 1000.0
                n = int(length_um / self.cfg.line_step_um) + 1
                if n > MAX_WAYPOINTS - 1:
                    n = MAX_WAYPOINTS - 1
                for i in range(1, n):
                    f = i / n
                    pts.append(arm.inverse(x0 + dx * f, y0 + dy * f, z0 + dz * f, p0 + dp * f))
            pts.append(goal)
        except ValueError as e:
            self.error_seq = out.move_seq
            self.error_text = str(e)
            self.active = 0
            return None
        self.n_wp = len(pts)
        dist = [0.0] * N_JOINTS
        for k in range(self.n_wp):
            for j in range(N_JOINTS):
                v = int(round(pts[k][j] * 1000.0))
                self.wp[k * N_JOINTS + j] = v
                if k:
                    dist[j] += abs(v - self.wp[(k - 1) * N_JOINTS + j])
        return dist

    def _retrace(self, now, gentle):
        # MOVE_BACK: the last move's own waypoints, run backwards to where the move began: the
        # same path, no IK, nothing rebuilt (it may start mid-move, when a search's probe touched
        # something: a few integer and float steps, in the tick). It starts from where the
        # setpoint was BACK_REWIND_MS ago: a touch is felt that long after it began, and the
        # setpoint has gone on down meanwhile; stepping back at once (the servo drivers slew the
        # step) the arm stops pushing within a few ticks instead of once the retrace has climbed
        # back through that overshoot. After a move that has ended, that is where it ended.
        if self.back:
            f = 0                              # (already going back: nothing more to retrace)
        else:
            t = ticks_diff(now, self.start)
            f = self._s_of(t - BACK_REWIND_MS)
            if f < self._s_of(t):
                self._place_at(f)
        if self.n_wp < 2 or f <= 0:
            self.arrived_seq = self.seq        # nothing to go back along
            self.active = 0
            return
        self.back_from = f
        d = self.d_max
        self._time_scale(now, (d * f / _S_FULL,), gentle)
        self.d_max = d                         # the whole path's, for another MOVE_BACK
        self.back = 1

    def _time_scale(self, now, dist, gentle):
        # Trapezoidal profile on the path parameter s in [0, 1], scaled so that the joint that
        # travels furthest respects its speed and acceleration limits.
        cfg = self.cfg
        v_max = (cfg.gentle_speed_mdeg_s if gentle else cfg.arm_speed_mdeg_s) / 1000.0   # mdeg/ms
        a_max = (cfg.gentle_accel_mdeg_s2 if gentle else cfg.arm_accel_mdeg_s2) / 1e6    # mdeg/ms^2
        d = max(dist) if dist else 0.0
        self.d_max = d
        if d < 1.0:
            self.t_acc = 1
            self.t_total = 0
            self.s_acc = 0
        else:
            v = v_max / d     # s per ms
            a = a_max / d     # s per ms^2
            t_acc = v / a
            if a * t_acc * t_acc >= 1.0:   # never reaches full speed: triangle
                t_acc = (1.0 / a) ** 0.5
                t_total = 2.0 * t_acc
            else:
                t_total = 2.0 * t_acc + (1.0 - a * t_acc * t_acc) / v
            self.t_acc = max(1, int(t_acc + 0.999))
            self.t_total = max(2 * self.t_acc, int(t_total + 0.999))
            # s at the end of acceleration, consistent with the rounded times
            self.s_acc = _S_FULL * self.t_acc // (2 * (self.t_total - self.t_acc))
        self.start = now
        self.active = 1

    def _s_of(self, t):
        # The profile's path parameter t ms after the move began (what _advance places the
        # setpoint at; written out again there, which runs every tick).
        ta = self.t_acc
        tt = self.t_total
        if t >= tt:
            return _S_FULL
        if t <= 0:
            return 0
        if t < ta:
            return (self.s_acc * t // ta) * t // ta
        if t < tt - ta:
            return self.s_acc + (_S_FULL - 2 * self.s_acc) * (t - ta) // (tt - 2 * ta)
        r = tt - t
        return _S_FULL - (self.s_acc * r // ta) * r // ta

    @micropython.native
    def _advance(self, now):
        t = ticks_diff(now, self.start)
        ta = self.t_acc
        tt = self.t_total
        if t >= tt:
            s = _S_FULL
        elif t < ta:
            s = (self.s_acc * t // ta) * t // ta
        elif t < tt - ta:
            s = self.s_acc + (_S_FULL - 2 * self.s_acc) * (t - ta) // (tt - 2 * ta)
        else:
            r = tt - t
            s = _S_FULL - (self.s_acc * r // ta) * r // ta
        if self.back:
            s = self.back_from - s * self.back_from // _S_FULL
        self._place_at(s)
        if t >= tt + self.cfg.arrive_settle_ms:
            # The profile is done and the servos have had time to catch up.
            self.active = 0
            self.arrived_seq = self.seq

    @micropython.native
    def _place_at(self, s):
        segs = self.n_wp - 1
        pos = s * segs
        k = pos // _S_FULL
        if k >= segs:
            k = segs - 1
            frac = _S_FULL
        else:
            frac = pos - k * _S_FULL
        # diff * frac / 2**14 in two halves: a whole product could pass the RP2040's 31-bit
        # small ints (and then allocate a big int)
        hi = frac >> 7
        lo = frac & 127
        a = k * N_JOINTS
        b = a + N_JOINTS
        wp = self.wp
        for j in range(N_JOINTS):
            d = wp[b + j] - wp[a + j]
            self.joints[j] = wp[a + j] + d * hi // 128 + d * lo // _S_FULL
