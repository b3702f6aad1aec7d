# Runs one pick-and-place cycle of a scenario on the MuJoCo plant: builds the scene, drives the
# simulated board at the firmware's loop rate, injects the scenario's faults, samples ground
# truth for the judge and the trajectory, and returns the cycle's record. With a trajectory it
# also keeps the run record's tick trace (host/runrecord.py): what the machine read at every
# step and what it commanded, captured around Machine.step itself.
import operator
import time

from surepick.shared_fsm import codes
from surepick.shared_fsm import kinematics
from surepick.shared_fsm import states
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Job

from surepick.sim import scenarios
from surepick.sim.judge import PLACE_HOLD_MS, Judge
from surepick.sim.plant import Plant
from surepick.engines.sim_board import SimBoard

SAMPLE_MS = 10            # ground truth and trajectory sampling period
BATCH_SAMPLE_MS = 20      # ground truth only (batches): the judge needs no finer steps
JUDGE_TAIL_MS = 1300      # keep simulating after the machine is done: "resting for 1 s" needs it
CYCLE_LIMIT_MS = 60000    # a cycle that has not ended by then is reported as incomplete
BOOT_MS = 250             # controller restart time after a brownout

TRAJECTORY_COLUMNS = (
    "t_ms", "state", "attempt", "fault", "pot_counts", "switch_pressed", "current_ma", "beam_broken",
    "rail_mv", "jaw_cmd_um", "jaw_true_mm", "pad_travel_mm", "part_x_mm", "part_y_mm", "part_z_mm",
    "part_speed_mps", "finger_contact", "support_contact", "in_bin",
    "q0_cmd_mdeg", "q1_cmd_mdeg", "q2_cmd_mdeg", "q3_cmd_mdeg",
    "q0_mdeg", "q1_mdeg", "q2_mdeg", "q3_mdeg",
)


def _um(pose_mm):
    return (int(round(pose_mm[0] * 1000)), int(round(pose_mm[1] * 1000)),
            int(round(pose_mm[2] * 1000)), int(round(pose_mm[3] * 1000)))


def machine_belief(events, ended):
    # What the machine itself said about a cycle, from its event records: ("placed", None, None),
    # ("fault", fault name, state it faulted in) or ("incomplete", None, None). Every engine
    # (sim, virtual board, HIL) judges the machine's belief with this one rule.
    if not ended:
        return "incomplete", None, None
    faults = [e for e in events if e[2] == codes.K_FAULT]
    if faults:
        return "fault", codes.name(faults[-1][5]), states.name(faults[-1][3])
    if any(e[2] == codes.K_TRANSITION and e[5] == codes.R_PLACED for e in events):
        return "placed", None, None
    return "incomplete", None, None


def check_pose(x_um, y_um, z_um, pitch_mdeg):
    kinematics.inverse(x_um / 1000.0, y_um / 1000.0, z_um / 1000.0, pitch_mdeg / 1000.0)


_INPUT_NAMES = ("pot_counts", "switch_pressed", "current_ma", "beam_broken", "estop", "rail_mv",
                "arrived_seq", "error_seq", "jaw_done")
# The run record's tick row (host/runrecord.py TICK_COLUMNS): what step() read, what it commanded.
_get_inputs = operator.attrgetter(*_INPUT_NAMES)
_get_outputs = operator.attrgetter("move_seq", "move_kind", "move_gentle", "x_um", "y_um", "z_um",
                                   "pitch_mdeg", "jaw_um", "hold")


def _pulses_of(board):
    return getattr(board, "pulses", None) or (0, 0, 0, 0, 0)


def event_dict(e):
    return {"seq": e[0], "t_ms": e[1], "kind": codes.KIND_NAMES[e[2]], "from": states.name(e[3]),
            "to": states.name(e[4]), "reason": codes.name(e[5]), "attempt": e[6],
            "pot_counts": e[7], "switch_pressed": e[8], "current_ma": e[9], "beam_broken": e[10],
            "present_mask": e[11]}


class CycleRun:
    def __init__(self, scenario, values, seed, cycle, plant_params=None, cfg_overrides=None):
        self.scenario = scenario
        self.values = values
        self.seed = seed
        self.cycle = cycle
        rng = scenarios.rng_for(seed, cycle)
        self.setup = scenario.setup(values, rng)
        s = self.setup
        self.plant = Plant(part=s["part"], params=plant_params, seed=seed * 1000 + cycle,
                           part_pose=s["part_pose"], obstacle=s["obstacle"], debris=s["debris"])
        self.cfg = Config(cfg_overrides)
        self.board = SimBoard(self.plant, self.cfg)
        self.lives = 1
        self.ticks = []          # run-record rows (host/runrecord.py TICK_COLUMNS minus cycle)
        self._record_ticks = True
        self._watch_steps()      # from the first step: the calibration's idle steps count too
        self.board.calibrate_current()
        self.board_cal = {"current_offset_counts": int(self.board.current_offset)}
        self.initial_jaw_um = int(self.board.machine.out.jaw_um)
        self.rest_joints = list(self.board.motion.joints)
        self.rest_jaw = self.board.motion.jaw_um
        self.judge = Judge(self.cfg.approach_height_um / 1000.0)
        self.events = []
        self.trajectory = []
        self.lives = 1
        self._seen = 0
        self._pending = list(s["injections"])
        self._state_since = {}
        self._reboot_at = None
        self.viewer = None
        self.restarts = []       # controller restarts: when, and what the booting machine read
        self.job = None

    def run(self, record_trajectory=True):
        s = self.setup
        width = s["part_width_mm"]
        pick = s["pick_mm"] or scenarios.pick_pose_mm(s["part"], width)
        place = scenarios.place_pose_mm(s["part"])
        job = Job(_um(pick), _um(place), int(width * 1000))
        self.job = {"pick_um": list(job.pick), "place_um": list(job.place), "t_ms": self.board.now,
                    "part_width_um": job.part_width_um, "max_attempts": job.max_attempts}
        self._record_ticks = record_trajectory
        sample_ms = SAMPLE_MS if record_trajectory else BATCH_SAMPLE_MS
        if not record_trajectory:
            self.ticks = []
        err = self.board.machine.start_job(job, check_pose)
        if err:
            raise ValueError("the scenario's job was refused: error %d" % err)
        t_start = time.perf_counter()
        t = 0
        done_at = None
        plant = self.plant
        view = None
        if getattr(self, "viewer", None):
            import mujoco.viewer
            view = mujoco.viewer.launch_passive(plant.m, plant.d)
        while t < CYCLE_LIMIT_MS:
            self._inject(t)
            if self._reboot_at is not None:
                if t >= self._reboot_at:
                    self._reboot()
                else:
                    plant.set_pulses([0, 0, 0, 0, 0])  # controller in reset: no PWM
                    plant.advance(self.cfg.loop_period_ms)
            else:
                self.board.tick()
                self._drain()
            t = plant.now_ms
            if view is not None and t % 20 == 0:
                view.sync()
                lag = t / 1000.0 - (time.perf_counter() - t_start)
                if lag > 0:
                    time.sleep(lag)  # real time, so a person can watch
            if t % sample_ms == 0:
                truth = plant.truth()
                self.judge.sample(t, truth)
                if record_trajectory:
                    self.trajectory.append(self._row(t, truth))
            m = self.board.machine
            if self.judge.release_ms is None and m.state == states.PLACE and m.out.jaw_um > m.grip_jaw_um:
                self.judge.release_ms = t
            if done_at is None and self._reboot_at is None and not m.busy():
                done_at = t
            if done_at is not None and t - done_at >= JUDGE_TAIL_MS:
                break
            if (done_at is not None and not record_trajectory
                    and self.judge.rest_ok_ms >= PLACE_HOLD_MS and m.fault == 0):
                # Batches: the placement is already measured (the part has rested in the bin
                # since the jaws opened, before the retreat); the tail could only repeat it.
                break
        if view is not None:
            view.close()
        return self._record(done_at, time.perf_counter() - t_start)

    # ---- faults ----

    def _inject(self, t):
        if not self._pending:      # nothing left to fire (the state clock only serves triggers)
            return
        m = self.board.machine
        if m.state not in self._state_since:
            self._state_since = {m.state: t}
        for item in list(self._pending):
            trigger, fault, kw = item
            if trigger[0] == "at":
                fire = t >= trigger[1]
            else:
                st = states.NAMES.index(trigger[1])
                fire = m.state == st and t - self._state_since.get(st, t) >= trigger[2]
            if fire:
                self._pending.remove(item)
                self.plant.inject(fault, **kw)
                if fault == "brownout":
                    # The controller shares the rail: it resets now and boots when the rail is back.
                    self._drain()
                    self._reboot_at = t + kw.get("duration_ms", 100) + BOOT_MS

    def _reboot(self):
        # A fresh controller: RAM lost, the interrupted-cycle marker found in flash, so it latches
        # INTERRUPTED and commands the stored rest pose (the pose at job start) instead of guessing.
        # Its clock restarts on the plant's (as the virtual board's does).
        self._reboot_at = None
        self.lives += 1
        old = self.board
        board = SimBoard(self.plant, self.cfg, start_ms=self.plant.now_ms)
        board.motion.joints[:] = type(board.motion.joints)("i", self.rest_joints)
        board.current_offset = old.current_offset
        board.machine.events.next_seq = old.machine.events.next_seq
        self._seen = board.machine.events.last_seq()
        board.read_inputs()
        board.machine.now = board.now
        # The jaw is commanded to where the pot says it is: never opened over the table, never
        # squeezed harder (the firmware's rule, firmware/boot_recovery.py boot_jaw_um); with the
        # pot unusable the old command is kept.
        cfg = self.cfg
        pot = board.machine.inp.pot_counts
        jaw = old.motion.jaw_um
        if cfg.pot_valid_min_counts <= pot <= cfg.pot_valid_max_counts:
            jaw = max(0, (pot - cfg.pot_closed_counts) * 1000 // cfg.pot_counts_per_mm)
        board.motion.jaw_um = jaw
        board.machine.out.jaw_um = jaw
        inp = board.machine.inp
        self.restarts.append({"life": self.lives - 1, "t_ms": board.now, "jaw_um": int(board.machine.out.jaw_um),
                              "next_seq": board.machine.events.next_seq, "latched": codes.name(codes.F_INTERRUPTED),
                              "inputs": {k: int(getattr(inp, k)) for k in _INPUT_NAMES}})
        board.machine.latch_fault(codes.F_INTERRUPTED)
        self.board = board
        self._watch_steps()
        self._drain()

    # ---- the tick trace (run record) ----

    def _watch_steps(self):
        # Wrap this board's Machine.step: the inputs are captured at the moment step() reads
        # them and the commands as it leaves them, whatever the board's tick does around it.
        # The servo pulses a tick writes are known at the next step (or at the end). Runs every
        # tick: the fields are fetched by C-level attrgetters and the row is built in one go.
        m = self.board.machine
        step = type(m).step
        pulses = _pulses_of(self.board)   # the HAL's live list, changed in place

        def watched(now):
            if not self._record_ticks:
                return step(m, now)
            self._fill_pulses(pulses)
            row_in = _get_inputs(m.inp)
            step(m, now)
            self.ticks.append([self.lives - 1, now, *row_in, *_get_outputs(m.out), m.state, 0, 0, 0, 0, 0, -1])
        m.step = watched

    def _fill_pulses(self, pulses):
        # The previous row's pulses are what its tick wrote: known now (or at the end).
        ticks = self.ticks
        if ticks:
            last = ticks[-1]
            if last[-2] == 0 and last[-6] == 0:
                last[-6:-1] = pulses[:5]

    def _drain(self):
        ev = self.board.machine.events
        while self._seen < ev.last_seq():
            self._seen += 1
            e = ev.get(self._seen)
            if e is not None:
                self.events.append(e)

    def _row(self, t, truth):
        b = self.board
        m = b.machine
        inp = m.inp
        pos = truth["part_pos_mm"] or (None, None, None)
        q_true = self.plant.joint_angles_mdeg()
        return (t, m.state, m.attempt, m.fault, inp.pot_counts, inp.switch_pressed, inp.current_ma,
                inp.beam_broken, inp.rail_mv, b.motion.jaw_um, round(truth["jaw_opening_mm"], 2),
                round(truth["pad_travel_mm"], 2),
                None if pos[0] is None else round(pos[0], 2), None if pos[1] is None else round(pos[1], 2),
                None if pos[2] is None else round(pos[2], 2), round(truth["part_speed_mps"], 4),
                int(truth["finger_contact"]), int(truth["support_contact"]), int(truth["in_bin"]),
                b.motion.joints[0], b.motion.joints[1], b.motion.joints[2], b.motion.joints[3],
                q_true[0], q_true[1], q_true[2], q_true[3])

    def _record(self, done_at, wall_s):
        m = self.board.machine
        fsm_outcome, fsm_fault, _ = machine_belief(self.events, done_at is not None)
        attempts = max([e[6] for e in self.events] or [0])
        j_out, j_reason, j_details = self.judge.verdict()
        fsm_placed = fsm_outcome == "placed"
        judge_placed = j_out == "placed"
        answer = "placed" if fsm_placed else (fsm_fault or fsm_outcome)
        rec = {
            "cycle": self.cycle,
            "seed": self.seed,
            "part": self.setup["part"],
            "part_pose_mm": None if self.setup["part_pose"] is None else [round(v, 2) for v in self.setup["part_pose"]],
            "fsm_outcome": fsm_outcome,
            "fsm_fault": fsm_fault,
            "fault_state": states.name(m.fault_state) if fsm_fault else None,
            "attempts": attempts,
            "judge_outcome": j_out,
            "judge_reason": j_reason,
            "judge": j_details,
            "agree": fsm_placed == judge_placed,
            "false_success": fsm_placed and not judge_placed,
            "false_failure": (not fsm_placed) and judge_placed,
            "expected": answer in self.scenario.expect,
            "controller_restarts": self.lives - 1,
            "sim_ms": self.plant.now_ms,
            "wall_s": round(wall_s, 3),
            "events": [event_dict(e) for e in self.events],
            "job": self.job,
            "board_cal": self.board_cal,
            "initial_jaw_um": self.initial_jaw_um,
            "restarts": self.restarts,
        }
        if self._record_ticks:
            self._fill_pulses(_pulses_of(self.board))
            # For the run record (sim/report.py takes them out again before report.json).
            rec["_ticks"] = self.ticks
            rec["_events"] = list(self.events)
        return rec


def run_cycle(name, overrides=None, seed=0, cycle=0, plant_params=None, cfg_overrides=None,
              record_trajectory=True):
    sc = scenarios.get(name)
    values = sc.resolve(overrides)
    run = CycleRun(sc, values, seed, cycle, plant_params, cfg_overrides)
    rec = run.run(record_trajectory)
    return rec, run.trajectory, run
