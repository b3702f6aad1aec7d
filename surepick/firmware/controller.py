# The controller core: the input and servo drivers wired to a HAL, the shared machine and the
# motion planner, the boot (sense, recovery decision, servo start), calibration and the tick
# order. It exists once: the firmware's App is this core plus link, flash log, telemetry, HIL and
# LED (app.py), and the host simulator, the virtual board's shadow and the fit run this same code
# with the plant's pins as their HAL (hal/plant_pins.py).
#
# One tick, in order: inputs -> machine.step -> recovery finisher / calibration / teleop mode ->
# motion.tick -> servo drive. The caller owns the clock: the App waits for the next period on its
# HAL, an engine advances its plant one period after each tick.
#
# Flash: the job marker (/job.json) and the rest pose (/rest.json) belong to the core, because
# the next boot decides from them; they are written under `root` and only when `persist` is set
# (the App clears it under HIL, where the arm is simulated).
from ..shared_fsm import kinematics, link, servo_cal
from ..shared_fsm.codes import K_NOTE, F_INTERRUPTED
from ..shared_fsm.machine import Machine, OK as M_OK, E_BUSY as M_BUSY
from ..shared_fsm.motion import Motion
from ..shared_fsm.states import IDLE
from ..shared_fsm.ticks import ticks_diff as ms_diff

from . import boot_recovery as rec
from . import settings as settings_mod
from .calibrate import Calibration
from .sensors import Pot, Current, Rail, Switch, EStop
from .servo import Servo, drive as drive_servos
from .teleop_mode import TeleopMode


def check_pose(x_um, y_um, z_um, pitch_mdeg):
    # Raises ValueError (kinematics.Unreachable) when the pose is out of reach.
    kinematics.inverse(x_um / 1000.0, y_um / 1000.0, z_um / 1000.0, pitch_mdeg / 1000.0)


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
        self.estop = EStop(hal, pins.estop, b["estop_reset_reads"])

    def read(self, inp):
        inp.pot_counts = self.pot.read()
        inp.current_ma = self.current.read_ma()
        inp.rail_mv = self.rail.read_mv()
        inp.switch_pressed = self.switch.read()
        inp.beam_broken = self.beam.read()
        inp.estop = self.estop.read()

    def drivers(self):
        return (self.pot, self.current, self.rail, self.switch, self.beam, self.estop)

    def apply(self, b):
        # Settings that change without a reboot (b: the board section).
        self.pot.shift = b["pot_filter_shift"]
        c = self.current
        c.offset = b["current_offset_counts"]
        c.counts_per_a = b["current_counts_per_a"]
        c.shift = b["current_filter_shift"]
        c.holding_ma = b["current_holding_ma"]
        c.stall_ma = b["current_stall_ma"]
        self.rail.scale = 3300 * b["rail_divider_milli"] // 1000
        self.estop.reset_reads = b["estop_reset_reads"]


class Controller:
    # hal: a board HAL (hal/contract.py); root: the flash root ("" on a board); settings: a
    # settings.Settings, or None to load root + /config.json as a board does.
    def __init__(self, hal, root="", settings=None):
        self.hal = hal
        self.root = root
        self.settings = settings if settings is not None else settings_mod.load(root + settings_mod.PATH)
        self.cfg = self.settings.cfg
        hal.setup(self.settings.pins())
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
        self.finisher = None
        self.cal = None
        self.teleop = TeleopMode(self)   # off until asked (teleop_mode.py)
        self.persist = 1          # job marker, rest pose and calibrations go to flash
        self.flash_tick = 0       # this tick wrote flash (the App's timing statistics count it apart)
        self.now_ms = hal.ticks_ms()
        self.last_ms = self.now_ms
        self.reset_cause = 0
        self.boot_action = rec.ACT_NORMAL
        self.boot_grip = -1

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
            hal.sleep_ms(period)
        inp = self.m.inp
        steady = cfg.debounce_reads
        switch = 1 if sw >= steady else 0
        beam_on = 1 if beam >= steady else 0
        # 2. What happened last time, and where the arm stood at rest.
        marker = rec.read_marker_at(self.root, self.settings.rejected)
        rest_q, rest_jaw, rest_stored = rec.read_rest_at(self.root, self.settings.rejected)
        pot_is_ok = rec.pot_ok(inp.pot_counts, cfg)
        jaw_now = rec.jaw_um_of(inp.pot_counts, cfg) if pot_is_ok else -1
        if marker is not None:
            job = marker.get("job")
            width = job[2] if job is not None else 25000
            self.boot_grip = rec.assess_grip(jaw_now, switch, beam_on, width, cfg)
        self.boot_action = rec.decide(marker, self.boot_grip, self.settings.board["recover_finish"])
        jaw0 = rec.boot_jaw_um(marker, jaw_now, rest_jaw, pot_is_ok)
        if self.boot_action == rec.ACT_FINISH:
            hold = jaw_now - cfg.hold_squeeze_um        # firm the grip before anything moves
            jaw0 = hold if hold > 0 else 0
        # 3. Servos start exactly at the stored rest pose (arm) and the chosen jaw: no snap.
        self._start_servos(rest_q, jaw0 if jaw0 >= 0 else rest_jaw, jaw0 < 0)
        self.m.out.jaw_um = self.motion.jaw_um
        self.now_ms = hal.ticks_ms()
        self.last_ms = self.now_ms
        self.m.now = self.now_ms
        # 4. Act on the decision.
        if self.boot_action == rec.ACT_FINISH:
            q = [v / 1000.0 for v in rest_q]
            x, y, z, _ = kinematics.forward(q)
            self.finisher = rec.Finisher(self.m, marker["job"], (int(x * 1000), int(y * 1000), int(z * 1000)),
                                         self.settings.board["recover_safe_z_um"])
            self.m.events.put(self.m, K_NOTE, IDLE, IDLE, F_INTERRUPTED)
            self.finisher.start(self.now_ms)
        elif self.boot_action == rec.ACT_FAULT:
            self.m.latch_fault(F_INTERRUPTED)
        return marker, rest_stored, switch, beam_on

    def _start_servos(self, rest_q, jaw_um, jaw_unknown):
        s = self.settings
        pulses = [0, 0, 0, 0, 0]
        servos = []
        for i in range(5):
            target = servo_cal.joint_to_servo_mdeg(i, rest_q[i] if i < 4 else jaw_um)
            speed, accel = s.servo_limits(i)
            sv = Servo(self.hal, i, s.servo_cal(i), speed, accel, target)
            if i == 4 and jaw_unknown:
                sv.enabled = 0       # pot broken after an interruption: do not guess the jaw
                sv.pulse = 0
            pulses[i] = sv.pulse
            servos.append(sv)
        self.servos = servos
        self.hal.pwm_start(pulses)
        self.motion = Motion(self.cfg, rest_q, jaw_um)

    # ---- the tick ----

    def tick(self, now):
        # One loop period of the controller (module comment). Everything it does is visible in
        # the controller's state; nothing here waits.
        self.flash_tick = 0
        self.now_ms = now
        dt = ms_diff(now, self.last_ms)
        self.last_ms = now
        self.read_inputs()
        m = self.m
        m.step(now)
        if self.finisher is not None:
            if not self.finisher.step(now):
                f = self.finisher
                self.finisher = None
                self.finisher_done(f)
        if self.cal is not None:
            self.cal.step(self, now)
        if self.teleop.on:
            self.teleop.step(now)
        mo = self.motion
        mo.tick(now, m.out, m.inp)      # an unreachable move comes back as error_seq
        drive_servos(self.servos, mo.joints, mo.jaw_um, dt)

    def busy(self):
        # Anything moving the arm on purpose: flash writes and new jobs wait.
        return (self.m.busy() or self.finisher is not None or self.cal is not None or self.motion.active
                or self.teleop.on)

    def finisher_done(self, finisher):
        # The recovery finisher ended (placed, or latched its fault). The App counts it.
        pass

    # ---- commands (from the link, or from an engine driving the controller directly) ----

    def start_job(self, job):
        # -> the machine's answer (machine.OK, E_BUSY, ...). A started job leaves its marker on
        # flash, so a reset mid-cycle is known at the next boot.
        if self.finisher is not None or self.cal is not None or self.teleop.on:
            return M_BUSY
        r = self.m.start_job(job, check_pose)
        if r == M_OK and self.persist:
            self.flash_tick = 1
            rec.write_marker_at(self.root, (job.pick, job.place, job.part_width_um, job.max_attempts))
        return r

    def start_calibration(self, target, rid, now):
        # -> None when started, or (code, payload) to reply at once.
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
                self.flash_tick = 1
                self.settings.save(self.root + settings_mod.PATH)
        self.calibrated(cal, code, payload)

    def calibrated(self, cal, code, payload):
        # The App replies to the request here.
        pass

    def apply_settings(self):
        # Everything that can change without a reboot (pins, loop rate and watchdog need one).
        s = self.settings
        self.m.reconfigure()
        self.sensors.apply(s.board)
        for i in range(5):
            sv = self.servos[i]
            sv.cal = s.servo_cal(i)
            speed, accel = s.servo_limits(i)
            sv.vmax = speed * 1000
            sv.accel = accel
            sv.d_brake = speed * speed * 500 // accel

    # ---- flash files the next boot reads ----

    def save_rest(self):
        # The pose the next boot commands first.
        if self.persist:
            self.flash_tick = 1
            rec.write_rest_at(self.root, self.motion.joints, self.motion.jaw_um)

    def clear_marker(self):
        if self.persist:
            self.flash_tick = 1
            rec.clear_marker_at(self.root)
