"""The world's per-tick work done with less Python: the in-process engine's path.

FastWorld is sim.world.World, FastPlant is sim.plant.Plant and FastJudge is sim.judge.Judge with
the calls that run every control period (the exchange, the six readings, the judge's samples)
rewritten to do the same arithmetic in fewer Python calls:

- the six readings in one function: the same float operations in the same order, the same draws
  from the same noise streams, so every reading is bit-identical;
- the judge's samples read only what the judge decides from (where the part is, what touches it,
  the joints, the servos at stall): no grip force, rail, beam or tilt, which only a trajectory
  row shows; with a trajectory kept the full truth is sampled as before;
- the scenario's injections looked at only when one can fire (an "at" time reached, or the
  board's state held long enough), not every period;
- the judge's restart-window speeds worked out only while a window is open.

The classes they derive from are the reference: tests/host/engines/test_fast_world.py runs every
scenario through both and holds this path to the same events, readings, verdicts and tick rows.
"""
import math

import mujoco
import numpy as np

from .judge import RESTART_WINDOW_MS, Judge
from .plant import _CHUNK_MS, GRIPPER, N_SERVOS, Plant
from .servo_model import _STALL_STILL_RAD_S
from .world import World

_NEVER = float("inf")


class FastPlant(Plant):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._force = self.d.actuator_force          # views into MjData and mjModel (hot path)
        self._qvel = self.d.qvel
        self._act_vel = self.d.actuator_velocity
        self._force_hi = self.m.actuator_forcerange[:, 1]   # frame_update writes the limits in place
        # A serial arm's actuators are its servo slots (no slot without a servo): rows read as they are.
        self._slots_are_actuators = not self.servos.missing
        self._subtract = np.subtract
        self._ray = mujoco.mj_ray

    def advance(self, ms):
        # Plant.advance with the switch's pad travel read as a float (.item) and the chunk's
        # bounds worked out with fewer operations: the same chunks, steps and switch samples.
        if ms.__class__ is not int or ms < 1:
            if ms < 1 or ms != int(ms):
                raise ValueError("advance needs a whole number of ms >= 1, got %r" % (ms,))
            ms = int(ms)
        m, d = self.m, self.d
        step = mujoco.mj_step               # looked up per call, so a benchmark can time it
        switch = self.switch
        pad = self._qpos.item
        adr = self._pad_adr
        trip_m, release_m = self._trip_m, self._release_m
        step_ms = self._step_ms
        now = self.now_ms
        end = now + ms
        nxt = self._next_event_ms
        while now < end:
            if now >= nxt:
                self.now_ms = now
                self._event()
                nxt = self._next_event_ms
            stop = now + _CHUNK_MS
            if stop > end:
                stop = end
            if stop > nxt:
                stop = nxt
            if stop - now == step_ms:
                step(m, d)
            else:
                self._step_odd(step, stop - now)
            now = stop
            x = pad(adr)
            if switch.pressed:
                if x < release_m:
                    switch.update(now, x * 1000.0)
            elif x >= trip_m:
                switch.update(now, x * 1000.0)
        self.now_ms = now
        self._rail_ms = -1

    def read_inputs(self):
        # Plant.read_inputs with Pot, CurrentSense, RailSense, Microswitch, BreakBeam and
        # quantise_u16 inlined (same expressions, same order of operations and of noise draws).
        sv = self.servos
        k = sv._k
        now = self.now_ms
        pot = self.pot
        if pot.broken_rail is not None:
            pot_u16 = 65535 if pot.broken_rail else 0
        else:
            v = pot._zero + pot.p.counts_per_mm * (self._act_length.item(self._grip_act) * self._jaw_mm_per_rad) + pot._normal()
            raw = int(v * (1.0 / 16.0) + 0.5)
            raw = 0 if raw < 0 else (4095 if raw > 4095 else raw)
            pot_u16 = (raw << 4) | (raw >> 8)
        cur = self.current
        grip_ma = sv._idle[GRIPPER] + k[GRIPPER] * abs(self._force.item(self._grip_act))
        v = cur.p.offset_counts + cur.offset_error_counts + grip_ma * cur._counts_per_ma + cur._normal()
        raw = int(v * (1.0 / 16.0) + 0.5)
        raw = 0 if raw < 0 else (4095 if raw > 4095 else raw)
        cur_u16 = (raw << 4) | (raw >> 8)
        if self._rail_ms != now:
            f = self._force.tolist() if self._slots_are_actuators else sv.slot_values(self._force)
            total = (sv._idle_total + k[0] * abs(f[0]) + k[1] * abs(f[1]) + k[2] * abs(f[2])
                     + k[3] * abs(f[3]) + k[4] * abs(f[4]))
            rail = self.rail
            if now < rail.forced_until_ms:
                self._rail_now_mv = rail.mv(now, total)
            else:
                rp = rail.p
                self._rail_now_mv = rp.nominal_mv - total * rp.source_mohm / 1000.0
            self._rail_ms = now
        rs = self.rail_sense
        raw = int((self._rail_now_mv * rs._counts_per_mv + rs._normal()) * (1.0 / 16.0) + 0.5)
        raw = 0 if raw < 0 else (4095 if raw > 4095 else raw)
        rail_u16 = (raw << 4) | (raw >> 8)
        sw = self.switch
        if sw.stuck_level is not None:
            switch = sw.stuck_level
        elif now < sw.bounce_until_ms:
            switch = sw._bits[now - sw.bounce_start_ms]
        else:
            switch = 0 if sw.pressed else 1
        beam = self.beam                    # BreakBeam.level, inlined
        if beam.blocked:
            beam_level = 0
        else:
            self._subtract(beam.recv, beam.emit, beam._vec)
            x = self._ray(self.m, self.d, beam.emit, beam._vec, beam.groups, 1, -1, None)
            beam_level = 0 if 0.0 <= x < 1.0 else 1
        return pot_u16, cur_u16, rail_u16, self.estop, switch, beam_level

    def judge_truth(self):
        # What Judge.sample and Judge.verdict read, as Plant.truth() gives it (the joint slots'
        # angles and speeds and ServoBank.at_stall inlined for a serial arm).
        tr = self._truth
        qpos = self._qpos.tolist()
        qvel = self._qvel.tolist()
        if self._slots_are_actuators and tr.q_adr is not None:
            deg = math.degrees
            f = self._force.tolist()
            v = self._act_vel.tolist()
            lims = self._force_hi.tolist()
            powered = self.servos.powered
            out = {
                "joint_angles_deg": [deg(qpos[a]) for a in tr.q_adr],
                "joint_speeds_dps": [deg(qvel[a]) for a in tr.v_adr],
                "servos_at_stall": [bool(powered[a] and lims[a] > 0.0 and abs(f[a]) >= 0.9 * lims[a]
                                         and abs(v[a]) < _STALL_STILL_RAD_S) for a in range(N_SERVOS)],
            }
        else:
            out = {
                "joint_angles_deg": tr.slot_angles_deg(qpos, tr.q_adr, tr.slot_q),
                "joint_speeds_dps": tr.slot_angles_deg(qvel, tr.v_adr, tr.slot_v),
                "servos_at_stall": self.servos.at_stall(self.d),
            }
        if not tr.has_part:
            out.update(part_pos_mm=None, part_speed_mps=0.0, finger_contact=False, support_contact=False,
                       in_bin=False)
            return out
        a = tr.part_qpos
        x, y, z = qpos[a:a + 3]
        vx, vy, vz = qvel[tr.part_qvel:tr.part_qvel + 3]
        fingers = support = bin_touch = False
        pg = tr.part_geom
        for g1, g2 in self.d.contact.geom.tolist():
            if g1 == pg:
                other = g2
            elif g2 == pg:
                other = g1
            else:
                continue
            if other in tr.finger_ids:
                fingers = True
            elif other in tr.support_ids:
                support = True
            elif other in tr.bin_ids:
                bin_touch = True
        out.update(
            part_pos_mm=[x * 1000.0, y * 1000.0, z * 1000.0],
            part_speed_mps=math.sqrt(vx * vx + vy * vy + vz * vz),   # only held against PLACE_SPEED_MPS
            finger_contact=fingers,
            support_contact=support,
            bin_contact=bin_touch,
            in_bin=(abs(x - tr.bin_xy[0]) < tr.bin_half and abs(y - tr.bin_xy[1]) < tr.bin_half
                    and z < tr.bin_top),
        )
        return out


class FastJudge(Judge):
    def _approach(self, t_ms, truth):
        # Judge._approach with the longest running stall found without building a list.
        if truth.get("servos_at_stall") is not None:
            d = 0
            for s in self.stall_since:
                if s is not None and t_ms - s > d:
                    d = t_ms - s
            if d > self.approach_stall_ms:
                self.approach_stall_ms = d
        pos = truth["part_pos_mm"]
        if pos is not None:
            if self._approach_from is None:
                self._approach_from = [float(v) for v in pos]
            d = math.hypot(pos[0] - self._approach_from[0], pos[1] - self._approach_from[1])
            if d > self.approach_moved_mm:
                self.approach_moved_mm = d

    def _arm(self, t_ms, truth):
        # Judge._arm, with the joint speed worked out only while a restart window is open (it
        # is read nowhere else); the stall stretches and the last joint angles as before.
        stall = truth.get("servos_at_stall")
        if stall is not None:
            since = self.stall_since
            for i in range(N_SERVOS):
                if stall[i]:
                    if since[i] is None:
                        since[i] = t_ms
                    d = t_ms - since[i]
                    if d > self.longest_stall_ms[i]:
                        self.longest_stall_ms[i] = d
                else:
                    since[i] = None
        q = truth.get("joint_angles_deg")
        if self._windows:
            speed = max(abs(v) for v in truth["joint_speeds_dps"]) if "joint_speeds_dps" in truth else 0.0
            if q is not None and self._last_q is not None and t_ms > self._last_q[0]:
                dt = (t_ms - self._last_q[0]) / 1000.0
                speed = max([speed] + [abs(a - b) / dt for a, b in zip(q, self._last_q[1])])
            pos = truth["part_pos_mm"]
            for w in list(self._windows):
                since = t_ms - w["t_ms"]
                if since > RESTART_WINDOW_MS:
                    self._windows.remove(w)
                    continue
                w["window_ms"] = since
                if speed > w["max_joint_speed_dps"]:
                    w["max_joint_speed_dps"] = speed
                if pos is not None:
                    if w["_from"] is None:
                        w["_from"] = [float(v) for v in pos]
                    d = math.sqrt(sum((a - b) ** 2 for a, b in zip(pos, w["_from"])))
                    if d > w["part_moved_mm"]:
                        w["part_moved_mm"] = d
        if q is not None:
            self._last_q = (t_ms, list(q))


class FastWorld(World):
    """World with the per-period work of FastPlant and FastJudge. judge_only: the judge's samples
    carry only what it reads (no trajectory is kept from them)."""

    plant_class = FastPlant
    judge_class = FastJudge

    def __init__(self, *a, judge_only=False, **kw):
        super().__init__(*a, **kw)
        self.judge_only = judge_only
        self._check_ms = None      # when the next injection (or a sag's reset) can fire; None: work it out

    def exchange(self, pulses, state, advance_ms):
        # World.exchange with set_pulses and _watch_release inlined and the injections looked at
        # only from the moment one can fire.
        plant = self.plant
        if pulses is not None:
            if len(pulses) != N_SERVOS:
                plant.set_pulses(pulses)           # raises, naming the count
            plant.servos.pulses[:] = pulses
            grip = pulses[GRIPPER]
            last = self._last_grip_pulse
            if (last is not None and grip != last and self._state == "PLACE"
                    and self.judge.release_ms is None and self._opens(grip, last)):
                self.judge.release_ms = plant.now_ms
            self._last_grip_pulse = grip
            self._pulses = list(pulses)
            if self._estop is not None:
                self._watch_estop(pulses)
        if advance_ms:
            plant.advance(advance_ms)
        if self.feeder is not None:
            self.feeder.step(plant.now_ms)
        if self.tray_chute is not None:
            self.tray_chute.step(plant.now_ms)
        if state is not None and state != self._noted:
            self.note_state(state)
        reset = None
        if self._pending or self._reset_due is not None:
            check = self._check_ms
            if check is None:
                check = self._check_ms = self._next_check_ms()
            if plant.now_ms >= check:
                self._check_ms = None
                reset = self._apply_injections()
        if plant.now_ms >= self._next_sample:
            self.sample()
        return reset

    def _next_check_ms(self):
        # The earliest plant time at which World._apply_injections could do anything, from the
        # state as it is (note_state and _apply_injections forget it when they change that).
        t = _NEVER
        if self._reset_due is not None:
            t = self._reset_due[0]
        for trigger, _, _ in self._pending:
            if trigger[0] == "at":
                at = trigger[1]
            elif (self._state == trigger[1]
                  and (len(trigger) < 4 or self._visits.get(trigger[1]) == trigger[3])):
                at = self._state_since + trigger[2]
            else:
                continue
            if at < t:
                t = at
        return t

    def note_state(self, state):
        super().note_state(state)
        self._check_ms = None

    def inject(self, fault, **kw):
        r = super().inject(fault, **kw)
        self._check_ms = None
        return r

    def continue_from(self, old):
        super().continue_from(old)
        self._check_ms = None

    def advance(self, advance_ms, state=None):
        self._check_ms = None
        return super().advance(advance_ms, state)

    def sample(self):
        if not self.judge_only:
            return super().sample()
        t = self.plant.now_ms
        if t < self._next_sample:
            return
        self.truth = self.plant.judge_truth()
        self.truth_ms = t
        self.judge.sample(t, self.truth)
        self._next_sample = t - t % self.sample_ms + self.sample_ms
        if self.on_sample is not None:
            self.on_sample(t, self.truth)
