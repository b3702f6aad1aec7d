# Inverse and forward kinematics of the reference 4-DOF arm (docs/conventions.md).
# Every pose in surepick goes through here: the state machine's moves, the motion planner,
# the simulator's scripted tests and (later) teaching from a pose stream.
# Floats are used: this runs when a move is planned, never in the loop's hot path.
import math

from .compat import const

# Reference geometry in mm (../shared/HARDWARE.md).
BASE_HEIGHT_MM = 70.0
UPPER_ARM_MM = 105.0
FOREARM_MM = 100.0
WRIST_TO_JAW_MM = 95.0

N_ARM_JOINTS = const(4)
# Joint limits in degrees: base yaw, shoulder elevation, elbow (bends down), wrist pitch.
JOINT_MIN_DEG = (-90.0, 0.0, -180.0, -180.0)
JOINT_MAX_DEG = (90.0, 180.0, 0.0, 0.0)
JOINT_NAMES = ("base", "shoulder", "elbow", "wrist")

# Reasons a pose is unreachable (Unreachable.code).
TOO_FAR = const(1)
TOO_CLOSE = const(2)
JOINT_LIMIT = const(3)
BELOW_TABLE = const(4)
REASON_NAMES = ("", "too far", "too close", "joint limit", "below the table")
# Closer to the base axis than this, the folded arm would hit its own base column.
MIN_RADIUS_MM = 60.0
MIN_Z_MM = 0.0


class Unreachable(ValueError):
    def __init__(self, code, detail):
        # super(), not ValueError.__init__(self, ...): MicroPython has no unbound __init__ there
        super().__init__("pose unreachable (%s): %s" % (REASON_NAMES[code], detail))
        self.code = code
        self.detail = detail


def _where(x_mm, y_mm, z_mm, pitch_deg):
    # Built only when a pose is refused: formatting floats allocates, and inverse() is hot.
    return "x=%.1f y=%.1f z=%.1f pitch=%.1f" % (x_mm, y_mm, z_mm, pitch_deg)


def inverse(x_mm, y_mm, z_mm, pitch_deg):
    # Returns joint angles in degrees (q0..q3), elbow-up solution. Raises Unreachable.
    yaw = math.atan2(y_mm, x_mm)
    r = math.sqrt(x_mm * x_mm + y_mm * y_mm)
    p = math.radians(pitch_deg)
    rw = r - WRIST_TO_JAW_MM * math.cos(p)
    zw = z_mm - WRIST_TO_JAW_MM * math.sin(p) - BASE_HEIGHT_MM
    d2 = rw * rw + zw * zw
    c = (d2 - UPPER_ARM_MM * UPPER_ARM_MM - FOREARM_MM * FOREARM_MM) / (2.0 * UPPER_ARM_MM * FOREARM_MM)
    if r < MIN_RADIUS_MM:
        raise Unreachable(TOO_CLOSE, _where(x_mm, y_mm, z_mm, pitch_deg))
    if z_mm < MIN_Z_MM:
        raise Unreachable(BELOW_TABLE, _where(x_mm, y_mm, z_mm, pitch_deg))
    if c > 1.0:
        raise Unreachable(TOO_FAR, _where(x_mm, y_mm, z_mm, pitch_deg))
    if c < -1.0:
        raise Unreachable(TOO_CLOSE, _where(x_mm, y_mm, z_mm, pitch_deg))
    q2 = -math.acos(c)
    q1 = math.atan2(zw, rw) - math.atan2(FOREARM_MM * math.sin(q2), UPPER_ARM_MM + FOREARM_MM * math.cos(q2))
    q = [math.degrees(yaw), math.degrees(q1), math.degrees(q2), 0.0]
    q[3] = pitch_deg - q[1] - q[2]
    for i in range(N_ARM_JOINTS):
        if q[i] < JOINT_MIN_DEG[i] - 1e-6 or q[i] > JOINT_MAX_DEG[i] + 1e-6:
            raise Unreachable(JOINT_LIMIT, "%s %.1f deg outside %.0f..%.0f at %s"
                              % (JOINT_NAMES[i], q[i], JOINT_MIN_DEG[i], JOINT_MAX_DEG[i],
                                 _where(x_mm, y_mm, z_mm, pitch_deg)))
    return q


def forward(q_deg):
    # Joint angles in degrees -> (x, y, z of the jaw centre in mm, tool pitch in degrees).
    q1 = math.radians(q_deg[1])
    q12 = q1 + math.radians(q_deg[2])
    q123 = q12 + math.radians(q_deg[3])
    r = UPPER_ARM_MM * math.cos(q1) + FOREARM_MM * math.cos(q12) + WRIST_TO_JAW_MM * math.cos(q123)
    z = BASE_HEIGHT_MM + UPPER_ARM_MM * math.sin(q1) + FOREARM_MM * math.sin(q12) + WRIST_TO_JAW_MM * math.sin(q123)
    yaw = math.radians(q_deg[0])
    return (r * math.cos(yaw), r * math.sin(yaw), z, math.degrees(q123))


def inverse_mdeg(x_um, y_um, z_um, pitch_mdeg, out):
    # Integer front end used by the board-side motion planner: writes q0..q3 in millidegrees
    # into the preallocated list `out`.
    q = inverse(x_um / 1000.0, y_um / 1000.0, z_um / 1000.0, pitch_mdeg / 1000.0)
    for i in range(N_ARM_JOINTS):
        out[i] = int(round(q[i] * 1000.0))
    return out
