# The arm description: one validator and the analytic kinematics of each kind of arm
# (docs/arm-description.md). Runs on the board (MicroPython) and on the host alike: the board
# validates /arm.json with it at boot, the host validates a TOML file with it before anything
# else looks at the numbers. Floats are fine: this runs when a move is planned, never per tick.
#
#   arm = validate(description_dict)     # -> Arm, or raises ArmError naming the field (arm_check.py)
#   q = arm.inverse(x_mm, y_mm, z_mm, pitch_deg)   # -> [q0, q1, q2, q3] deg, or Unreachable
#   x, y, z, pitch = arm.forward(q)
#   wrist, jaw, tool_dir, left = arm.frame(q)      # world points / unit vectors (mm)
#   tip_l, tip_r = arm.finger_tips(q, jaw_mm)
#
# The joint vector always has four slots (base yaw, shoulder, elbow, wrist pitch), whatever the
# kind, because the board drives five servo slots. What a slot means per kind:
#   serial          q1 shoulder elevation, q2 elbow relative to the upper arm (0 straight,
#                   negative bends down), q3 wrist relative to the forearm; pitch = q1+q2+q3
#   serial_nowrist  as serial, no wrist servo: q3 is always 0 and the tool sits at
#                   geometry.wrist_fixed_deg to the forearm; the pitch follows the pose
#   parallel        q1 shoulder elevation, q2 the forearm's ABSOLUTE angle to the horizontal
#                   (what the elbow servo sets through the linkage); q3 always 0, hand level:
#                   the pitch is geometry.hand_pitch_deg whatever the pose
# Kinds without a free pitch ignore the pitch a pose asks for (IK solves the position) and
# forward() reports the pitch the arm has.
import math

from .compat import const

FORMAT = const(1)
N_ARM_JOINTS = const(4)
JOINT_NAMES = ("base", "shoulder", "elbow", "wrist")
SERVO_NAMES = ("base", "shoulder", "elbow", "wrist", "gripper")
KINDS = ("serial", "serial_nowrist", "parallel")
GRIPPER = const(4)
WRIST = const(3)

# Reasons a pose is unreachable (Unreachable.code).
TOO_FAR = const(1)
TOO_CLOSE = const(2)
JOINT_LIMIT = const(3)
BELOW_TABLE = const(4)
REASON_NAMES = ("", "too far", "too close", "joint limit", "below the table")



class ArmError(ValueError):
    # One bad field: .field is its dotted path ("servos.elbow.min_us"), the message says what
    # is wrong with it and what would be right.
    def __init__(self, field, message):
        super().__init__("arm description field '%s': %s" % (field, message))
        self.field = field


class Unreachable(ValueError):
    def __init__(self, code, detail):
        # super(), not ValueError.__init__(self, ...): MicroPython has no unbound __init__ there
        super().__init__("pose unreachable (%s): %s" % (REASON_NAMES[code], detail))
        self.code = code
        self.detail = detail


def _where(x_mm, y_mm, z_mm, pitch_deg):
    # Built only when a pose is refused: formatting floats allocates.
    return "x=%.1f y=%.1f z=%.1f pitch=%.1f" % (x_mm, y_mm, z_mm, pitch_deg)


def joints_of(kind):
    # The joints (and arm servos) a kind has.
    if kind == "serial":
        return JOINT_NAMES
    return JOINT_NAMES[:3]


def validate(d):
    # The description (a dict, as parsed from TOML or JSON) -> an Arm. Raises ArmError naming the
    # first bad field. The schema and its checks live in arm_check.py, imported here: the board
    # validates once at boot and then drops that module (firmware/arm_file.py) to get its heap
    # back.
    from . import arm_check
    return arm_check.validate(d)


class Arm:
    # A validated description. Attributes are plain dicts/lists of the checked values; the
    # geometry is also cached as floats for the kinematics.
    def __init__(self, top, geo, joints, servos, models, grip, links, sensors, bench):
        self.name = top["name"]
        self.kind = top["kind"]
        self.notes = top["notes"]
        self.geo = geo
        self.joint_names = joints_of(self.kind)
        self.servo_names = self.joint_names + ("gripper",)
        self.joints = joints
        self.servos = servos
        self.servo_models = models
        self.gripper = grip
        self.links = links
        self.sensors = sensors
        self.bench = bench
        # per joint: (min, max, coupled joint index or -1, coupled_min, min_per, coupled_max, max_per)
        lims = []
        for j in range(len(joints)):
            lim = joints[j]
            c = lim["coupled_to"]
            ci = self.joint_names.index(c) if c in self.joint_names else -1
            lims.append((lim["min_deg"], lim["max_deg"], ci, lim["coupled_min_deg"], lim["min_per_deg"],
                         lim["coupled_max_deg"], lim["max_per_deg"]))
        self._lims = tuple(lims)
        self.has_wrist = 1 if self.kind == "serial" else 0
        self.free_pitch = self.has_wrist
        # The firmware's joint -> servo angle map of slots 0..3, integers for the loop: servo mdeg
        # = zero + joint mdeg * gear // 1000 (gear in servo mdeg per joint degree); a servo that
        # turns against its joint (direction -1) has its pulse mirrored (servo_cal's inverted).
        self.servo_zero = tuple(self.zero_mdeg(i) for i in range(N_ARM_JOINTS))
        self.servo_gear = tuple(1000 if self.servo(i) is None else int(round(self.servo(i)["gear"] * 1000.0))
                                for i in range(N_ARM_JOINTS))
        self.geared = 0 if self.servo_gear == (1000, 1000, 1000, 1000) else 1
        self.home_mdeg = tuple(int(round(v * 1000.0)) for v in self.home_deg())
        self.jaw_max_um = int(round(grip["jaw_max_mm"] * 1000.0))   # the widest this gripper opens
        self.H = geo["base_height_mm"]
        self.S = geo["shoulder_forward_mm"]
        self.U = geo["upper_arm_mm"]
        self.F = geo["forearm_mm"]
        self.T = geo["tool_mm"]
        self.D = geo["tool_drop_mm"]
        self.min_radius_mm = geo["min_radius_mm"]
        self.min_z_mm = geo["min_z_mm"]
        if self.kind == "serial_nowrist":
            th = math.radians(geo["wrist_fixed_deg"])
            self._tool_rel = th
        elif self.kind == "parallel":
            th = math.radians(geo["hand_pitch_deg"])
            self._tool_rel = th
        else:
            th = 0.0
            self._tool_rel = 0.0
        # serial_nowrist: elbow -> jaw centre is one rigid link of length L2 at phi to the forearm
        vx = self.F + self.T * math.cos(th) + self.D * math.sin(th)
        vy = self.T * math.sin(th) - self.D * math.cos(th)
        self.L2 = math.sqrt(vx * vx + vy * vy)
        self.phi = math.atan2(vy, vx)
        # parallel: the level hand's offset from the wrist pivot to the jaw centre (r, z)
        self.hand_r = self.T * math.cos(th) + self.D * math.sin(th)
        self.hand_z = self.T * math.sin(th) - self.D * math.cos(th)

    # ---- limits ----

    def limit(self, j, q_coupled=0.0):
        # (min, max) deg of joint j given the angle of the joint it is coupled to.
        lo, hi, ci, cmin, kmin, cmax, kmax = self._lims[j]
        if ci >= 0:
            clo = cmin + kmin * q_coupled
            chi = cmax + kmax * q_coupled
            if clo > lo:
                lo = clo
            if chi < hi:
                hi = chi
        return lo, hi

    def joint_span(self, j):
        # The joint's own range: what its servo must be able to reach.
        return self.joints[j]["min_deg"], self.joints[j]["max_deg"]

    def coupled_index(self, j):
        return self._lims[j][2]

    def check_limits(self, q, pose=None):
        # Raises Unreachable(JOINT_LIMIT) naming the first joint outside its (coupled) range;
        # pose (x, y, z, pitch) only goes into the message. No allocation unless it raises.
        lims = self._lims
        for j in range(len(lims)):
            lo, hi, ci, cmin, kmin, cmax, kmax = lims[j]
            if ci >= 0:
                clo = cmin + kmin * q[ci]
                chi = cmax + kmax * q[ci]
                if clo > lo:
                    lo = clo
                if chi < hi:
                    hi = chi
            if q[j] < lo - 1e-6 or q[j] > hi + 1e-6:
                e = Unreachable(JOINT_LIMIT, "%s %.1f deg outside %.0f..%.0f%s"
                                % (self.joint_names[j], q[j], lo, hi,
                                   (" at " + _where(pose[0], pose[1], pose[2], pose[3])) if pose else ""))
                e.joint = j
                raise e

    def home_deg(self):
        b = self.bench
        return [b["home_base_deg"], b["home_shoulder_deg"], b["home_elbow_deg"],
                b["home_wrist_deg"] if self.has_wrist else 0.0]

    # ---- kinematics ----

    def inverse(self, x_mm, y_mm, z_mm, pitch_deg):
        # -> joint angles in degrees [q0..q3], elbow-up solution. Raises Unreachable.
        yaw = math.atan2(y_mm, x_mm)
        r = math.sqrt(x_mm * x_mm + y_mm * y_mm)
        kind = self.kind
        U = self.U
        if kind == "serial":
            p = math.radians(pitch_deg)
            cp = math.cos(p)
            sp = math.sin(p)
            # operation order as the reference arm's original closed form (bit-equal results)
            rw = r - self.T * cp - self.D * sp - self.S
            zw = z_mm - self.T * sp - self.H + self.D * cp
            L = self.F
        elif kind == "parallel":
            rw = r - self.hand_r - self.S
            zw = z_mm - self.hand_z - self.H
            L = self.F
        else:
            rw = r - self.S
            zw = z_mm - self.H
            L = self.L2
        d2 = rw * rw + zw * zw
        c = (d2 - U * U - L * L) / (2.0 * U * L)
        if r < self.min_radius_mm:
            raise Unreachable(TOO_CLOSE, _where(x_mm, y_mm, z_mm, pitch_deg))
        if z_mm < self.min_z_mm:
            raise Unreachable(BELOW_TABLE, _where(x_mm, y_mm, z_mm, pitch_deg))
        if c > 1.0:
            raise Unreachable(TOO_FAR, _where(x_mm, y_mm, z_mm, pitch_deg))
        if c < -1.0:
            raise Unreachable(TOO_CLOSE, _where(x_mm, y_mm, z_mm, pitch_deg))
        b = -math.acos(c)
        q1 = math.atan2(zw, rw) - math.atan2(L * math.sin(b), U + L * math.cos(b))
        if kind == "serial":
            q = [math.degrees(yaw), math.degrees(q1), math.degrees(b), 0.0]
            q[3] = pitch_deg - q[1] - q[2]
        elif kind == "parallel":
            q = [math.degrees(yaw), math.degrees(q1), math.degrees(q1 + b), 0.0]
        else:
            q = [math.degrees(yaw), math.degrees(q1), math.degrees(b - self.phi), 0.0]
        self.check_limits(q, (x_mm, y_mm, z_mm, pitch_deg))
        return q

    def _angles(self, q_deg):
        # (shoulder, forearm, tool) absolute angles in rad in the arm's vertical plane
        q1 = math.radians(q_deg[1])
        if self.kind == "parallel":
            return q1, math.radians(q_deg[2]), self._tool_rel
        q12 = q1 + math.radians(q_deg[2])
        if self.kind == "serial":
            return q1, q12, q12 + math.radians(q_deg[3])
        return q1, q12, q12 + self._tool_rel

    def forward(self, q_deg):
        # Joint angles in degrees -> (x, y, z of the jaw centre in mm, tool pitch in degrees).
        a1, a2, a3 = self._angles(q_deg)
        c3 = math.cos(a3)
        s3 = math.sin(a3)
        # operation order as the reference arm's original closed form (bit-equal results)
        r = self.U * math.cos(a1) + self.F * math.cos(a2) + self.T * c3 + self.D * s3 + self.S
        z = self.H + self.U * math.sin(a1) + self.F * math.sin(a2) + self.T * s3 - self.D * c3
        yaw = math.radians(q_deg[0])
        return (r * math.cos(yaw), r * math.sin(yaw), z, math.degrees(a3))

    def frame(self, q_deg):
        # -> (wrist point, jaw centre, tool direction, left direction): points in mm and unit
        # vectors in the world frame. The wrist point is the wrist axis (serial) or the level
        # hand's pivot (parallel); "left" is the direction the left finger opens to.
        a1, a2, a3 = self._angles(q_deg)
        yaw = math.radians(q_deg[0])
        cy, sy = math.cos(yaw), math.sin(yaw)
        rw = self.S + self.U * math.cos(a1) + self.F * math.cos(a2)
        zw = self.H + self.U * math.sin(a1) + self.F * math.sin(a2)
        rj = rw + self.T * math.cos(a3) + self.D * math.sin(a3)
        zj = zw + self.T * math.sin(a3) - self.D * math.cos(a3)
        ca, sa = math.cos(a3), math.sin(a3)
        return ((rw * cy, rw * sy, zw), (rj * cy, rj * sy, zj), (ca * cy, ca * sy, sa), (-sy, cy, 0.0))

    def finger_tips(self, q_deg, jaw_mm):
        # -> (left tip, right tip): the inner corners of the finger tips (mm, world frame) at a
        # jaw opening of jaw_mm (the left finger's pad face, the right finger's face).
        _, jaw, u, left = self.frame(q_deg)
        t = self.gripper["finger_tip_mm"]
        h = jaw_mm / 2.0
        tl = tuple(jaw[i] + t * u[i] + h * left[i] for i in range(3))
        tr = tuple(jaw[i] + t * u[i] - h * left[i] for i in range(3))
        return tl, tr

    def inverse_mdeg(self, x_um, y_um, z_um, pitch_mdeg, out):
        # Integer front end: writes q0..q3 in millidegrees into the list `out`.
        q = self.inverse(x_um / 1000.0, y_um / 1000.0, z_um / 1000.0, pitch_mdeg / 1000.0)
        for i in range(N_ARM_JOINTS):
            out[i] = int(round(q[i] * 1000.0))
        return out

    # ---- servos ----

    def servo_cal(self, i):
        # (min_us, max_us, trim_us, inverted, travel_mdeg) of servo slot i, as shared_fsm.servo_cal
        # takes it (a slot the kind has no servo for: the default calibration, never driven).
        if i == WRIST and not self.has_wrist:
            return (500, 2500, 0, 0, 180000)
        s = self.servos[i if i < len(self.joint_names) else len(self.servos) - 1]
        return (s["min_us"], s["max_us"], s["trim_us"], 1 if s["direction"] < 0 else 0, s["travel_deg"] * 1000)

    def load_stall_sag_mv(self):
        # The servo rail's sag (mV) with the shoulder and the elbow servo both at stall: their
        # stall currents (servo_models stall_ma_5v) through the rail's source resistance
        # (sensors.rail.source_mohm). A carried part the arm can lift never draws it at rest.
        ma = 0.0
        for i in (1, 2):
            ma += self.servo_models[self.servo(i)["model"]]["stall_ma_5v"]
        return int(ma * self.sensors["rail"]["source_mohm"] / 1000.0)

    def lift_droop_um_per_a(self, x_mm, y_mm, z_mm, pitch_deg):
        # How far (um) the jaw centre sinks at this pose per ampere more that the arm servos draw
        # to hold a weight at the jaw. A hobby servo holds a load inside its proportional band:
        # its shaft lags band_deg per stall torque (servo_models, the 4.8 V figures) and it draws
        # idle_ma plus (stall current - idle_ma) / stall torque per N m it gives, so the lag per
        # mA does not depend on the rail (sim/servo_model.py models the same law). A weight w at
        # the jaw asks joint i for w * J_i (J_i = dz/dq_i): the sink is w * sum(J_i^2 * B_i / T_i)
        # and the current w * sum(|J_i| * I_i / T_i), with T_i, I_i, B_i the stall torque, the
        # stall current above idle and the band at the joint (a geared servo's torque times its
        # gear, its band divided by it). Planning time only: one IK, four FK.
        q = self.inverse(x_mm, y_mm, z_mm, pitch_deg)
        z0 = self.forward(q)[2]
        sink = 0.0
        amps = 0.0
        for i in range(N_ARM_JOINTS):
            s = self.servo(i)
            if s is None:
                continue
            qd = list(q)
            qd[i] += 0.01
            j = (self.forward(qd)[2] - z0) / math.radians(0.01)     # mm per rad
            m = self.servo_models[s["model"]]
            g = s["gear"]
            t = m["stall_torque_nm_4v8"] * g
            sink += j * j * math.radians(m["band_deg"]) / g / t
            amps += abs(j) * (m["stall_ma_5v"] * 0.96 - m["idle_ma"]) / 1000.0 / t   # 4.8 V stall, A
        return 0 if amps <= 0.0 else int(sink / amps * 1000.0)

    def servo_pins(self):
        # The GPIO of servo slots 0..4 (the HAL's Pins.servo): -1 for a slot with no servo.
        return tuple(-1 if self.servo(i) is None else self.servo(i)["gpio"] for i in range(N_ARM_JOINTS + 1))

    def servo(self, i):
        # The servo entry of slot i (0..4), None for a wrist the kind does not have.
        if i == WRIST and not self.has_wrist:
            return None
        if i == GRIPPER:
            return self.servos[-1]
        return self.servos[i]

    def servo_mdeg(self, i, q_mdeg):
        # Arm slot i's joint angle (mdeg) -> its servo's angle (mdeg); not for the gripper.
        return self.servo_zero[i] + q_mdeg * self.servo_gear[i] // 1000

    def joint_mdeg(self, i, s_mdeg):
        # The inverse of servo_mdeg (to the mdeg below).
        return (s_mdeg - self.servo_zero[i]) * 1000 // self.servo_gear[i]

    def zero_mdeg(self, i):
        # Servo angle (mdeg) at joint angle 0 of arm slot i (0..3).
        s = self.servo(i)
        return 0 if s is None else int(round(s["zero_deg"] * 1000.0))

    def to_dict(self):
        # The validated description with every default filled in (what deploy ships as JSON).
        d = {"format": FORMAT, "name": self.name, "kind": self.kind, "geometry": dict(self.geo),
             "joints": {}, "servos": {}, "servo_models": {}, "gripper": dict(self.gripper),
             "links": dict(self.links), "sensors": {}, "bench": dict(self.bench)}
        if self.notes:
            d["notes"] = self.notes
        for i in range(len(self.joint_names)):
            d["joints"][self.joint_names[i]] = dict(self.joints[i])
        for i in range(len(self.servo_names)):
            d["servos"][self.servo_names[i]] = dict(self.servos[i])
        for k in self.servo_models:
            d["servo_models"][k] = dict(self.servo_models[k])
        for k in self.sensors:
            d["sensors"][k] = dict(self.sensors[k])
        return d
