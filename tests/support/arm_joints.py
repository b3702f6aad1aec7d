# The firmware's joint slots (degrees) onto a generated arm model's hinges, for tests that take
# MuJoCo's kinematics or dynamics as their oracle. Written here, apart from sim/plant.py's own
# mapping, so those tests check it rather than reuse it.
import math


def set_arm_joints(m, d, arm, q):
    """d.qpos for the joint slots q = (base, shoulder, elbow, wrist) in degrees."""
    def put(name, deg):
        d.qpos[m.jnt_qposadr[m.joint(name).id]] = math.radians(deg)
    put("base_yaw", q[0])
    put("shoulder", q[1])
    if arm.kind == "parallel":
        # the linkage: the elbow hinge is relative; the level hand's equality closes the chain
        put("elbow", q[2] - q[1])
        put("wrist", arm.geo["hand_pitch_deg"] - q[2])
    else:
        put("elbow", q[2])
        if arm.kind == "serial":
            put("wrist", q[3])
