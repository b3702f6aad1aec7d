# Finding the part with the gripper's own sensors: the machine's re-sense hook (Machine.resense),
# installed from the config's `resense` (docs/find-the-part.md). Pure Python for MicroPython
# and CPython, stepped once per loop tick inside APPROACH; it moves the arm through the machine.
#
# A probe is a plunge with the jaws open as wide as they go: down a straight line from the
# clear height (finger tips above anything the part can be) to the probe depth (the taught
# grasp height), then back up the same path (MOVE_BACK). It has three outcomes:
#   SEEN     the beam across the jaws was broken at the bottom: something stands between the
#            fingers there, and no finger came down on anything;
#   CLEAR    the beam stayed clear: nothing under the fingers, nothing across the beam;
#   TOUCHED  the servo rail sagged on the way down (search_touch_mv below its level at the
#            top): a finger came down on something and the arm pushed; it goes straight back up.
# Why plunges and not sweeps along the table: the beam sits beam_behind + finger_tip (15 mm on
# the reference gripper) above the finger tips, so it only sees a part whose sides the fingers
# already straddle. A finger moving sideways at that depth meets anything the corridor between
# the fingers does not hold and pushes it, and no sensor feels that push (a 20 g part slides at
# 0.16 N). Coming down on a part from above pushes it into its support instead, and the rail
# says so within a millimetre or two (the arm's servos draw current against it).
#
# Where the part can be is kept as a grid of candidate centres around the taught pose (cells of
# CELL_DMM, in a radial/tangential frame: the jaws close tangentially), every probe striking out
# the cells it rules out. The part is a square of the job's width at an unknown yaw: what it
# surely covers is its inscribed disc, what it may reach its circumscribed one. Probes go first
# where the part most likely is (nearest the taught pose, beside a finger that touched
# something); once one has SEEN it, the following ones stay in that corridor and move only
# radially, halving the radial range that is left, until it is within FOUND_SPREAD_DMM. The pose
# found is that corridor and the middle of that range: where the next attempt grasps. Nothing
# left, no probe that could tell more, or the time limit: no pose, and the attempt goes where it
# would have gone (the pick pose or the retry spiral).
#
# Every move is planned at rest: before each probe (and before the attempt that follows the
# search) the machine asks for a MOVE_PLAN, which the controller answers by planning exactly the
# moves named by moves_ahead() in that tick (a maintenance tick, like the job's own plans). The
# thinking (striking out cells, choosing the next probe) happens in that same tick; every other
# tick of a search is a few integer comparisons.
from array import array

from .compat import const, micropython
from .codes import (R_SEARCH, R_PROBE_SEEN, R_PROBE_CLEAR, R_PROBE_TOUCHED, R_EDGE, R_FOUND,
                    R_NOT_FOUND, R_SEARCH_TIMEOUT, R_SEARCH_OFF)
from .config import RESENSE_ON_RETRY, RESENSE_ALWAYS
from .gripper_geometry import geometry
from .machine import RESENSE_NO, RESENSE_FOUND, RESENSE_BUSY, MOVE_FREE, MOVE_LINE, MOVE_BACK, MOVE_PLAN
from .ticks import ticks_diff

CELL_DMM = const(30)          # candidate cells every 3 mm (units: 0.1 mm)
MAX_PROBES = const(16)
FOUND_SPREAD_DMM = const(90)  # the radial range left when the pose is good enough for a grasp
CLEAR_MARGIN_UM = const(3000)  # finger tips this far above the highest a part can reach, when hopping
TIP_MIN_UM = const(2000)      # finger tips never lower than this above the table
PLAN_WAIT_MS = const(160)     # after a MOVE_PLAN: the chip's planning at rest and the collection (120 ms was one loop period short on the chip)
                              # after it (52-88 ms on the emulated RP2040) fit in it, so every
                              # engine moves on in the same tick
_UNIT = const(4096)           # the radial unit vector, scaled

# outcomes
SEEN = const(1)
CLEAR = const(2)
TOUCHED = const(3)
_OUTCOME_REASON = (0, R_PROBE_SEEN, R_PROBE_CLEAR, R_PROBE_TOUCHED)

# why a search is off for a job (R_SEARCH_OFF's value)
OFF_PITCH = const(1)          # the tool does not point down: the probes' geometry does not hold
OFF_REACH = const(2)          # the search's poses are out of the arm's reach
OFF_SENSORS = const(3)        # above the part the beam was broken, the switch pressed or the jaw
                              # not open: not a probe's to explain (the pre-grasp check says what)

# phases
_IDLE = const(0)
_PLAN = const(1)              # MOVE_PLAN asked; waiting for it and PLAN_WAIT_MS
_HOP = const(2)               # to the probe's top (the first: above it at the approach height, then down)
_HOP2 = const(3)
_TOP = const(4)               # at the top: jaw open, switch released, beam clear; the rail's level
_DOWN = const(5)
_BOTTOM = const(6)
_UP = const(7)
_FINAL = const(8)             # the attempt's moves asked for; then the answer


class Search:
    def __init__(self, cfg):
        self.phase = _IDLE
        self.landed = array("h", [0] * (2 * MAX_PROBES))   # (r, c) of probes that touched
        self.probed = array("h", [0] * (3 * MAX_PROBES))   # (r, c, outcome) of every probe
        self.cells = bytearray(0)
        self.rows = array("h")
        self.reconfigure(cfg)
        self.ok = 0
        self.off = 0
        # Every attribute a search step sets, made here: a new attribute grows the instance's
        # dict, an allocation the loop must not make.
        self.t0 = self.t_plan = self.t_top = 0
        self.count = self.n_landed = 0
        self.seen_r = self.seen_c = -32768
        self.answer = RESENSE_NO
        self.qr = self.qc = self.qx = self.qy = 0
        self.streak = self.last = self.rail = self.touch = self.outcome = 0
        self.urx = self.ury = self.rho = self.rmin2 = self.rmax2 = self.span = 0
        self.arm = self.geo = None
        self.ho = self.fo = self.fh = 0
        self.a = self.b = self.z_probe = self.z_clear = self.z_app = 0

    def reconfigure(self, cfg):
        self.cfg = cfg
        self.first = 1 if cfg.resense == RESENSE_ALWAYS else 0   # the machine asks before attempt 1 too
        half = cfg.search_range_um // 100 // CELL_DMM       # cells each side of the taught pose
        self.n = 2 * half + 1
        if len(self.cells) != self.n * self.n:
            self.cells = bytearray(self.n * self.n)
            self.rows = array("h", [0] * self.n)     # candidates left per radial row
        self.range_dmm = half * CELL_DMM

    def _use_arm(self, arm):
        # The arm whose kinematics and gripper the probes are planned with: the controller's (on a
        # board, its description); None only for a machine without one (host tools: the
        # reference arm, imported here rather than on a board, which drops its module).
        if arm is None:
            from .kinematics import REFERENCE
            arm = REFERENCE
        self.arm = arm
        g = geometry(self.cfg, arm)
        self.geo = g
        self.ho = g.opening // 200                 # half the opening, dmm
        self.fo = g.finger_outer // 100
        self.fh = g.finger_height // 200           # half a finger's width, dmm

    # ---- a job (Machine.start_job: not in the loop; may allocate) ----

    def job(self, m):
        # m.arm: the arm the controller runs (its description), when it has told the machine
        cfg = self.cfg
        self._use_arm(getattr(m, "arm", None))
        self.ok = 0
        self.off = 0
        px, py, pz, pp = m.px, m.py, m.pz, m.pp
        if pp != -90000:
            self.off = OFF_PITCH
            return
        import math
        n = math.sqrt(px * px + py * py)
        if n < 1.0:
            self.off = OFF_REACH
            return
        self.urx = int(round(px * _UNIT / n))
        self.ury = int(round(py * _UNIT / n))
        g = self.geo
        w = m.part_width_um // 100
        self.a = w // 2 - CELL_DMM * 71 // 100          # surely covered, less the cell's own spread
        self.b = w * 707 // 1000 + CELL_DMM * 71 // 100  # possibly reached
        z_probe = pz
        if z_probe - g.finger_tip < TIP_MIN_UM:
            z_probe = g.finger_tip + TIP_MIN_UM
        self.z_probe = z_probe
        # The part's top is at most 2 pz (it stands on something at or above the table and the
        # grasp pose is its middle): the tips hop above that.
        z_clear = 2 * pz + g.finger_tip + CLEAR_MARGIN_UM
        z_app = pz + cfg.approach_height_um
        if z_clear > z_app:
            z_clear = z_app
        if z_clear < z_probe:
            z_clear = z_probe
        self.z_clear = z_clear
        self.z_app = z_app
        # Where a probe can go: the arm reaches a pose over the table by its distance from the
        # base axis (for a given height and pitch), so the reach at the probe and clear heights
        # is a ring around the base, found along the line through the pick pose (the
        # kinematics answer; a few solutions, at the job's start).
        inverse = self.arm.inverse
        rho = n / 1000.0
        span = self.range_dmm / 10.0 + 1.0
        lo = rho - span
        hi = rho + span
        for z in (z_probe, z_clear):
            lo = max(lo, _reach_edge(inverse, px / n, py / n, z / 1000.0, pp / 1000.0, rho, rho - span))
            hi = min(hi, _reach_edge(inverse, px / n, py / n, z / 1000.0, pp / 1000.0, rho, rho + span))
        if hi <= rho or lo >= rho:
            self.off = OFF_REACH      # not even the pick pose: start_job would have refused it
            return
        self.rho = int(rho * 10)      # dmm
        self.rmin2 = int(lo * 10) ** 2 if lo > 0 else 0
        self.rmax2 = int(hi * 10) ** 2
        self.span = self.range_dmm
        self.ok = 1

    def reachable(self, r, c):
        # A probe at (r, c) dmm reaches down to its depth and hops at its clear height.
        d = (self.rho + r) * (self.rho + r) + c * c
        return self.rmin2 <= d <= self.rmax2

    def _world(self, r, c, px, py):
        # (r, c) dmm in the radial/tangential frame at the pick pose -> world x, y um. The
        # tangential axis points where the left finger (the pad's) opens to.
        x = px + (r * 100 * self.urx - c * 100 * self.ury) // _UNIT
        y = py + (r * 100 * self.ury + c * 100 * self.urx) // _UNIT
        return x, y

    # ---- the hook (the machine calls it every tick of a search) ----

    @micropython.native
    def __call__(self, m, attempt):
        if self.phase == _IDLE:
            mode = self.cfg.resense
            if mode != RESENSE_ALWAYS and not (mode == RESENSE_ON_RETRY and attempt > 1):
                return RESENSE_NO
            return self._begin(m)
        return self._step(m)

    def _begin(self, m):
        self.t0 = m.now
        self.count = 0
        self.n_landed = 0
        self.seen_r = -32768          # the last probe that SAW it (r, c): its corridor; none yet
        self.answer = RESENSE_NO
        if not self.ok:
            m.events.put_search(m, R_SEARCH_OFF, m.px, m.py, m.pz, self.off)
            return RESENSE_NO
        m.events.put_search(m, R_SEARCH, m.px, m.py, m.pz, self.span * 100)
        n = self.n
        half = n // 2
        lim = self.span // CELL_DMM
        cells = self.cells
        for i in range(n):
            for j in range(n):
                cells[i * n + j] = 1 if (i - half <= lim and half - i <= lim and j - half <= lim
                                         and half - j <= lim) else 0
        m.out.jaw_um = self.geo.opening
        self._next(m)
        return RESENSE_BUSY

    @micropython.native
    def _step(self, m):
        # Every tick of a search: a few comparisons (native on the board: it runs in a loop tick).
        ph = self.phase
        inp = m.inp
        if ph == _PLAN or ph == _FINAL:
            if m.arrived() and ticks_diff(m.now, self.t_plan) >= PLAN_WAIT_MS:
                if ph == _FINAL:
                    self.phase = _IDLE
                    return self.answer
                self._hop(m)
        elif ph == _HOP:
            if m.arrived():
                self.phase = _HOP2
                m.move(self.qx, self.qy, self.z_clear, m.pp, MOVE_LINE, 0)
        elif ph == _HOP2:
            if m.arrived() and inp.jaw_done:
                self._top_begin(m)
        elif ph == _TOP:
            self._top(m)
        elif ph == _DOWN:
            if self._touching(m):
                return RESENSE_BUSY
            if m.arrived():
                self.phase = _BOTTOM
                self.streak = 0
                self.last = -1
        elif ph == _BOTTOM:
            if self._touching(m):
                return RESENSE_BUSY
            b = inp.beam_broken
            if b == self.last:
                self.streak += 1
            else:
                self.last = b
                self.streak = 1
            if self.streak >= m.cfg.debounce_reads:
                self.outcome = SEEN if b else CLEAR
                self.phase = _UP
                m.move(self.qx, self.qy, self.z_probe, m.pp, MOVE_BACK, 0)
        elif ph == _UP:
            if m.arrived():
                self._probed(m)
        return RESENSE_BUSY

    # ---- one probe ----

    def _hop(self, m):
        # the move to this probe's top: the first from wherever the arm is, above the probe at
        # the approach height and down to the clear height; the next ones along the clear height
        self.count += 1
        if self.count == 1:
            self.phase = _HOP
            m.move(self.qx, self.qy, self.z_app, m.pp, MOVE_FREE, 0)
        else:
            self.phase = _HOP2
            m.move(self.qx, self.qy, self.z_clear, m.pp, MOVE_LINE, 0)

    def _top_begin(self, m):
        self.phase = _TOP
        self.streak = 0
        self.rail = 0
        self.t_top = m.now

    def _top(self, m):
        # With the jaws open above it all: the switch released, the beam clear and the jaw where
        # it was sent, for debounce_reads reads in a row, then the rail's level is what a touch
        # is measured from. A broken beam or a pressed switch here is not a probe's to explain:
        # the search stops and the machine's own pre-grasp check says what is wrong.
        inp = m.inp
        cfg = m.cfg
        jaw = m.jaw_um()
        op = self.geo.opening
        if (inp.beam_broken or inp.switch_pressed or jaw < op - cfg.jaw_open_tolerance_um
                or jaw > op + cfg.jaw_open_tolerance_um):
            self.streak = 0
            self.rail = 0
            if ticks_diff(m.now, self.t_top) >= cfg.verify_window_ms:
                self._finish(m, R_SEARCH_OFF, RESENSE_NO, OFF_SENSORS)
            return
        self.streak += 1
        self.rail += inp.rail_mv
        if self.streak >= cfg.debounce_reads:
            self.rail = self.rail // self.streak
            self.phase = _DOWN
            self.touch = 0
            m.move(self.qx, self.qy, self.z_probe, m.pp, MOVE_LINE, 0)

    @micropython.native
    def _touching(self, m):
        # The rail sagged under the level at the top, debounce_reads reads in a row, or the pad
        # was pressed: a finger is on something. Back up the way it came, at once.
        inp = m.inp
        if self.rail - inp.rail_mv >= m.cfg.search_touch_mv or inp.switch_pressed:
            self.touch += 1
        else:
            self.touch = 0
        if self.touch < m.cfg.debounce_reads:
            return False
        self.outcome = TOUCHED
        self.phase = _UP
        m.move(self.qx, self.qy, self.z_probe, m.pp, MOVE_BACK, 0)
        return True

    def _probed(self, m):
        # Back at the top: record the probe, strike out cells, choose the next one (a
        # maintenance tick: it ends in a MOVE_PLAN).
        o = self.outcome
        k = self.count - 1
        p = self.probed
        p[3 * k] = self.qr
        p[3 * k + 1] = self.qc
        p[3 * k + 2] = o
        m.events.put_search(m, _OUTCOME_REASON[o], self.qx, self.qy, self.z_probe + self.geo.beam_behind,
                            self.count)
        if o == TOUCHED:
            self.landed[2 * self.n_landed] = self.qr
            self.landed[2 * self.n_landed + 1] = self.qc
            self.n_landed += 1
        else:
            self._strike(self.qr, self.qc, o == SEEN)
            if o == SEEN:
                self.seen_r = self.qr
                self.seen_c = self.qc
        half = self.n // 2
        k = (self.qr // CELL_DMM + half) * self.n + self.qc // CELL_DMM + half
        if 0 <= k < len(self.cells) and self.cells[k]:
            self.cells[k] = 2         # a candidate still, but probed: not a place to probe again
        if ticks_diff(m.now, self.t0) >= self.cfg.search_limit_ms:
            self._give_up(m, R_SEARCH_TIMEOUT)
            return
        self._next(m)

    # ---- where next ----

    def _next(self, m):
        if self.count >= MAX_PROBES:
            self._give_up(m, R_NOT_FOUND)
            return
        if self.seen_r == -32768:
            found = self._choose_find()
        else:
            found = self._choose_refine(m)
        if found < 0:
            return                    # _choose_refine finished the search
        if not found:
            self._finish(m, R_NOT_FOUND, RESENSE_NO)
            return
        self.qx, self.qy = self._world(self.qr, self.qc, m.px, m.py)
        self.phase = _PLAN
        self.t_plan = m.now
        m.move(self.qx, self.qy, self.z_probe, m.pp, MOVE_PLAN, 0)

    def _choose_find(self):
        # The candidate cell nearest the taught pose (radial distance counting 3/5: a probe sees
        # a part over its whole radial width, but only a few mm across the jaws), nearer by the
        # touches a part there explains, whose probe would not come down on a spot a finger
        # touched before. -> 1 with (qr, qc) set, 0: none.
        n = self.n
        half = n // 2
        cells = self.cells
        best = -1
        bi = 0
        bj = 0
        for i in range(n):
            r = (i - half) * CELL_DMM
            for j in range(n):
                if cells[i * n + j] != 1:
                    continue          # struck out, or probed already
                c = (j - half) * CELL_DMM
                if not self.reachable(r, c):
                    continue
                s = c * c + (r * 3 // 5) * (r * 3 // 5)
                if self.n_landed:
                    if self._lands_again(r, c):
                        continue
                    s = s >> self._beside_touch(r, c)
                if best < 0 or s < best:
                    best = s
                    bi = i
                    bj = j
        if best < 0:
            return 0
        self.qr = (bi - half) * CELL_DMM
        self.qc = (bj - half) * CELL_DMM
        return 1

    def _lands_again(self, r, c):
        # A probe at (r, c) would put a finger over most of where the same finger came down on
        # something before (half its width or more each way): it would most likely touch it
        # again. (A finger that only clipped an edge says little about the next spot over.)
        L = self.landed
        fh = self.fh
        fo2 = self.fo // 2
        for k in range(self.n_landed):
            dr = r - L[2 * k]
            dc = c - L[2 * k + 1]
            if -fh < dr < fh and -fo2 < dc < fo2:
                return True
        return False

    def _beside_touch(self, r, c):
        # How well a part centred at (r, c) explains the touches: 2 for each it could explain (a
        # finger's window within its reach), 4 more for each it must (within what it surely covers).
        L = self.landed
        a2 = self.a * self.a
        b2 = self.b * self.b
        n = 0
        for k in range(self.n_landed):
            rr = L[2 * k]
            cc = L[2 * k + 1]
            d = _d2(r, c, rr - self.fh, rr + self.fh, cc + self.ho, cc + self.ho + self.fo)
            e = _d2(r, c, rr - self.fh, rr + self.fh, cc - self.ho - self.fo, cc - self.ho)
            if d > e:
                d = e
            if d <= a2:
                n += 6
            elif d <= b2:
                n += 2
        return n

    def _choose_refine(self, m):
        # In the corridor that saw the part: the radial position whose probe splits the
        # candidates left most evenly (those it must see against those it cannot). The range
        # left small enough, or nothing left to split: found. -> 1 probe chosen, -1 finished.
        n = self.n
        half = n // 2
        cells = self.cells
        rows = self.rows
        c0 = self.seen_c
        lo = n
        hi = -1
        for i in range(n):
            k = 0
            for j in range(n):
                if cells[i * n + j]:
                    k += 1
            rows[i] = k
            if k:
                if i < lo:
                    lo = i
                hi = i
        if hi < 0:
            self._finish(m, R_NOT_FOUND, RESENSE_NO)
            return -1
        if (hi - lo) * CELL_DMM > FOUND_SPREAD_DMM:
            q = self._split(lo, hi, c0)
            if q >= 0:
                self.qr = (q - half) * CELL_DMM
                self.qc = c0
                return 1
        # The middle of what is left, in the corridor that saw it: where a probe saw it there
        # (within a cell), or probe it now. A probe there that would touch something (or did):
        # choose among the candidates left as before anything was seen; one that sees it there
        # gives a corridor of its own.
        r_mid = ((lo + hi) // 2 - half) * CELL_DMM
        for d in (0, -CELL_DMM, CELL_DMM):
            if self._probe_at(r_mid + d, c0) == SEEN:
                self._found(m, r_mid + d, c0, (hi - lo) * CELL_DMM)
                return -1
        if (self._probe_at(r_mid, c0) == 0 and self.reachable(r_mid, c0)
                and not (self.n_landed and self._lands_again(r_mid, c0))):
            self.qr = r_mid
            self.qc = c0
            return 1
        if self._choose_find():
            return 1
        self._found(m, self._nearest_seen(r_mid, c0), c0, (hi - lo) * CELL_DMM)
        return -1

    def _split(self, lo, hi, c0):
        # The row whose probe (in corridor c0) splits the rows lo..hi most evenly between the
        # candidates it must see and those it cannot; -1 when none splits them.
        half = self.n // 2
        rows = self.rows
        a = self.a
        b = self.b
        best = 0
        bq = -1
        for q in range(lo, hi + 1):
            rq = (q - half) * CELL_DMM
            if not self.reachable(rq, c0) or (self.n_landed and self._lands_again(rq, c0)):
                continue
            inside = 0
            outside = 0
            for i in range(lo, hi + 1):
                d = (i - q) * CELL_DMM
                if d < 0:
                    d = -d
                if d <= a:
                    inside += rows[i]
                elif d > b:
                    outside += rows[i]
            s = inside if inside < outside else outside
            if s > best:
                best = s
                bq = q
        return bq

    def _give_up(self, m, reason):
        # Out of probes or time: a part seen is found where it was last seen (the probe that saw
        # it there, nearest the middle of what is left), else not found.
        if self.seen_r == -32768:
            self._finish(m, reason, RESENSE_NO)
            return
        n = self.n
        lo = n
        hi = -1
        for i in range(n):
            for j in range(n):
                if self.cells[i * n + j]:
                    if i < lo:
                        lo = i
                    hi = i
                    break
        if hi < 0:
            lo = hi = n // 2 + self.seen_r // CELL_DMM
        r_mid = ((lo + hi) // 2 - n // 2) * CELL_DMM
        m.events.put_search(m, reason, m.gx, m.gy, m.gz, self.count)
        self._found(m, self._nearest_seen(r_mid, self.seen_c), self.seen_c, (hi - lo) * CELL_DMM)

    def _probe_at(self, r, c):
        # The outcome of a probe made at (r, c), 0 if none.
        p = self.probed
        for k in range(self.count):
            if p[3 * k] == r and p[3 * k + 1] == c:
                return p[3 * k + 2]
        return 0

    def _nearest_seen(self, r, c):
        p = self.probed
        best = self.seen_r
        for k in range(self.count):
            if p[3 * k + 1] == c and p[3 * k + 2] == SEEN:
                if abs(p[3 * k] - r) < abs(best - r):
                    best = p[3 * k]
        return best

    # ---- what a probe rules out ----

    @micropython.native
    def _strike(self, rq, cq, seen):
        # CLEAR: no part whose inscribed disc meets the beam or a finger; SEEN: none whose
        # circumscribed disc misses the beam, none whose inscribed disc meets a finger. Only the
        # cells a probe can rule out are looked at (this runs on the board, at rest).
        n = self.n
        half = n // 2
        cells = self.cells
        a = self.a
        a2 = a * a if a > 0 else -1
        b2 = self.b * self.b
        ho = self.ho
        fo = self.fo
        fh = self.fh
        if seen:
            i0, i1, j0, j1 = 0, n - 1, 0, n - 1
        else:
            if a <= 0:
                return
            w = fh + a
            i0 = (rq - w) // CELL_DMM + half
            i1 = (rq + w) // CELL_DMM + half + 1
            w = ho + fo + a
            j0 = (cq - w) // CELL_DMM + half
            j1 = (cq + w) // CELL_DMM + half + 1
            i0 = 0 if i0 < 0 else i0
            j0 = 0 if j0 < 0 else j0
            i1 = n - 1 if i1 > n - 1 else i1
            j1 = n - 1 if j1 > n - 1 else j1
        for i in range(i0, i1 + 1):
            r = (i - half) * CELL_DMM
            dr = r - rq if r > rq else rq - r
            if seen and dr * dr > b2:
                for j in range(j0, j1 + 1):
                    cells[i * n + j] = 0
                continue
            df = dr - fh if dr > fh else 0        # radially to the fingers' windows
            for j in range(j0, j1 + 1):
                k = i * n + j
                if not cells[k]:
                    continue
                c = (j - half) * CELL_DMM
                dc = c - cq if c > cq else cq - c
                # across the jaws to a finger: the windows span ho..ho+fo either side
                if dc < ho:
                    dw = ho - dc
                elif dc > ho + fo:
                    dw = dc - ho - fo
                else:
                    dw = 0
                if df * df + dw * dw <= a2:
                    cells[k] = 0
                    continue
                db = dc - ho if dc > ho else 0   # to the beam's segment
                d = dr * dr + db * db
                if (seen and d > b2) or (not seen and d <= a2):
                    cells[k] = 0

    # ---- the end ----

    def _found(self, m, r, c, spread):
        x, y = self._world(r, c, m.px, m.py)
        self._edges(m, c)
        m.events.put_search(m, R_FOUND, x, y, m.pz, spread * 100)
        # approach and lift as high above it as the arm reaches, up to approach_height_um and the
        # lift's raise over it (it reaches the clear height there: a probe came down there, or
        # beside it)
        inverse = self.arm.inverse
        lo = self.z_clear
        hi = m.pz + self.cfg.approach_height_um + m.lift_up_um
        while hi - lo > 500:
            mid = (lo + hi) // 2
            try:
                inverse(x / 1000.0, y / 1000.0, mid / 1000.0, m.pp / 1000.0)
                lo = mid
            except ValueError:
                hi = mid
        try:
            inverse(x / 1000.0, y / 1000.0, hi / 1000.0, m.pp / 1000.0)
            lo = hi
        except ValueError:
            pass
        m.set_part_pose(x, y, m.pz, lo - m.pz)
        self._final(m, RESENSE_FOUND)

    def _edges(self, m, c):
        # Along the corridor that saw the part: on each side, the last probe that saw it and how
        # far on the first one that did not (0: none did).
        p = self.probed
        for side in (1, -1):
            r_seen = -32768
            for k in range(self.count):
                if p[3 * k + 1] == c and p[3 * k + 2] == SEEN:
                    r = p[3 * k]
                    if r_seen == -32768 or (r - r_seen) * side > 0:
                        r_seen = r
            gap = 0
            for k in range(self.count):
                if p[3 * k + 1] == c and p[3 * k + 2] == CLEAR:
                    d = (p[3 * k] - r_seen) * side
                    if d > 0 and (gap == 0 or d < gap):
                        gap = d
            x, y = self._world(r_seen, c, m.px, m.py)
            m.events.put_search(m, R_EDGE, x, y, self.z_probe + self.geo.beam_behind, gap * 100)

    def _finish(self, m, reason, answer, value=-1):
        m.events.put_search(m, reason, m.gx, m.gy, m.gz, self.count if value < 0 else value)
        self._final(m, answer)

    def _final(self, m, answer):
        # The attempt's own moves from where the search leaves the arm, planned at rest.
        self.answer = answer
        self.phase = _FINAL
        self.t_plan = m.now
        m.move(m.gx, m.gy, m.gz, m.pp, MOVE_PLAN, 0)

    def moves_ahead(self, m):
        # What the MOVE_PLAN in force will lead to, as motion.job_moves() gives moves (start,
        # kind, gentle, x, y, z, pitch; start -1 = where the arm is): a probe's way there and
        # down, or the attempt the search hands over to.
        h = m.hz                  # this attempt's height over the part (lower where the arm's reach ends)
        if self.phase == _FINAL:
            gx, gy, gz, pp = m.gx, m.gy, m.gz, m.pp
            return [(-1, MOVE_FREE, 0, gx, gy, gz + h, pp), (0, MOVE_LINE, 0, gx, gy, gz, pp),
                    (1, MOVE_LINE, 1, gx, gy, gz + h + m.up_um, pp),
                    (2, MOVE_FREE, 1, m.tx, m.ty, m.tz + self.cfg.approach_height_um, m.tp),
                    (1, MOVE_LINE, 0, gx, gy, gz + h, pp)]
        x, y, pp = self.qx, self.qy, m.pp
        if self.count == 0:
            return [(-1, MOVE_FREE, 0, x, y, self.z_app, pp), (0, MOVE_LINE, 0, x, y, self.z_clear, pp),
                    (1, MOVE_LINE, 0, x, y, self.z_probe, pp)]
        return [(-1, MOVE_LINE, 0, x, y, self.z_clear, pp), (0, MOVE_LINE, 0, x, y, self.z_probe, pp)]


def _reach_edge(inverse, ux, uy, z_mm, pitch_deg, inside, outside):
    # Along the line through the base axis (unit ux, uy), between a reachable distance and
    # one that may not be: the furthest reachable one, to 0.25 mm (mm).
    try:
        inverse(ux * outside, uy * outside, z_mm, pitch_deg)
        return outside
    except ValueError:
        pass
    try:
        inverse(ux * inside, uy * inside, z_mm, pitch_deg)
    except ValueError:
        return inside
    while abs(outside - inside) > 0.25:
        mid = (inside + outside) / 2.0
        try:
            inverse(ux * mid, uy * mid, z_mm, pitch_deg)
            inside = mid
        except ValueError:
            outside = mid
    return inside


def _d2(r, c, r1, r2, c1, c2):
    # Squared distance from (r, c) to the rectangle [r1, r2] x [c1, c2] (dmm).
    dr = r1 - r if r < r1 else (r - r2 if r > r2 else 0)
    dc = c1 - c if c < c1 else (c - c2 if c > c2 else 0)
    return dr * dr + dc * dc
