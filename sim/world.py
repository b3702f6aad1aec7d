"""One cycle's physical world: the scenario's set-up, the plant, the injected faults, the judge.

Every engine (the in-process simulator, the virtual board's world service, hardware in the loop)
drives the world through the same exchange, once per control period, in this order:

    exchange(pulses, state, advance_ms)
        1. the board's servo pulses reach the plant (the judge notes the jaw opening in PLACE)
        2. the plant advances advance_ms
        3. the board's machine state is noted (for the scenario's "N ms into STATE" triggers)
        4. injections due by now are applied; a brownout returns a controller reset once its
           sag has brought the rail down (the controller runs, and can see the rail, until then)
        5. the judge samples the truth every sample_ms
    then the engine reads the sensors for the board's next tick.

The world reads the board only through what crosses a real board's pins and link: pulse widths
and the state the firmware reports. Ground truth (plant.truth()) goes to the judge only.
"""
import mujoco

from surepick.shared_fsm import servo_cal, states
from surepick.shared_fsm.config import Config

from . import scenarios, seeds
from .judge import Judge
from .plant import N_SERVOS, Plant

SAMPLE_MS = 10            # ground truth and trajectory sampling period
BATCH_SAMPLE_MS = 20      # ground truth only (batches): the judge needs no finer steps
JUDGE_TAIL_MS = 1300      # keep simulating after the machine is done: "resting for 1 s" needs it
CYCLE_LIMIT_MS = 60000    # a cycle that has not ended by then is reported as incomplete
BOOT_MS = 250             # controller restart time after a brownout or power cut
CAL_AT_MS = 100           # plant ms of the tick in which the host asks for the current calibration
GRIPPER = 4               # servo index of the jaw


def _um(pose_mm):
    return tuple(int(round(v * 1000)) for v in pose_mm[:4])


class ControllerReset:
    """The controller lost power at this exchange (brownout on a shared rail, power cut): it
    gets no reply; the servos are limp for down_ms before it boots again."""

    def __init__(self, why, t_ms, down_ms):
        self.why = why
        self.t_ms = t_ms
        self.down_ms = down_ms

    def __repr__(self):
        return "ControllerReset(%r at %d ms, down %d ms)" % (self.why, self.t_ms, self.down_ms)


_ARM_JOINTS = ("base_yaw", "shoulder", "elbow", "wrist", "finger_l", "finger_r")


def _carry_arm(old, new):
    # The arm's joints (positions, speeds) of plant `old` into plant `new`; the part stays new's.
    for name in _ARM_JOINTS:
        jo, jn = old.m.joint(name).id, new.m.joint(name).id
        new.d.qpos[new.m.jnt_qposadr[jn]] = old.d.qpos[old.m.jnt_qposadr[jo]]
        new.d.qvel[new.m.jnt_dofadr[jn]] = old.d.qvel[old.m.jnt_dofadr[jo]]
    mujoco.mj_forward(new.m, new.d)


class World:
    """scenario: a scenario or its name; overrides: its parameters (validated); seed, cycle: as a run
    names them; plant_params: a PlantParams (fitted or perturbed) or None; noise_seed: another
    sensor-noise seed than the run's (fit re-simulates with other noise than the record); cfg: the
    run's machine Config (the judge's lift height is its approach height), None for the defaults."""

    plant_class = Plant      # sim/fast_world.py derives the in-process engine's from these
    judge_class = Judge

    def __init__(self, scenario="nominal", overrides=None, seed=0, cycle=0, plant_params=None,
                 sample_ms=SAMPLE_MS, noise_seed=None, cfg=None, arm=None, default_part=None):
        # a Scenario, or its name (KeyError/ValueError name the valid ones)
        self.scenario = scenario if hasattr(scenario, "setup") else scenarios.get(scenario)
        self.values = self.scenario.resolve(overrides)
        self.seed = int(seed)
        self.cycle = int(cycle)
        self.arm = arm                                # an Arm, or None: the reference arm
        self.setup = self.scenario.setup(self.values, scenarios.rng_for(self.seed, self.cycle), arm)
        s = self.setup
        if default_part is not None and s["part"] == scenarios.DEFAULT_PART and not (s.get("feeder") or s.get("tray_chute")):
            # a part spec in place of the scenario's usual 25 mm cube (a stand-in bench's own part,
            # sim/standin.py); its job is a cube of that width
            s["part_spec"], s["part"], s["part_width_mm"] = default_part, None, default_part["size_mm"][1]
        # part_spec: the named part with another mass or friction (a sweep's part axes)
        self.plant = self.plant_class(part=s.get("part_spec") or s["part"], params=plant_params, seed=seeds.derive("sensor_noise", self.seed, self.cycle) if noise_seed is None else noise_seed,
                                      part_pose=s["part_pose"], obstacle=s["obstacle"], debris=s["debris"], arm=arm,
                                      others=s.get("others") or ())
        self._others_from = self.plant.others_pos_mm()  # where the other parts (two_parts) began
        self.feeder = None                             # the feeder scenario's (sim/feeder.py)
        if s.get("feeder"):
            from surepick.sim.feeder import Feeder
            from surepick.sim.plant import PART_HEIGHT_MM
            from surepick.shared_fsm import kinematics
            b = (arm or kinematics.REFERENCE).bench
            self.feeder = Feeder(self.plant, ["part"] + ["part%d" % (i + 2) for i in range(len(s["others"]))],
                                 s["feeder"]["stash_xy_mm"], s["feeder"]["draws"], s["feeder"]["pad_xy_mm"], b["pad_top_mm"],
                                 PART_HEIGHT_MM[s["part"]], (b["bin_x_mm"], b["bin_y_mm"]),
                                 b["bin_inner_half_mm"], b["bin_wall_top_mm"])
        self.tray_chute = None                         # the tray scenario's (sim/chute.py)
        if s.get("tray_chute"):
            from surepick.sim.chute import TrayChute
            from surepick.sim.plant import PART_HEIGHT_MM
            from surepick.shared_fsm import kinematics
            b = (arm or kinematics.REFERENCE).bench
            self.tray_chute = TrayChute(self.plant, ["part"] + ["part%d" % (i + 2) for i in range(len(s["others"]))],
                                        (b["bin_x_mm"], b["bin_y_mm"]), b["bin_inner_half_mm"], b["bin_wall_top_mm"],
                                        s["tray_chute"]["shelf_xy_mm"], PART_HEIGHT_MM[s["part"]] / 2.0)
        self.cfg = cfg if cfg is not None else Config()
        self.judge = self.judge_class(self.cfg.approach_height_um / 1000.0)
        self.sample_ms = sample_ms
        self._next_sample = 0
        self._pending = list(s["injections"])      # (trigger, fault, kwargs) from the scenario
        self._state = None                         # the board's state name, as last reported
        self._noted = None                         # ...as it was given (a number or the name)
        self._state_since = 0
        self._visits = {}                          # state name -> how often the board entered it
        self.last_injection_ms = None              # when the last scheduled fault was applied
        self._last_grip_pulse = None
        self.resets = []                           # ControllerReset, in order
        self._reset_due = None                     # (t_ms, why, down_ms): a reset at the end of a sag
        self._pulses = None                        # the pulses the board drives now
        self._estop = None                         # e-stop press: what the board drove then
        self.truth = None                          # the last truth sampled, and when
        self.truth_ms = -1
        self.on_sample = None                      # callable(t_ms, truth) after each sample
        # Every sensor reading a board's pins see, in one call: the plant's own read_inputs,
        # bound here so the engines' per-tick read costs no extra frame (a bench may wrap it).
        self.read_inputs = self.plant.read_inputs

    @property
    def now_ms(self):
        return self.plant.now_ms

    def job_um(self):
        """The scenario's job as an operator would send it: (pick, place, width_um), um/mdeg."""
        s = self.setup
        width = s["part_width_mm"]
        pick = s["pick_mm"] or scenarios.pick_pose_mm(s["part"], width, self.arm)
        place = scenarios.place_pose_mm(s["part"], self.arm)
        return _um(pick), _um(place), int(round(width * 1000))

    def continue_from(self, old):
        """Make this fresh world (the scenario's next cycle: the part respawned on its pad, the arm
        at home, a fresh judge) take over from `old` while the same board runs on, as when a
        person puts the part back: on old's clock (it is the board's clock), the scenario's
        timed faults armed again relative to now, the board's state, pulses and history of
        resets carried over, and the arm where it stands (nobody moved it: a jump home would draw a
        current the board's rail watch sees). Refused (RuntimeError) while the board's machine is busy in old."""
        if old._state not in (None, "IDLE"):
            raise RuntimeError("the arm is busy (state %s): reset the world when the job has "
                               "ended, or abort it first" % old._state)
        t = old.now_ms
        plant = self.plant
        _carry_arm(old.plant, plant)
        plant.now_ms = t
        plant._next_frame_ms = t       # its next PWM frame and event are now
        plant._next_event_ms = t
        self._pending = [((trig[0], trig[1] + t),) + item[1:] if trig[0] == "at" else item
                         for item in self._pending for trig in (item[0],)]
        self._next_sample = t
        self._state, self._state_since = old._state, old._state_since
        self._noted = None
        self._last_grip_pulse = old._last_grip_pulse
        self._pulses = old._pulses
        self.resets = old.resets
        self.on_sample = old.on_sample

    # ---- the exchange ----

    def exchange(self, pulses, state, advance_ms):
        """pulses: the five pulse widths the board drives (0 = PWM off), or None when the board
        drives none (not booted); state: its machine state (name or number) or None when not
        known. -> a ControllerReset when a brownout took the controller down, else None.
        Runs once per control period: advance()'s steps are inlined, the calls that usually
        have nothing to do (a state change, injections, a truth sample) made only when they do."""
        plant = self.plant
        if pulses is not None:
            plant.set_pulses(pulses)
            self._watch_release(pulses[GRIPPER])
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
        reset = (self._apply_injections() if self._pending or self._reset_due is not None
                 else None)
        if plant.now_ms >= self._next_sample:
            self.sample()
        return reset

    def advance(self, advance_ms, state=None):
        """Steps 2-5 of the exchange (no pulse change)."""
        if advance_ms:
            self.plant.advance(advance_ms)
        if state is not None:
            self.note_state(state)
        reset = self._apply_injections()
        self.sample()
        return reset

    def note_state(self, state):
        self._noted = state
        if isinstance(state, int):
            state = states.name(state)
        if state != self._state:
            self._state = state
            self._state_since = self.plant.now_ms
            if state is not None:
                self._visits[state] = self._visits.get(state, 0) + 1
            self.judge.note_state(self.plant.now_ms, state)

    def limp(self, down_ms, period_ms):
        """The controller is in reset: no PWM for down_ms, time moving on one period at a time
        (the judge keeps sampling; time-triggered injections still fire)."""
        self._state = self._noted = None
        self.plant.set_pulses([0] * N_SERVOS)
        self._pulses = [0] * N_SERVOS
        self._last_grip_pulse = 0
        end = self.plant.now_ms + down_ms
        while self.plant.now_ms < end:
            self.advance(min(period_ms, end - self.plant.now_ms))
        self.judge.note_restart(self.plant.now_ms)     # the controller boots again now

    def inject(self, fault, **kw):
        """Apply a fault now (tests, the board supervisor); a brownout also resets the controller
        (returned)."""
        self.plant.inject(fault, **kw)
        if fault == "brownout":
            down = int(kw.get("duration_ms", 100)) + BOOT_MS
            sag = int(kw.get("sag_ms", 0))
            if sag <= 0:
                return self._controller_reset("brownout", down)
            # The controller (on the shared rail) resets when the sag reaches the bottom.
            self._reset_due = (self.plant.now_ms + sag, "brownout", down)
            return None
        if fault == "estop" and kw.get("on", True) and self._estop is None:
            p = self._pulses
            self._estop = {"t_ms": self.plant.now_ms, "pulses": None if p is None else list(p),
                           "jaw_cmd_moved_um": 0, "arm_cmd_moved_us": 0}
            self.judge.estop = self._estop
        return None

    def power_cut(self):
        """The controller's supply is cut now (not the servos' rail)."""
        return self._controller_reset("power_cut", BOOT_MS)

    def _controller_reset(self, why, down_ms):
        r = ControllerReset(why, self.plant.now_ms, down_ms)
        self.resets.append(r)
        self._state = self._noted = None
        return r

    def pending(self):
        """Injections (or a sag's reset) not applied yet."""
        return bool(self._pending) or self._reset_due is not None

    def _apply_injections(self):
        if self._reset_due is not None and self.plant.now_ms >= self._reset_due[0]:
            _, why, down = self._reset_due
            self._reset_due = None
            return self._controller_reset(why, down)
        if not self._pending:
            return None
        t = self.plant.now_ms
        reset = None
        for item in list(self._pending):
            trigger, fault, kw = item
            if trigger[0] == "at":
                fire = t >= trigger[1]
            else:
                # ("state", NAME, ms into it[, which visit of NAME, 1 = the first])
                fire = (self._state == trigger[1] and t - self._state_since >= trigger[2]
                        and (len(trigger) < 4 or self._visits.get(trigger[1]) == trigger[3]))
            if fire:
                self._pending.remove(item)
                self.last_injection_ms = t
                r = self.inject(fault, **kw)
                reset = reset or r
        return reset

    # ---- the judge ----

    def sample(self):
        """Feeds the judge when a sample is due (kept in .truth / .truth_ms)."""
        t = self.plant.now_ms
        if t < self._next_sample:
            return
        self.truth = self.plant.truth()
        self.truth_ms = t
        self.judge.sample(t, self.truth)
        self._next_sample = t - t % self.sample_ms + self.sample_ms
        if self.on_sample is not None:
            self.on_sample(t, self.truth)

    def _watch_estop(self, pulses):
        # After an e-stop press: how far the board's commands moved from what it drove at the
        # press (the jaw as an opening through the plant's own calibration; the arm in us).
        e = self._estop
        at = e["pulses"]
        if at is None:
            e["pulses"] = at = list(pulses)
        if pulses[GRIPPER] and at[GRIPPER]:
            cal = self.plant.servos.cals[GRIPPER]
            jaw = (servo_cal.servo_mdeg_from_pulse(cal, pulses[GRIPPER])
                   - servo_cal.servo_mdeg_from_pulse(cal, at[GRIPPER])) // servo_cal.JAW_MDEG_PER_UM
            if abs(jaw) > e["jaw_cmd_moved_um"]:
                e["jaw_cmd_moved_um"] = abs(jaw)
        for i in range(GRIPPER):
            if pulses[i] and at[i] and abs(pulses[i] - at[i]) > e["arm_cmd_moved_us"]:
                e["arm_cmd_moved_us"] = abs(pulses[i] - at[i])

    def _watch_release(self, grip_pulse):
        # The moment the machine opens the jaw to place: the gripper's pulse widening while the
        # board says PLACE. Before it, a part that leaves the fingers was dropped.
        if (self.judge.release_ms is None and self._state == "PLACE"
                and self._last_grip_pulse is not None and self._opens(grip_pulse, self._last_grip_pulse)):
            self.judge.release_ms = self.plant.now_ms
        self._last_grip_pulse = grip_pulse

    def _opens(self, grip_pulse, last):
        # Does this pulse change open the jaw? Widening opens it, unless the plant's own gripper
        # servo is mounted mirrored (its hidden calibration, e.g. a stand-in bench's): then
        # narrowing does (a pulse of 0 is the PWM off, never an opening).
        if self.plant.servos.cals[GRIPPER][3]:
            return 0 < grip_pulse < last
        return grip_pulse > last

    def verdict(self):
        out, reason, d = self.judge.verdict()
        if self._others_from:
            # how far each other part moved across its support (a search may touch it, never push it)
            d["others_moved_mm"] = [round(((b[0] - a[0]) ** 2 + (b[1] - a[1]) ** 2) ** 0.5, 2)
                                    for a, b in zip(self._others_from, self.plant.others_pos_mm())]
        return out, reason, d
