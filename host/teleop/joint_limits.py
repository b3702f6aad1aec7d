# Joint speed and acceleration limits at the control rate. Near full stretch (or full fold) a
# small Cartesian move needs a large elbow move, faster than a hobby servo turns; sent anyway,
# the servo falls behind and the arm swings wide of the path. So the IK joints go through the
# firmware's own servo driver logic (firmware/servo.py: bounded speed and acceleration, braking
# before the target, tracking a moving target exactly when it can), run with a share of the
# board's limits, so the board's drivers can always keep up. Where this changes the joints,
# the pose they reach becomes the commanded target, and the tick says so (rate_limited).
from surepick.firmware import settings as fw_settings
from surepick.firmware.servo import Servo
from surepick.shared_fsm import kinematics as kin

LIMIT_SHARE = 0.8


class _NoPwm:
    def set_pulse_us(self, index, us):
        pass


class JointLimiter:
    def __init__(self, start_q_deg, control_hz, share=None, arm=None):
        # arm: the Arm whose joint -> servo map the board drives (None: the reference arm's)
        self.arm = arm = arm or kin.REFERENCE
        share = LIMIT_SHARE if share is None else share
        period = 1000.0 / control_hz
        self.dt_ms = int(round(period))
        if abs(period - self.dt_ms) > 1e-9:
            raise ValueError("control period must be whole milliseconds")
        st = fw_settings.Settings()
        hal = _NoPwm()
        self.servos = []
        for i in range(4):
            speed, accel = st.servo_limits(i)
            self.servos.append(Servo(hal, i, arm.servo_cal(i), max(1, int(speed * share)),
                                     max(1, int(accel * share)),
                                     arm.servo_mdeg(i, int(round(start_q_deg[i] * 1000.0)))))

    def reset(self, q_deg):
        for i, s in enumerate(self.servos):
            s.reset(self.arm.servo_mdeg(i, int(round(q_deg[i] * 1000.0))))

    def step(self, q_deg):
        # -> (limited joint angles deg, True when any joint was held back by more than 1 mdeg)
        out, limited = [], False
        for i, s in enumerate(self.servos):
            want = self.arm.servo_mdeg(i, int(round(q_deg[i] * 1000.0)))
            s.update(want, self.dt_ms)
            out.append(self.arm.joint_mdeg(i, s.pos) / 1000.0)
            limited = limited or abs(s.pos - want) > 1
        return out, limited
