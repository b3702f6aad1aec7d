# IK o FK under the real `micropython` for every description in a JSON file (a list): joint
# angles drawn inside the (coupled) limits from a fixed LCG, kept where the pose is in the IK's
# workspace (in front of the base, above the table, elbow bent down), then FK -> IK -> FK.
#   micropython tests/mpy/arm_kinematics.py DESCRIPTIONS.json SAMPLES
# Prints "RESULT <name>_checked N", "RESULT <name>_bad N" and "RESULT fails N".
import json
import math
import sys

from surepick.shared_fsm import arm as arm_mod
from checks import result

descs = json.load(open(sys.argv[1]))
samples = int(sys.argv[2])
state = [12345]


def rnd():
    state[0] = (state[0] * 1103515245 + 12345) & 0x7FFFFFFF
    return state[0] / 2147483648.0


fails = 0
for d in descs:
    arm = arm_mod.validate(d)
    checked = 0
    bad = 0
    tries = 0
    while checked < samples and tries < samples * 20:
        tries += 1
        q = [0.0, 0.0, 0.0, 0.0]
        for j in range(len(arm.joint_names)):
            ci = arm.coupled_index(j)
            lo, hi = arm.limit(j, q[ci] if ci >= 0 else 0.0)
            q[j] = lo + (hi - lo) * rnd()
        x, y, z, p = arm.forward(q)
        yaw = math.radians(q[0])
        rs = x * math.cos(yaw) + y * math.sin(yaw)
        if arm.kind == "parallel":
            rel = q[2] - q[1]
        elif arm.kind == "serial_nowrist":
            rel = q[2] + math.degrees(arm.phi)
        else:
            rel = q[2]
        if rs < arm.min_radius_mm + 1e-6 or z < arm.min_z_mm + 1e-6 or not -179.9 < rel < -0.1:
            continue
        checked += 1
        q2 = arm.inverse(x, y, z, p)
        x2, y2, z2, p2 = arm.forward(q2)
        worst = 0.0
        for j in range(len(arm.joint_names)):
            worst = max(worst, abs(q2[j] - q[j]))
        if worst >= 0.01 or abs(x2 - x) >= 0.01 or abs(y2 - y) >= 0.01 or abs(z2 - z) >= 0.01 or abs(p2 - p) >= 0.01:
            bad += 1
            print("BAD", arm.name, q, q2)
    result(arm.name + "_checked", checked)
    result(arm.name + "_bad", bad)
    fails += bad
result("fails", fails)
