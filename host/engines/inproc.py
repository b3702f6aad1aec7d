# The in-process engine: one pick-and-place cycle of a scenario, the firmware's own controller
# (firmware/controller.py) on the world's pins (firmware/hal/world_pins.py) in this process.
# The engine only moves time and plays the operator: it asks for the current calibration at
# CAL_AT_MS and gives the scenario's job when that ends, as the virtual-board engine does over
# the link; a brownout resets the controller, which then boots from its flash like a board.
# With a trajectory it also keeps the run record's tick trace (records/runrecord.py): what the
# machine read at every step and what it commanded, captured around Machine.step itself.
import json
import operator
import os
import tempfile
import time

from surepick.firmware.controller import Controller, E_PAYLOAD
from surepick.firmware.telemetry import LoopStats
from surepick.host.engines.loopfigures import from_stats
from surepick.firmware.hal.world_pins import _TICKS_MASK, WorldPins
from surepick.shared_fsm import codes, link, states
from surepick.shared_fsm.machine import Job, fault_where
from surepick.shared_fsm.ticks import ticks_diff
from surepick.firmware import arm_file
from surepick.firmware import settings as fw_settings
from surepick.sim import world as world_mod
from surepick.sim.judge import PLACE_HOLD_MS, RESTART_WINDOW_MS
from surepick.sim.fast_world import FastWorld
from surepick.sim.world import (BATCH_SAMPLE_MS, CAL_AT_MS, CYCLE_LIMIT_MS, JUDGE_TAIL_MS, SAMPLE_MS,
                                World)

TRAJECTORY_COLUMNS = (
    "t_ms", "state", "attempt", "fault", "pot_counts", "switch_pressed", "current_ma", "beam_broken",
    "rail_mv", "jaw_cmd_um", "jaw_true_mm", "pad_travel_mm", "part_x_mm", "part_y_mm", "part_z_mm",
    "part_speed_mps", "finger_contact", "support_contact", "in_bin",
    "q0_cmd_mdeg", "q1_cmd_mdeg", "q2_cmd_mdeg", "q3_cmd_mdeg",
    "q0_mdeg", "q1_mdeg", "q2_mdeg", "q3_mdeg",
)


def refusal_text(ctl, err):
    # Why the controller refused a job, as the board's answer would word it.
    if err == E_PAYLOAD:
        from surepick.host.arms import checks
        w = ctl.payload_refused
        return checks.payload_sentence(ctl.arm, ctl.arm.joint_names[w[0]], w[1], w[2], ctl.arm.bench["part_g"],
                                       where="the arm description's bench.part_g")
    return "error %d" % err


def machine_belief(events, ended):
    # What the machine itself said about a cycle, from its event records: ("placed", None, None),
    # ("fault", fault name, state it faulted in) or ("incomplete", None, None). The first of
    # PLACED and a fault decides: what latches later (an e-stop pressed after the place, a stall
    # or an interruption after the first fault) does not change what happened to the cycle.
    # Every engine (sim, virtual board, HIL) judges the machine's belief with this one rule.
    if not ended:
        return "incomplete", None, None
    for e in events:
        if e[2] == codes.K_FAULT:
            return "fault", codes.name(e[5]), states.name(fault_where(e[5], e[3]))
        if e[2] == codes.K_TRANSITION and e[5] == codes.R_PLACED:
            return "placed", None, None
    return "incomplete", None, None


_INPUT_NAMES = ("pot_counts", "switch_pressed", "current_ma", "beam_broken", "estop", "rail_mv",
                "arrived_seq", "error_seq", "jaw_done")
# The run record's tick row (records/runrecord.py TICK_COLUMNS): what step() read, what it commanded.
_get_inputs = operator.attrgetter(*_INPUT_NAMES)
_get_outputs = operator.attrgetter("move_seq", "move_kind", "move_gentle", "x_um", "y_um", "z_um",
                                   "pitch_mdeg", "jaw_um", "hold")


def event_dict(e):
    return {"seq": e[0], "t_ms": e[1], "kind": codes.KIND_NAMES[e[2]], "from": states.name(e[3]),
            "to": states.name(e[4]), "reason": codes.name(e[5]), "attempt": e[6],
            "pot_counts": e[7], "switch_pressed": e[8], "current_ma": e[9], "beam_broken": e[10],
            "present_mask": e[11]}


# The host's clocks never wrap: the period between ticks is a plain difference (C-level).
_us_diff = operator.sub
_perf_ns = time.perf_counter_ns
# A simulated board's flash lives for one cycle: in memory where the host has a tmpfs (creating
# and removing it on a disk cost a cycle a few ms of CPU), else in the usual temporary directory.
_FLASH_ROOT = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def board_settings(cfg_overrides=None):
    # The firmware's settings for a simulated board: its defaults, the machine's overrides.
    return fw_settings.Settings(machine=cfg_overrides)


class SimulatedBoard:
    """The firmware's controller on a world's pins, with its own flash directory (job marker,
    rest pose, settings survive a controller reset as on a board). Time moves only in step()."""

    def __init__(self, world, settings, flash=None):
        self.world = world
        self.settings = settings
        # The board's flash: a directory that lives as long as this board (unless given).
        self._tmp = (tempfile.TemporaryDirectory(prefix="surepick-simflash-", dir=_FLASH_ROOT)
                     if flash is None else None)
        self.flash = flash or self._tmp.name
        settings.save(self.flash + fw_settings.PATH)   # what the board's /config.json holds
        arm = getattr(world, "arm", None)               # a replayed world has none: the reference
        if arm is not None:                             # what deploy ships as /arm.json
            with open(self.flash + arm_file.PATH, "w") as f:
                json.dump(arm.to_dict(), f, separators=(",", ":"))
        self.period = settings.cfg.loop_period_ms
        # The controller's own loop figures, as the firmware keeps them (firmware/telemetry.py):
        # the period on the world's clock, the tick's work on this host's CPU clock.
        self.stats = LoopStats(self.period * 1000)
        self.ctl = None
        self.on_boot = None          # callable(controller) before it boots (the engine's hooks)
        self.power_on()

    def power_on(self):
        # A fresh controller: RAM empty, settings and files from flash, boot as the firmware does.
        self.pins = WorldPins(self.world)
        self.ctl = Controller(self.pins, self.flash)
        if self.on_boot is not None:
            self.on_boot(self.ctl)
        self.ctl.boot()
        return self.ctl

    @property
    def now(self):
        return self.pins.ticks_ms()

    def step(self, after_tick=None):
        # One loop period: the controller's tick, the link's requests (after_tick(now)), then
        # the world moves on one period. -> a ControllerReset when the controller lost power.
        ctl = self.ctl
        pins = self.pins
        now = pins.ticks_ms()
        t0 = _perf_ns()
        ctl.tick(now)
        self.stats.record(now * 1000, (_perf_ns() - t0) // 1000, ctl.flash_tick, _us_diff)
        if after_tick is not None:
            after_tick(now)
        pins.state = ctl.m.state
        pins.advance(self.period)
        r = pins.reset
        pins.reset = None
        return r

    def calibrate_current(self, at_ms=CAL_AT_MS):
        # The host's CALIBRATE current, handled in the tick at at_ms (as the virtual board's host
        # sends it), run to its end: the idle gripper's current becomes the zero.
        while ticks_diff(self.now, at_ms) < 0:
            self.step()
        self.step(self._start_calibration)
        while self.ctl.cal is not None:
            self.step()
        return self.ctl.current.offset

    def _start_calibration(self, now):
        err = self.ctl.start_calibration(link.CAL_CURRENT, 0, now)
        if err:
            raise RuntimeError("current calibration refused: %r" % (err,))

    def close(self):
        if self._tmp is not None:
            self._tmp.cleanup()


class FastBoard(SimulatedBoard):
    """SimulatedBoard for the in-process engine's fast path: step() with the pins' exchange
    (WorldPins.advance) and clock inlined, the same calls in the same order (the world's
    exchange, then one read of every input). SimulatedBoard stays the reference."""

    def step(self, after_tick=None):
        ctl = self.ctl
        pins = self.pins
        world = self.world
        now = world.plant.now_ms & _TICKS_MASK
        t0 = _perf_ns()
        ctl.tick(now)
        self.stats.record(now * 1000, (_perf_ns() - t0) // 1000, ctl.flash_tick, _us_diff)
        if after_tick is not None:
            after_tick(now)
        state = pins.state = ctl.m.state
        r = world.exchange(pins.pulses if pins.pwm_on else None, state, self.period)
        if r is not None and pins.reset is None:
            pins.reset = r
        pot_s, cur_s, rail_s, estop_g, switch_g, beam_g = pins._slots
        adc = pins.adc
        levels = pins.levels
        adc[pot_s], adc[cur_s], adc[rail_s], estop, switch, beam = world.read_inputs()
        levels[estop_g] = 1 if estop else 0
        levels[switch_g] = 1 if switch else 0
        levels[beam_g] = 1 if beam else 0
        r = pins.reset
        pins.reset = None
        return r


class InprocCycle:
    # job: (pick, place, width_um, max_attempts or None) in um/mdeg to send instead of the
    # scenario's own (a job file's, `sim run --job`); None: the scenario's.
    # reference: run today's World, Plant and Judge (sim/world.py) instead of their per-tick fast
    # path (sim/fast_world.py); the results are the same (tests/host/engines/test_fast_world.py).
    def __init__(self, scenario, values, seed, cycle, plant_params=None, cfg_overrides=None,
                 sample_ms=SAMPLE_MS, job=None, reference=False, arm=None):
        self.settings = board_settings(cfg_overrides)
        self.cfg = self.settings.cfg
        world_class = World if reference else FastWorld
        self.world = world_class(scenario, values, seed, cycle, plant_params, sample_ms=sample_ms, cfg=self.cfg,
                                 arm=arm)
        self.job_given = job
        self.scenario = self.world.scenario
        self.values = self.world.values
        self.seed = seed
        self.cycle = cycle
        self.setup = self.world.setup
        self.plant = self.world.plant
        self.judge = self.world.judge
        self.lives = 1
        self.ticks = []          # run-record rows (records/runrecord.py TICK_COLUMNS minus cycle)
        self._record_ticks = True
        self._record_rows = False  # trajectory rows (the whole truth) are kept from run() on, if asked
        self.board = (SimulatedBoard if reference else FastBoard)(self.world, self.settings)
        self.board.on_boot = self._watch_steps
        self._watch_steps(self.board.ctl)   # from the first step: the calibration's idle steps count too
        if not reference:
            self.world.judge_only = True     # until run(): no trajectory row is kept before it
        self.board.calibrate_current()
        self.board_cal = {"current_offset_counts": int(self.board.ctl.current.offset)}
        ctl = self.board.ctl
        self.initial_jaw_um = int(ctl.m.out.jaw_um)
        self.events = []
        self.trajectory = []
        self._seen = 0
        self.viewer = None
        self.restarts = []       # controller restarts: when, and what the booting machine read
        self.job = None

    def run(self, record_trajectory=True):
        world = self.world
        if self.job_given is not None:
            pick, place, width, attempts = self.job_given
            job = Job(pick, place, width, attempts or 0)
        else:
            pick, place, width = world.job_um()
            job = Job(pick, place, width)
        board = self.board
        self.job = {"pick_um": list(job.pick), "place_um": list(job.place), "t_ms": board.now,
                    "part_width_um": job.part_width_um, "max_attempts": job.max_attempts}
        self._record_ticks = record_trajectory
        self._record_rows = record_trajectory
        if record_trajectory and isinstance(world, FastWorld):
            world.judge_only = False         # the trajectory's rows show the whole truth
        if not record_trajectory:
            self.ticks = []
            world.sample_ms = BATCH_SAMPLE_MS
            world.judge_only = True          # no trajectory rows: the judge's fields are enough
            self._watch_steps(board.ctl)     # no tick trace: the machine's own step again
        board.stats.begin_cycle()        # the job's loop figures, as the firmware begins them
        err = board.ctl.start_job(job)
        if err:
            raise ValueError("the scenario's job was refused: %s" % refusal_text(board.ctl, err))
        t_start = time.perf_counter()
        t = board.now
        done_at = None
        plant = self.plant
        view = None
        if getattr(self, "viewer", None):
            import mujoco.viewer
            view = mujoco.viewer.launch_passive(plant.m, plant.d)
        try:
            events = board.ctl.m.events
            while t < CYCLE_LIMIT_MS:
                reset = board.step()
                if self._seen < events.last_seq():
                    self._drain()
                if reset is not None:
                    self._reboot(reset)
                    events = board.ctl.m.events
                t = plant.now_ms
                if view is not None and t % 20 == 0:
                    view.sync()
                    lag = t / 1000.0 - (time.perf_counter() - t_start)
                    if lag > 0:
                        time.sleep(lag)  # real time, so a person can watch
                if record_trajectory and world.truth_ms == t:
                    self.trajectory.append(self._row(t, world.truth, board.ctl))
                m = board.ctl.m
                if done_at is None and not board.ctl.busy():
                    done_at = t
                if done_at is None:
                    continue
                # a fault still to come, one just applied, or a restart's window: the judge watches
                watching = (world.pending() or (self.restarts and t - self.restarts[-1]["t_ms"] < RESTART_WINDOW_MS)
                            or (world.last_injection_ms is not None and t - world.last_injection_ms < JUDGE_TAIL_MS))
                if t - done_at >= JUDGE_TAIL_MS and not watching:
                    break
                if (not record_trajectory and not watching
                        and self.judge.rest_ok_ms >= PLACE_HOLD_MS and m.fault == 0):
                    # Batches: the placement is already measured (the part has rested in the bin
                    # since the jaws opened, before the retreat); the tail could only repeat it.
                    break
        finally:
            if view is not None:
                view.close()
            board.close()
        return self._record(done_at, time.perf_counter() - t_start)

    # ---- a controller reset ----

    def _reboot(self, reset):
        # The controller lost power: the servos are limp while it is down, then it boots from its
        # flash like a board (marker found: INTERRUPTED latched, servos started at the stored rest
        # pose). Nothing here reads the plant's truth.
        old = self.board.ctl
        if self._record_rows:
            # The trajectory goes on through the restart, showing the last controller that ran.
            self.world.on_sample = lambda t, truth: self.trajectory.append(self._row(t, truth, old))
        self.world.limp(reset.down_ms, self.cfg.loop_period_ms)
        self.lives += 1
        next_seq = old.m.events.next_seq

        def keep_numbering(ctl):
            # One event numbering across restarts, so the record's events stay unique (a board's
            # log numbers its records itself).
            ctl.m.events.next_seq = next_seq
            self._watch_steps(ctl)
        self.board.on_boot = keep_numbering
        ctl = self.board.power_on()
        self.board.on_boot = self._watch_steps
        self.world.on_sample = None
        inp = ctl.m.inp
        self.restarts.append({"life": self.lives - 1, "t_ms": self.board.now, "jaw_um": int(ctl.m.out.jaw_um),
                              "next_seq": next_seq, "latched": codes.name(ctl.m.fault) if ctl.m.fault else None,
                              "boot_action": ctl.boot_action, "reason": reset.why,
                              "inputs": {k: int(getattr(inp, k)) for k in _INPUT_NAMES}})
        self._drain()

    # ---- the tick trace (run record) ----

    def _watch_steps(self, ctl):
        # Wrap this controller's Machine.step: the inputs are captured at the moment step() reads
        # them and the commands as it leaves them, whatever the tick does around it. The servo
        # pulses a tick writes are known at the next step (or at the end). Runs every tick: the
        # fields are fetched by C-level attrgetters and the row is built in one go. Without a
        # tick trace (batches) the machine keeps its own step.
        m = ctl.m
        if not self._record_ticks:
            m.__dict__.pop("step", None)
            return
        step = type(m).step
        pulses = self.board.pins.pulses   # the HAL's live list, changed in place
        ticks = self.ticks
        life = self.lives - 1              # a restart installs a new wrapper (keep_numbering)

        def watched(now):
            # _fill_pulses, inlined
            if ticks:
                last = ticks[-1]
                if last[-2] == 0 and last[-6] == 0:
                    last[-6:-1] = pulses[:5]
            row_in = _get_inputs(m.inp)
            step(m, now)
            ticks.append([life, now, *row_in, *_get_outputs(m.out), m.state, 0, 0, 0, 0, 0, -1])
        m.step = watched

    def _fill_pulses(self, pulses):
        # The previous row's pulses are what its tick wrote: known now (or at the end).
        ticks = self.ticks
        if ticks:
            last = ticks[-1]
            if last[-2] == 0 and last[-6] == 0:
                last[-6:-1] = pulses[:5]

    def _drain(self):
        ev = self.board.ctl.m.events
        while self._seen < ev.last_seq():
            self._seen += 1
            e = ev.get(self._seen)
            if e is not None:
                self.events.append(e)

    def _row(self, t, truth, ctl):
        m = ctl.m
        inp = m.inp
        mo = ctl.motion
        pos = truth["part_pos_mm"] or (None, None, None)
        q_true = self.plant.joint_angles_mdeg()
        return (t, m.state, m.attempt, m.fault, inp.pot_counts, inp.switch_pressed, inp.current_ma,
                inp.beam_broken, inp.rail_mv, mo.jaw_um, round(truth["jaw_opening_mm"], 2),
                round(truth["pad_travel_mm"], 2),
                None if pos[0] is None else round(pos[0], 2), None if pos[1] is None else round(pos[1], 2),
                None if pos[2] is None else round(pos[2], 2), round(truth["part_speed_mps"], 4),
                int(truth["finger_contact"]), int(truth["support_contact"]), int(truth["in_bin"]),
                mo.joints[0], mo.joints[1], mo.joints[2], mo.joints[3],
                q_true[0], q_true[1], q_true[2], q_true[3])

    def _record(self, done_at, wall_s):
        m = self.board.ctl.m
        fsm_outcome, fsm_fault, _ = machine_belief(self.events, done_at is not None)
        attempts = max([e[6] for e in self.events] or [0])
        j_out, j_reason, j_details = self.world.verdict()
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
            # from the job to the machine at rest again (a part search's cost shows here)
            "cycle_ms": None if done_at is None else done_at - self.job["t_ms"],
            "probes": sum(1 for e in self.events if e[2] == codes.K_SEARCH
                          and e[5] in (codes.R_PROBE_SEEN, codes.R_PROBE_CLEAR, codes.R_PROBE_TOUCHED)),
            "wall_s": round(wall_s, 3),
            "events": [event_dict(e) for e in self.events],
            "job": self.job,
            "board_cal": self.board_cal,
            "initial_jaw_um": self.initial_jaw_um,
            "restarts": self.restarts,
            "loop": from_stats(self.board.stats),
        }
        if self._record_ticks:
            self._fill_pulses(self.board.pins.pulses)
            # For the run record (records/report.py takes them out again before report.json).
            rec["_ticks"] = self.ticks
            rec["_events"] = list(self.events)
        return rec


def run_cycle(name, overrides=None, seed=0, cycle=0, plant_params=None, cfg_overrides=None,
              record_trajectory=True, reference=False, arm=None):
    run = InprocCycle(name, overrides, seed, cycle, plant_params, cfg_overrides,
                   sample_ms=SAMPLE_MS if record_trajectory else BATCH_SAMPLE_MS, reference=reference, arm=arm)
    rec = run.run(record_trajectory)
    return rec, run.trajectory, run


__all__ = ["InprocCycle", "SimulatedBoard", "run_cycle", "machine_belief", "event_dict", "TRAJECTORY_COLUMNS",
           "CAL_AT_MS", "world_mod"]
