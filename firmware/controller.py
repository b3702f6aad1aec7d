# The controller core: the input and servo drivers wired to a HAL, the shared machine and the
# motion planner, the boot (sense, recovery decision, servo start), calibration and the tick
# order. It exists once: the firmware's App is this core plus link, flash log, telemetry, HIL and
# LED (app.py), and the host simulator, the virtual board's shadow and the fit run this same code
# with the plant's pins as their HAL (hal/world_pins.py).
#
# One tick, in order: inputs -> machine.step -> watches (gripper stall, servo rail) -> rescue /
# calibration / teleop mode -> motion.tick -> servo drive -> at-rest tracking. The caller owns the
# clock: the App waits for the next period on its HAL, an engine advances its plant one period
# after each tick.
#
# Watches, in every state (board settings): the gripper current at or above current_stall_ma for
# current_stall_ms latches STALL and backs the jaw off to the holding squeeze where the pot says it
# is (PWM off if the pot is broken, or if the stall outlasts the back-off); the servo rail below
# rail_low_mv on consecutive reads spanning rail_low_ms latches RAIL_LOW, which holds all motion like any fault (a sagging
# rail is what comes before a brownout resets the servos and, on a shared rail, the board). The
# arm servos have no current sense: the rail is theirs. Still below rail_low_mv current_stall_ms
# later, or rail_stall_sag_mv below its unloaded level (read at boot) for current_stall_ms while
# the arm stands still, an arm servo is pushing at stall: the arm's PWM goes off (STALL; the gear
# trains hold it) until a RESCUE, which may then start from the setpoints (the board knows them).
# At the tick PLACE first opens the jaw, a sag as deep as the shoulder and elbow both at stall
# (Arm.load_stall_sag_mv) means the arm never got over the bin: the part is kept, STALL.
#
# Flash: the job marker (/job.json) and the rest pose (/rest.json) belong to the core, because
# the next boot decides from them; they are written under `root`, only when `persist` is set (the
# App clears it under HIL, where the arm is simulated) and only once the arm has been at rest
# (jaw done, servos still) for flash_settle_ms: a flash write stalls the RP2040.
#
# After an interrupted job the boot leaves the arm servos unpowered (the board has no joint
# feedback; hobby-servo gear trains hold the arm) and holds the gripper where its pot says, with
# the holding squeeze back on a held part. Nothing moves until an operator's RESCUE: it powers the
# arm at the pose the operator names (or the board's own setpoints when it never lost them), then
# moves only gently (rescue.Rescue), or opens the jaw when the operator says so.
import gc
import sys

from ..shared_fsm import link, servo_cal
from ..shared_fsm.compat import const, micropython
from ..shared_fsm.codes import (K_NOTE, F_INTERRUPTED, F_STALL, F_RAIL_LOW, F_ABORTED, F_LIFT_SHORT,
                               R_RESCUE, R_UNPOWERED)
from ..shared_fsm.machine import (Machine, OK as M_OK, E_BUSY as M_BUSY, E_ARM_OFF as M_ARM_OFF,
                                  MOVE_PLAN)
from ..shared_fsm.motion import Motion
from ..shared_fsm.states import IDLE, PLACE
from ..shared_fsm.ticks import ticks_diff as ms_diff

from . import boot_recovery as rec
from . import arm_file
from . import settings as settings_mod
from .sensors import Pot, Current, Rail, Switch, EStop
from .servo import Servo, drive as drive_servos


def _loaded(name):
    # True once the firmware's module `name` is imported (a first import is maintenance: a tick
    # longer than the period)
    return arm_file.FIRMWARE + "." + name in sys.modules


E_ARM_INVALID = const(20)    # start_job: the board has no valid arm description (not a machine code)
E_PAYLOAD = const(21)        # start_job: the servos cannot hold the part on this job's path (payload_refused)


def pose_checker(arm):
    # -> check_pose(x_um, y_um, z_um, pitch_mdeg) for the machine: raises ValueError
    # (arm.Unreachable) when the pose is out of this arm's reach.
    def check_pose(x_um, y_um, z_um, pitch_mdeg):
        arm.inverse(x_um / 1000.0, y_um / 1000.0, z_um / 1000.0, pitch_mdeg / 1000.0)
    return check_pose



class Sensors:
    # The input drivers wired to a HAL's pins as the settings say. read(inp) fills a machine's
    # Inputs in the one order every board reads them.
    def __init__(self, hal, settings):
        b = settings.board
        pins = settings.pins()
        self.pot = Pot(hal, pins.adc_pot, b["pot_filter_shift"])
        self.current = Current(hal, pins.adc_current, b["current_offset_counts"], b["current_counts_per_a"],
                               b["current_filter_shift"], b["current_holding_ma"], b["current_stall_ma"])
        self.rail = Rail(hal, pins.adc_rail, b["rail_divider_milli"])
        self.switch = Switch(hal, pins.switch)
        self.beam = Switch(hal, pins.beam)
        self.estop = EStop(hal, pins.estop, settings.reads("estop_reset_ms"))

    @micropython.native
    def read(self, inp):
        inp.pot_counts = self.pot.read()
        inp.current_ma = self.current.read_ma()
        inp.rail_mv = self.rail.read_mv()
        inp.switch_pressed = self.switch.read()
        inp.beam_broken = self.beam.read()
        inp.estop = self.estop.read()

    def drivers(self):
        return (self.pot, self.current, self.rail, self.switch, self.beam, self.estop)

    def apply(self, settings):
        # Settings that change without a reboot.
        b = settings.board
        self.pot.shift = b["pot_filter_shift"]
        c = self.current
        c.offset = b["current_offset_counts"]
        c.counts_per_a = b["current_counts_per_a"]
        c.shift = b["current_filter_shift"]
        c.holding_ma = b["current_holding_ma"]
        c.stall_ma = b["current_stall_ma"]
        self.rail.scale = 3300 * b["rail_divider_milli"] // 1000
        self.estop.reset_reads = settings.reads("estop_reset_ms")


def _pose_of(arm, joints_mdeg):
    # Forward kinematics of joint setpoints (mdeg) -> (x, y, z um, pitch mdeg). Allocates.
    x, y, z, p = arm.forward([v / 1000.0 for v in joints_mdeg])
    return (int(x * 1000), int(y * 1000), int(z * 1000), int(round(p * 1000)))


def _joints_of(arm, pose):
    # Inverse kinematics of (x, y, z um, pitch mdeg) -> joint setpoints (mdeg); ValueError when
    # out of reach. Allocates.
    q = arm.inverse(pose[0] / 1000.0, pose[1] / 1000.0, pose[2] / 1000.0, pose[3] / 1000.0)
    return [int(round(v * 1000)) for v in q]


class TeleopOff:
    # The teleop mode before anything asked for it: off, nothing pending. teleop_mode.py (3.5 KB
    # of the chip's heap with its path check's import) loads with the first TELEOP or SETPOINT
    # request (Controller.load_teleop), not at boot.
    on = 0
    mode = 0                 # teleop_mode.OFF
    ended = 0
    pend_rid = 0


class Controller:
    # hal: a board HAL (hal/contract.py); root: the flash root ("" on a board); settings: a
    # settings.Settings, or None to load root + /config.json as a board does; arm: an Arm, or
    # None to load root + /arm.json as a board does (arm_file.py: a bad description leaves
    # self.arm_error set, the arm still and every job refused).
    def __init__(self, hal, root="", settings=None, arm=None):
        self.hal = hal
        self.root = root
        self.settings = settings if settings is not None else settings_mod.load(root + settings_mod.PATH)
        self.cfg = self.settings.cfg
        self.pins = self.settings.pins()     # its servo pins are the arm description's (load_arm)
        hal.setup(self.pins)
        self.sensors = Sensors(hal, self.settings)
        sn = self.sensors
        self.pot = sn.pot
        self.current = sn.current
        self.rail = sn.rail
        self.switch = sn.switch
        self.beam = sn.beam
        self.estop = sn.estop
        self.m = Machine(self.cfg)
        self.servos = None
        self.motion = None
        self.rescue_op = None     # the operator's Rescue while it runs
        self.cal = None
        self.teleop = TeleopOff          # teleop_mode.py is loaded by the first teleop request
        self.persist = 1          # job marker, rest pose and calibrations go to flash
        self.flash_tick = 0       # this tick wrote flash (the App's timing statistics count it apart)
        self.now_ms = hal.ticks_ms()
        self.last_ms = self.now_ms
        self.dt_ms = 0
        self.reset_cause = 0
        self.boot_action = rec.ACT_NORMAL
        self.boot_grip = -1
        self.marker = None        # what the boot found on /job.json (read_marker_at)
        self.rest_q = rec.HOME_JOINTS_MDEG   # the stored rest pose (joint setpoints, mdeg)
        self.arm_off = 0          # arm servos unpowered (an interruption, a stall), until a RESCUE
        self.arm_pose_known = 0   # ... and the setpoints are where it stands (a stall, not a reset)
        self.rail_idle_mv = 0     # the rail unloaded, read at boot before any PWM
        self.sag_since = -1       # the rail sagged rail_stall_sag_mv below it, arm still, since
        self.release_checked = 0  # this PLACE's release was checked against the stall sag (tick)
        self.job_waiting = None   # a started job: its marker waits for the arm to settle
        self.still_since = self.now_ms     # the arm has been at rest (jaw done, servos still) since
        self.stall_since = -1     # gripper current at stall since (-1: not at stall)
        self.stall_stage = 0      # 0 watching, 1 backed off, 2 gripper PWM off
        self.rail_since = -1      # rail below rail_low_mv since (-1: not low)
        self.rail_reads = 0       # consecutive reads below rail_low_mv
        self.rail_fired = 0       # RAIL_LOW latched for this sag
        self.settings_unsaved = 0 # a calibration's result waits for the arm to settle
        self.still = 0            # every servo driver sat on its target at the last look
        self._cache_limits()
        self.arm = arm               # the reference arm stands in (never moved) when arm_error is set
        self.arm_error = ""
        self.payload_refused = None  # the last job the payload check refused: (slot, need N m, stall N m, q)
        self.load_arm()

    def load_arm(self):
        # The arm description (arm_file.py), unless one was handed in. Last in the controller's
        # construction: measured on the emulated RP2040 booting through preload.py, this keeps
        # the largest free block after boot above 32 KB (at the end of the App's constructor it
        # was 28.8 KB).
        if self.arm is None:
            self.arm, self.arm_error = arm_file.load(self.root + arm_file.PATH, self.settings.rejected)
        if not self.arm_error:
            self.arm_error = self.check_servo_settings()
        # The servos' pins are the description's; without a valid one no servo has a pin (the
        # HAL starts no PWM on any), so nothing is driven from numbers nobody vouched for.
        self.pins.servo = settings_mod.NO_SERVO_PINS if self.arm_error else self.arm.servo_pins()
        # The release check (tick): the rail sag of the shoulder and elbow both at stall, from
        # the description's servo models and rail; off with the sag watch (rail_stall_sag_mv 0).
        self.release_sag_mv = self.arm.load_stall_sag_mv() if self.settings.board["rail_stall_sag_mv"] else 0
        self.check_pose = pose_checker(self.arm)
        self.m.set_arm(self.arm)     # a part search plans its probes with it; its jaw caps openings
        # the arm's joint -> servo map, as the tick reads it (servo.drive; a geared arm's drive
        # is loaded with it)
        self._servo_zero = self.arm.servo_zero
        self._servo_gear = None
        if self.arm.geared:
            from .servo_geared import drive
            self._drive_geared = drive
            self._servo_gear = self.arm.servo_gear

    def check_servo_settings(self):
        # The description against the board settings: -> "" or why the arm is kept still.
        # An old config.json's servo setting (settings.MOVED_TO_ARM) that the description
        # contradicts, or a servo on a pin the board settings give to an input or the LED.
        s = self.settings
        arm = self.arm
        why = ""
        for key in sorted(s.moved):
            want = settings_mod.moved_value(arm, key)
            if want is None or s.moved[key] == want:
                del s.moved[key]       # says what the description says: dropped at the next save
                continue
            s.rejected.add("config", key, "differs")
            if not why:
                slot, field = settings_mod.MOVED_TO_ARM[key]
                why = ("/config.json %s = %s but the arm description says %s (servos.%s.%s): put the "
                       "board's value in the description, then deploy --arm FILE" % (
                           key, s.moved[key], want, arm.servo_names[slot] if slot < 4 else "gripper",
                           "direction" if field == "inverted" else field))
        used = {}
        for key in settings_mod.PIN_KEYS:
            used[s.board[key]] = key
        pins = arm.servo_pins()
        for i in range(5):
            if pins[i] in used:
                name = arm.servo_names[i] if i < 4 else "gripper"
                s.rejected.add("arm", "servos.%s.gpio" % name, "relation")
                if not why:
                    why = "the arm description's servos.%s.gpio GP%d is the board's %s" % (
                        name, pins[i], used[pins[i]])
        return why

    def _cache_limits(self):
        # Board settings the tick reads, as attributes (no dict lookup per tick).
        b = self.settings.board
        self.stall_ms = b["current_stall_ms"]
        self.rail_low_mv = b["rail_low_mv"]
        self.rail_low_ms = b["rail_low_ms"]
        self.rail_low_reads = self.settings.reads("rail_low_ms")
        self.rail_sag_mv = b["rail_stall_sag_mv"]
        self.settle_ms = b["flash_settle_ms"]

    def read_inputs(self):
        self.sensors.read(self.m.inp)

    # ---- boot ----

    def boot(self):
        # Look, decide, start the servos, act on the decision. -> (marker, rest_stored, switch,
        # beam): what the boot found, for the App's boot record.
        hal = self.hal
        cfg = self.cfg
        self.reset_cause = hal.reset_cause()
        # 1. Look before moving: inputs only, no PWM yet (the servos hold or sag as they are).
        period = cfg.loop_period_ms
        n = self.settings.board["boot_sense_ms"] // period + 1
        sw = 0
        beam = 0
        for _ in range(n):
            self.read_inputs()
            sw = sw + 1 if self.m.inp.switch_pressed else 0       # a level counts once steady
            beam = beam + 1 if self.m.inp.beam_broken else 0
            if self.m.inp.rail_mv > self.rail_idle_mv:
                self.rail_idle_mv = self.m.inp.rail_mv              # unloaded: no PWM yet
            hal.sleep_ms(period)
        inp = self.m.inp
        steady = cfg.debounce_reads
        switch = 1 if sw >= steady else 0
        beam_on = 1 if beam >= steady else 0
        # 2. What happened last time, and where the arm stood at rest.
        marker = rec.read_marker_at(self.root, self.settings.rejected)
        self.marker = marker
        rest_q, rest_jaw, rest_stored = rec.read_rest_at(self.root, self.settings.rejected, self.arm)
        self.rest_q = rest_q
        pot_is_ok = rec.pot_ok(inp.pot_counts, cfg)
        jaw_now = rec.jaw_um_of(inp.pot_counts, cfg) if pot_is_ok else -1
        if marker is not None:
            job = marker.get("job")
            width = job[2] if job is not None else 25000
            self.boot_grip = rec.assess_grip(jaw_now, switch, beam_on, width, cfg)
        self.boot_action = rec.decide(marker)
        jaw0 = rec.boot_jaw_um(marker, jaw_now, rest_jaw, pot_is_ok, self.boot_grip, cfg.hold_squeeze_um)
        # 3. A clean boot starts the servos exactly at the stored rest pose (arm) and jaw: no
        # snap. After an interruption the arm's pose is unknown: its servos stay unpowered.
        interrupted = self.boot_action == rec.ACT_FAULT
        # without a valid arm description nothing is known about the arm: its servos stay off
        self._start_servos(rest_q, jaw0 if jaw0 >= 0 else rest_jaw, jaw0 < 0,
                           interrupted or (1 if self.arm_error else 0))
        if self.arm_error:
            self.arm_off = 1
        self.m.out.jaw_um = self.motion.jaw_um
        self.now_ms = hal.ticks_ms()
        self.last_ms = self.now_ms
        self.still_since = self.now_ms
        self.m.now = self.now_ms
        # 4. Act on the decision: an interruption latches INTERRUPTED and waits for an operator
        # (logged once: a boot after one that already counted it latches it quietly).
        if interrupted:
            self.arm_off = 1
            if self.boot_grip != rec.GRIP_EMPTY:
                self.m.holding = 1       # maybe mid-air: a job would open the jaw there
            self.m.latch_fault(F_INTERRUPTED, not marker.get("counted"))
        return marker, rest_stored, switch, beam_on

    def _servo_cal(self, i):
        # Servo i's pulse calibration: the arm description's (min_us, max_us, trim_us, and its
        # pulse mirrored when it turns against its joint: direction -1).
        return self.arm.servo_cal(i)

    def _start_servos(self, rest_q, jaw_um, jaw_unknown, arm_unknown=0):
        s = self.settings
        pulses = [0, 0, 0, 0, 0]
        servos = []
        for i in range(5):
            target = self.arm.servo_mdeg(i, rest_q[i]) if i < 4 else servo_cal.joint_to_servo_mdeg(i, jaw_um)
            speed, accel = s.servo_limits(i)
            sv = Servo(self.hal, i, self._servo_cal(i), speed, accel, target)
            if ((i == 4 and (jaw_unknown or self.arm_error)) or (i < 4 and arm_unknown)
                    or self.pins.servo[i] < 0):
                sv.enabled = 0       # where it stands is unknown (or no servo there): leave it unpowered
                sv.pulse = 0
            pulses[i] = sv.pulse
            servos.append(sv)
        self.servos = servos
        self.hal.pwm_start(pulses)
        self.motion = Motion(self.cfg, rest_q, jaw_um, self.arm)

    # ---- the tick ----

    @micropython.native
    def tick(self, now):
        # One loop period of the controller (module comment). Everything it does is visible in
        # the controller's state; nothing here waits.
        self.flash_tick = 0
        self.now_ms = now
        dt = ms_diff(now, self.last_ms)
        self.last_ms = now
        self.dt_ms = dt                 # the loop's own period: teleop checks a path with it
        self.read_inputs()
        m = self.m
        if self.job_waiting is not None:
            self._start_waiting_job()
        fault = m.fault
        estop = m.estop_latched
        m.step(now)
        if m.state != PLACE:
            self.release_checked = 0
        elif not self.release_checked and m.out.jaw_um > self.motion.jaw_um and not m.fault:
            # The tick PLACE first opens the jaw over the bin. The rail says the shoulder and
            # elbow push at stall: the arm is not at the place pose (a part too heavy to lift
            # holds it down). Keep the part; the arm's PWM off (STALL), as the at-rest sag watch
            # does. A rail below rail_low_mv is RAIL_LOW's (a brownout, not a stall).
            self.release_checked = 1
            if self._load_at_stall():
                self._arm_stalled()
        if m.fault == F_LIFT_SHORT and fault != F_LIFT_SHORT and not self.arm_off:
            # A lift pulled short (the machine has set the part back down where it was picked):
            # with the shoulder and elbow still at stall on the rail, their PWM off (the pad holds it).
            if self._load_at_stall():
                self._arm_unpowered()
        if m.fault and (m.fault != fault or m.estop_latched != estop) and m.out.jaw_um == self.motion.jaw_um:
            self._stop_gripper()         # a fault latched here, the jaw left where it was slewing
        out = m.out
        if out.move_seq != self.motion.seq and out.move_kind == MOVE_PLAN and not out.hold:
            self._plan_ahead()
        self._watch_stall(now)
        self._watch_rail(now)
        if self.rescue_op is not None:
            if not self.rescue_op.step(now):
                r = self.rescue_op
                self.rescue_op = None
                self.rescue_done(r)
        if self.cal is not None:
            self.cal.step(self, now)
        if self.teleop.on:
            self.teleop.step(now)
        mo = self.motion
        mo.tick(now, m.out, m.inp)      # an unreachable move comes back as error_seq
        if self._servo_gear is None:
            drive_servos(self.servos, mo.joints, mo.jaw_um, dt, self._servo_zero)
        else:
            self._drive_geared(self.servos, mo.joints, mo.jaw_um, dt, self._servo_zero, self._servo_gear)
        if mo.active or not m.inp.jaw_done:
            self.still_since = now
            self.still = 0
        elif not self.still:
            # the drivers brake after the setpoints stop: still once every one sits on its
            # target (then it stays so until a setpoint moves: looked at once, not every tick)
            self.still_since = now
            self.still = 1
            for sv in self.servos:
                if sv.vel != 0 or sv.pos != sv.last_target:
                    self.still = 0
        elif self.settings_unsaved and self.settled():
            self._save_settings()

    def _load_at_stall(self):
        # The rail sags as deep as the shoulder and elbow both at stall (the release check's
        # Arm.load_stall_sag_mv); a rail below rail_low_mv is RAIL_LOW's (a brownout, not a stall).
        mv = self.rail.mv
        return self.release_sag_mv and mv >= self.rail_low_mv and self.rail_idle_mv - mv > self.release_sag_mv

    def _plan_ahead(self):
        # The machine's re-sense hook (a part search) asks for the moves it names next to be
        # planned now, at rest (its MOVE_PLAN arrives in this tick's motion.tick): the same
        # plans as when each is planned as it comes, without one overrunning a moving tick.
        # A maintenance tick, like the job's own plans and a flash write at rest.
        self.flash_tick = 1
        ahead = getattr(self.m.resense, "moves_ahead", None)
        if ahead is not None:
            self.motion.plan_ahead(ahead(self.m), self.planning)
        self.planned()

    def planning(self):
        # Called between two plans of a long planning (the App feeds its watchdog).
        pass

    def planned(self):
        # After a planning at rest (the App collects the garbage it left there, at rest, so that
        # no collection lands in a tick that moves the arm).
        pass

    def settled(self):
        # The arm has been at rest (no move, jaw done, servos still) for flash_settle_ms: the
        # only time a flash write (which stalls the RP2040) is allowed.
        return self.still and ms_diff(self.now_ms, self.still_since) >= self.settle_ms

    # ---- watches (every state) ----

    def _watch_stall(self, now):
        # The gripper's current at stall for current_stall_ms: STALL, back off to the holding
        # squeeze where the jaw really is; still at stall after as long again: PWM off.
        # Called every tick: its frame stays within the C stack's share (at most 11 locals and
        # stack slots; MicroPython puts a larger frame on the heap, and on the chip finding room
        # for it after a collection took 0.6 ms of a tick, docs/rp2040.md). The rare part is
        # _stalled's.
        c = self.current
        if c.ma < c.stall_ma or not self.servos[4].enabled:
            self.stall_since = -1
            if self.stall_stage == 1:
                self.stall_stage = 0
            return
        if self.stall_since < 0:
            self.stall_since = now
            return
        if ms_diff(now, self.stall_since) >= self.stall_ms:
            self.stall_since = now
            self._stalled()

    def _stalled(self):
        m = self.m
        if self.stall_stage == 0:
            self.stall_stage = 1
            m.latch_fault(F_STALL)
            inp = m.inp
            if rec.pot_ok(inp.pot_counts, self.cfg):
                jaw = rec.jaw_um_of(inp.pot_counts, self.cfg) - self.cfg.hold_squeeze_um
                self._set_jaw(jaw if jaw > 0 else 0)
                return
        self.stall_stage = 2
        self.servos[4].limp()
        m.events.put(m, K_NOTE, IDLE, IDLE, R_UNPOWERED)

    def _stop_gripper(self):
        # A fault (the e-stop above all) stops the gripper where its driver is in this same tick:
        # the jaw's pulse does not change, so a closing jaw closes no further (the driver would
        # otherwise brake within its acceleration limit, over a millimetre past the press). The
        # jaw is light: stopping it dead jolts nothing. The arm joints do brake to their frozen
        # setpoints (a few degrees at most): an arm carrying its own links and a part, stopped
        # dead from full speed, jerks and rings, and a hobby servo's arm gains nothing from it.
        # A fault that sends the jaw elsewhere (CRUSH backs it off) is left to do so.
        sv = self.servos[4]
        if not sv.enabled:
            return
        pos = sv.stop(servo_cal.JAW_MDEG_PER_UM)
        self._set_jaw(servo_cal.servo_to_joint_mdeg(4, pos))

    def _set_jaw(self, jaw_um):
        # Command and setpoint at once (a back-off that must not wait for the jaw's slew).
        self.m.out.jaw_um = jaw_um
        self.motion.jaw_um = jaw_um
        self.still = 0

    def _watch_rail(self, now):
        # RAIL_LOW holds all motion. A rail that stays low while everything holds, or sags far
        # below its unloaded level while the arm stands still, is a servo drawing stall current
        # (module comment): after current_stall_ms the arm's PWM goes off.
        mv = self.rail.mv
        sag = self.rail_sag_mv
        if sag and self.still and not self.arm_off and self.rail_idle_mv - mv > sag:
            if self.sag_since < 0:
                self.sag_since = now
            elif ms_diff(now, self.sag_since) >= self.stall_ms:
                self._arm_stalled()
        else:
            self.sag_since = -1
        low = self.rail_low_mv
        if mv >= low or low == 0:
            self.rail_since = -1
            self.rail_reads = 0
            self.rail_fired = 0
            return
        if self.rail_since < 0:
            self.rail_since = now
        if not self.rail_fired:
            # counted only until it fires: a rail left low for weeks never grows a big int
            self.rail_reads += 1
            if self.rail_reads >= self.rail_low_reads:
                self.rail_fired = 1
                self.m.latch_fault(F_RAIL_LOW)
                self._stop_gripper()
        elif (self.rail_fired == 1 and not self.arm_off
              and ms_diff(now, self.rail_since) >= self.rail_low_ms + self.stall_ms):
            self.rail_fired = 2
            self._arm_stalled()

    def _arm_stalled(self):
        self.m.latch_fault(F_STALL)
        self._arm_unpowered()

    def _arm_unpowered(self):
        m = self.m
        for i in range(4):
            self.servos[i].limp()
        self.arm_off = 1
        self.arm_pose_known = 1          # it stands (about) where its setpoints are
        self.sag_since = -1
        m.events.put(m, K_NOTE, IDLE, IDLE, R_UNPOWERED)

    @micropython.native
    def busy(self):
        # Anything moving the arm on purpose: flash writes and new jobs wait.
        return (self.m.busy() or self.rescue_op is not None or self.cal is not None or self.motion.active
                or self.job_waiting is not None or self.teleop.on)

    def load_teleop(self):
        # -> the teleop_mode module, its mode made on first use (a request handler, at rest:
        # a MemoryError here is the caller's to answer).
        from . import teleop_mode
        if self.teleop is TeleopOff:
            self.teleop = teleop_mode.TeleopMode(self)
        return teleop_mode

    def rescue_done(self, rescue):
        # The operator's rescue ended (placed, rested, or latched its fault). The App logs it.
        pass

    # ---- commands (from the link, or from an engine driving the controller directly) ----

    def start_job(self, job, payload_checked=0):
        # -> the machine's answer (machine.OK, E_BUSY, ...). A started job leaves its marker on
        # flash, so a reset mid-cycle is known at the next boot; the marker is written once the
        # arm has settled, and the cycle begins only after it.
        r = self.job_refusal()
        if r:
            return r
        if not payload_checked:
            self.payload_refused = self.payload_check(job)
            if self.payload_refused:
                return E_PAYLOAD
        r = self.m.start_job(job, self.check_pose)
        if r == M_OK and self.persist:
            self.job_waiting = job
            self.m.job_pending = 0       # the machine begins when the marker is on flash
            self._start_waiting_job()
        return r

    def payload_check(self, job):
        # -> None, or (servo slot, N m it needs, its stall torque N m): the description's part
        # (bench.part_g) is more than that servo holds at the worst pose of this job's path with
        # torque to spare (shared_fsm/payload.py). A path out of reach is left to the machine's
        # own check, which names it. The module is loaded for the check only (heap on the chip).
        # A job it passes lifts higher by the sag the description predicts at the lift's end
        # (the machine's lift_up_um; host/records/replay.py does the same).
        from ..shared_fsm import payload
        m = self.m
        m.lift_up_um = 0
        lift = self.cfg.approach_height_um / 1000.0
        try:
            r = payload.check(self.arm, [v / 1000.0 for v in job.pick], [v / 1000.0 for v in job.place], lift)
            if r is None:
                m.lift_up_um = payload.lift_up_um(self.arm, self.cfg, job.pick)
            return r
        except ValueError:
            return None
        finally:
            if sys.implementation.name == "micropython":
                payload = None
                arm_file.drop(arm_file.SHARED, "payload")
                gc.collect()             # its bytecode back before the moves begin

    def job_refusal(self):
        # -> what start_job answers whatever the job (M_OK: a job may start now). Changes
        # nothing, so a caller asks it before it sets anything up for a job (App._job).
        if (self.rescue_op is not None or self.cal is not None or self.job_waiting is not None
                or self.teleop.on):
            return M_BUSY
        if self.arm_error:
            return E_ARM_INVALID         # no valid arm description: nothing moves (arm_error says why)
        if self.arm_off and not self.m.fault and not self.m.holding:
            return M_ARM_OFF             # (faulted, or a part held: the machine says so first)
        return self.m.refusal()

    def _start_waiting_job(self):
        job = self.job_waiting
        if self.m.fault or self.m.inp.estop:
            self.job_waiting = None      # latched meanwhile: the job is off
            return
        if not self.settled():
            return
        self.job_waiting = None
        if self.settings_unsaved:
            self._save_settings()        # the job's approach height (App._job), before its marker
        if self.write_marker(job):
            self.m.job_pending = 1
        else:
            self.m.abort()               # no marker, no job: a reset mid-cycle would go unseen

    def write_marker(self, job):
        # -> 1 when the marker is on flash
        self.flash_tick = 1
        return rec.write_marker_at(self.root, (job.pick, job.place, job.part_width_um, job.max_attempts))

    def abort_job(self):
        # -> True when there was something to abort (a rescue, a waiting or running job).
        m = self.m
        if self.rescue_op is not None:
            self.rescue_op = None
            m.latch_fault(F_ABORTED)
            return True
        if self.job_waiting is not None:
            self.job_waiting = None
            m.abort()
            return True
        if m.busy():
            m.abort()
            return True
        return False

    # ---- the operator's rescue (link RESCUE) ----

    def release_estop(self):
        # The e-stop's latch lets go only when asked (a clear, a rescue) and only once its
        # contact has read closed for estop_reset_ms.
        self.estop.reset()
        self.m.inp.estop = self.estop.latched

    def known_job(self):
        # (pick, place, width_um, attempts) of the last job: the machine's, or the marker's
        # after a reset; None when neither is known.
        m = self.m
        if m.part_width_um > 0:
            return ((m.px, m.py, m.pz, m.pp), (m.tx, m.ty, m.tz, m.tp), m.part_width_um, m.max_attempts)
        if self.marker is not None:
            return self.marker.get("job")
        return None

    def rescue(self, action, near, now, pose=None):
        # -> None when started (or done at once), else (link error code, payload) to reply.
        # pose: the jaw pose (x, y, z um, pitch mdeg) the operator measured, with NEAR_GIVEN.
        m = self.m
        if action < 0 or action > link.RESCUE_RELEASE:
            return link.E_BAD_VALUE, ("action",)
        if near < 0 or near > link.NEAR_GIVEN or (near == link.NEAR_GIVEN) != (pose is not None):
            return link.E_BAD_VALUE, ("near",)
        if self.arm_error:
            return link.E_STATE, ("arm_invalid",)   # nothing moves on a bad arm description
        if action != link.RESCUE_RELEASE:
            # rescue.py loads with the first carrying rescue, before anything is changed: a heap
            # too full to load it refuses the rescue (docs/rp2040.md, heap on the chip)
            if not _loaded("rescue"):
                self.flash_tick = 1
            try:
                from . import rescue as rescue_mod
            except MemoryError:
                return link.E_BUSY, ("heap",)
        self.release_estop()
        if m.inp.estop:
            return link.E_STATE, ("estop",)
        if self.rescue_op is not None or self.cal is not None or m.busy() or self.job_waiting is not None:
            return link.E_BUSY, ()
        job = self.known_job()
        cfg = self.cfg
        if action == link.RESCUE_RELEASE:
            if not self.servos[4].enabled and not self._engage_gripper():
                return link.E_STATE, ("gripper_off",)
            width = job[2] if job is not None else m.jaw_max_um
            open_um = width + cfg.open_margin_um
            m.clear_fault()
            self._rescue_note()
            m.release(open_um if open_um < m.jaw_max_um else m.jaw_max_um)
            return None
        if action == link.RESCUE_PLACE:
            if not m.holding:
                return link.E_STATE, ("not_holding",)
            if job is None:
                return link.E_STATE, ("no_job",)
        if self.arm_off:
            if near == link.NEAR_SETPOINT:
                if not self.arm_pose_known:
                    return link.E_STATE, ("arm_unpowered",)
                q = list(self.motion.joints)   # unpowered by a watch: it stands about there
            elif near == link.NEAR_REST:
                q = self.rest_q
            elif near != link.NEAR_GIVEN and job is None:
                return link.E_STATE, ("no_job",)
            else:
                if near == link.NEAR_GIVEN:
                    at = pose
                else:
                    at = job[0] if near == link.NEAR_PICK else job[1]
                try:
                    q = _joints_of(self.arm, at)
                except ValueError:
                    return link.E_BAD_VALUE, ("near",)
        elif near != link.NEAR_SETPOINT:
            return link.E_STATE, ("arm_powered",)
        if not self.servos[4].enabled:
            self._engage_gripper()       # PWM back on where the pot says (off if it cannot)
        m.clear_fault()
        self._rescue_note()
        if self.arm_off:
            self._engage_arm(q)
        place = job[1] if job is not None else None
        width = job[2] if job is not None else 0
        if place is not None:            # where a clean cycle ends: above the place pose
            rest = (place[0], place[1], place[2] + cfg.approach_height_um, place[3])
        else:
            rest = _pose_of(self.arm, self.arm.home_mdeg)
        r = rescue_mod.Rescue(m, action, place, width, _pose_of(self.arm, self.motion.joints), rest,
                       self.settings.board["recover_safe_z_um"])
        self.rescue_op = r
        r.start(now)
        return None

    def _rescue_note(self):
        m = self.m
        m.events.put(m, K_NOTE, IDLE, IDLE, R_RESCUE)

    def _engage_arm(self, q):
        # PWM back on for the arm servos, at the joint pose the operator named: the planner and
        # the drivers start there (a servo then moves only by how far the arm really is off it).
        mo = self.motion
        for i in range(4):
            mo.joints[i] = q[i]
            sv = self.servos[i]
            sv.reset(self.arm.servo_mdeg(i, q[i]))
            sv.enabled = 1 if i < 3 or self.arm.has_wrist else 0   # no servo in the slot: never driven
            self.hal.set_pulse_us(i, sv.pulse)
        mo.active = 0
        mo.seq = self.m.out.move_seq
        self.arm_off = 0
        self.arm_pose_known = 0
        self.still = 0

    def _engage_gripper(self):
        # PWM back on for the gripper where its pot says it is. -> False when the pot is broken.
        inp = self.m.inp
        if not rec.pot_ok(inp.pot_counts, self.cfg):
            return False
        jaw = rec.jaw_um_of(inp.pot_counts, self.cfg)
        jaw = jaw if jaw > 0 else 0
        sv = self.servos[4]
        sv.reset(servo_cal.joint_to_servo_mdeg(4, jaw))
        sv.enabled = 1
        self.hal.set_pulse_us(4, sv.pulse)
        self._set_jaw(jaw)
        self.stall_stage = 0
        return True

    def start_calibration(self, target, rid, now):
        # -> None when started, or (code, payload) to reply at once. calibrate.py loads with the
        # first calibration, at rest: a board that is never calibrated does not hold its bytecode
        # (docs/rp2040.md, heap on the chip); that tick counts as maintenance, like a collection.
        if not _loaded("calibrate"):
            self.flash_tick = 1
        try:
            from .calibrate import Calibration
        except MemoryError:
            return link.E_BUSY, ("heap",)
        c = Calibration(target, rid)
        err = c.start(self, now)
        if err:
            return err
        self.cal = c
        return None

    def calibration_done(self, cal, code, payload):
        # Called by the Calibration when it has a result (or failed): apply and persist.
        self.cal = None
        if code == link.OK:
            self.apply_settings()
            if self.persist:
                self.settings_unsaved = 1
                if self.settled():       # else as soon as the jaw it moved is still again
                    self._save_settings()
        self.calibrated(cal, code, payload)

    def _save_settings(self):
        self.settings_unsaved = 0
        self.flash_tick = 1
        self.settings.save(self.root + settings_mod.PATH)

    def calibrated(self, cal, code, payload):
        # The App replies to the request here.
        pass

    def apply_settings(self):
        # Everything that can change without a reboot (pins, loop rate and watchdog need one).
        s = self.settings
        self.m.reconfigure()
        self.sensors.apply(s)
        self._cache_limits()
        for i in range(5):
            sv = self.servos[i]
            sv.cal = self._servo_cal(i)
            speed, accel = s.servo_limits(i)
            sv.vmax = speed * 1000
            sv.accel = accel
            sv.d_brake = speed * speed * 500 // accel

    # ---- flash files the next boot reads ----

    def save_rest(self):
        # The pose the next clean boot commands first (and NEAR_REST after an interruption).
        if self.persist and not self.arm_off:
            self.flash_tick = 1
            self.rest_q = tuple(self.motion.joints)
            rec.write_rest_at(self.root, self.motion.joints, self.motion.jaw_um)

    def clear_marker(self):
        if self.persist:
            self.flash_tick = 1
            rec.clear_marker_at(self.root)
