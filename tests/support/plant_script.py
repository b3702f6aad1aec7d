# Open-loop scripting for the plant tests: straight-line tool moves with a smooth (bounded
# acceleration) profile, turned into pulses through the shared kinematics and servo calibration,
# exactly as the firmware would command them. No state machine, no feedback. Used by the plant
# tests in tests/sim.
import math

from surepick.shared_fsm import kinematics
from surepick.shared_fsm import servo_cal
from surepick.sim import plant as plant_mod

CONTROL_MS = 2  # the firmware's loop period
TOOL_DOWN_DEG = -90.0
GRASP_ABOVE_SUPPORT_MM = 15.0   # jaw centre above the part's support: pads cover 5..25 mm
SQUEEZE_MM = 6.0


def pulses_for(pose):
    # pose: (x_mm, y_mm, z_mm, pitch_deg, jaw_mm) -> 5 pulse widths with the default calibration.
    q = kinematics.inverse(pose[0], pose[1], pose[2], pose[3])
    out = []
    for i in range(4):
        s = servo_cal.joint_to_servo_mdeg(i, int(round(q[i] * 1000.0)))
        out.append(servo_cal.pulse_us(servo_cal.DEFAULT_CAL, s))
    s = servo_cal.joint_to_servo_mdeg(servo_cal.GRIPPER, int(round(pose[4] * 1000.0)))
    out.append(servo_cal.pulse_us(servo_cal.DEFAULT_CAL, s))
    return out


class Script:
    # Drives a plant through poses; remembers the last commanded pose.
    def __init__(self, plant, start_pose, on_tick=None):
        self.plant = plant
        self.pose = tuple(start_pose)
        self.on_tick = on_tick  # called after every control period (e.g. to log sensors)
        plant.set_pulses(pulses_for(self.pose))

    def tick(self):
        self.plant.advance(CONTROL_MS)
        if self.on_tick is not None:
            self.on_tick(self.plant)

    def move(self, x=None, y=None, z=None, pitch=None, jaw=None, speed_mm_s=150.0, jaw_speed_mm_s=60.0):
        # Straight line in tool space, cosine speed profile (zero speed at both ends).
        start = self.pose
        goal = tuple(start[i] if v is None else float(v) for i, v in enumerate((x, y, z, pitch, jaw)))
        dist = math.dist(start[:3], goal[:3])
        t_ms = max(dist / speed_mm_s * 1000.0 * 1.6, abs(goal[4] - start[4]) / jaw_speed_mm_s * 1000.0 * 1.6,
                   abs(goal[3] - start[3]) / 90.0 * 1000.0, 4.0)
        n = int(t_ms / CONTROL_MS) + 1
        for k in range(1, n + 1):
            s = 0.5 - 0.5 * math.cos(math.pi * k / n)
            pose = tuple(a + (b - a) * s for a, b in zip(start, goal))
            self.plant.set_pulses(pulses_for(pose))
            self.tick()
        self.pose = goal

    def wait(self, ms):
        for _ in range(int(ms) // CONTROL_MS):
            self.tick()


def grasp_z_mm(support_top_mm=plant_mod.SOURCE_TOP_Z_MM):
    return support_top_mm + GRASP_ABOVE_SUPPORT_MM


def home_pose(plant):
    x, y, z, pitch = kinematics.forward(plant.params.home_deg)
    return (x, y, z, pitch, plant.params.home_jaw_mm)


def pick(plant, width_mm=25.0, xy=plant_mod.SOURCE_XY_MM, lift_mm=60.0, on_tick=None, close_jaw_mm=None):
    # Open, descend over the part, close to width - squeeze, dwell 400 ms. Returns the script.
    sc = Script(plant, home_pose(plant), on_tick)
    gz = grasp_z_mm()
    sc.move(x=xy[0], y=xy[1], z=gz + 50.0, jaw=45.0)
    sc.move(z=gz, speed_mm_s=60.0)
    sc.wait(200)
    sc.move(jaw=(width_mm - SQUEEZE_MM) if close_jaw_mm is None else close_jaw_mm, jaw_speed_mm_s=40.0)
    sc.wait(400)
    return sc
