# Joint angle <-> servo angle <-> PWM pulse width, shared by the firmware (to command servos)
# and by the simulator's plant (to decode what the firmware wrote). Integer maths only.
from .compat import const

N_SERVOS = const(5)
GRIPPER = const(4)
# Servo angle (mdeg) = joint angle (mdeg) + offset; see docs/conventions.md.
_JOINT_OFFSET_MDEG = (90000, 0, 180000, 180000)
SERVO_RANGE_MDEG = const(180000)
# The gripper servo turns 4 degrees per mm of jaw opening: 4 mdeg per um.
JAW_MDEG_PER_UM = const(4)
JAW_MAX_UM = const(45000)

# Per-servo calibration: (min_us, max_us, trim_us, inverted, travel_mdeg): the servo turns
# travel_mdeg from min_us to max_us (the arm description's travel_deg: 180, or a 270-degree servo).
DEFAULT_CAL = (500, 2500, 0, 0, SERVO_RANGE_MDEG)
DEFAULT_CALS = (DEFAULT_CAL, DEFAULT_CAL, DEFAULT_CAL, DEFAULT_CAL, DEFAULT_CAL)


def joint_to_servo_mdeg(index, q_mdeg):
    if index == GRIPPER:
        return q_mdeg * JAW_MDEG_PER_UM  # q is the jaw opening in um
    return q_mdeg + _JOINT_OFFSET_MDEG[index]


def servo_to_joint_mdeg(index, s_mdeg):
    if index == GRIPPER:
        return s_mdeg // JAW_MDEG_PER_UM
    return s_mdeg - _JOINT_OFFSET_MDEG[index]


def clamp_servo_mdeg(s_mdeg, travel_mdeg=SERVO_RANGE_MDEG):
    if s_mdeg < 0:
        return 0
    if s_mdeg > travel_mdeg:
        return travel_mdeg
    return s_mdeg


def pulse_us(cal, s_mdeg):
    # Servo angle -> pulse width. The angle is clamped to the servo's travel first.
    # (travel 360000 mdeg times a 2500 us span stays a small int on the RP2040)
    t = cal[4]
    s = clamp_servo_mdeg(s_mdeg, t)
    if cal[3]:
        s = t - s
    return cal[0] + s * (cal[1] - cal[0]) // t + cal[2]


def servo_mdeg_from_pulse(cal, us):
    # Pulse width -> servo angle (the plant's view of what the firmware wrote).
    t = cal[4]
    s = (us - cal[2] - cal[0]) * t // (cal[1] - cal[0])
    s = clamp_servo_mdeg(s, t)
    if cal[3]:
        s = t - s
    return s
