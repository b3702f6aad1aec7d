# The payload check (docs/arm-description.md, "A part too heavy to hold"): can the arm's servos
# hold the bench's part (bench.part_g) at every pose of a job's path with torque to spare?
# A hobby servo has no current limit the board reads and no joint feedback; it holds a load by
# lagging inside its proportional band, so a servo asked for a large share of its stall torque
# sags the arm. Runs when a job starts (firmware/controller.py imports it then and drops it
# after) and in `surepick arm check`; floats are fine: planning time, never per tick.
#
#   need = holding_nm(arm, q, part_g)     # N m each arm servo gives to hold the arm and the part
#   r = check(arm, pick, place, lift_mm)  # None, or (slot, need_nm, stall_nm, worst q): refuse
#   sag = lift_sag_um(arm, x, y, z, pitch, part_g)  # um the jaw sags there, held still
#   up = lift_up_um(arm, cfg, pick_um)              # how much higher a job's lift ends
import math

from .compat import const

G = 9.81                  # m/s^2
TORQUE_REF_MV = const(4800)   # servo_models' stall torque is the 4.8 V figure; it scales with the rail
# The share of a servo's stall torque (at the rail's nominal voltage) a held load may ask for.
# Derived from the simulator's measured sag (docs/arm-description.md): al5d_mg996r lifts a 20 g
# part with its shoulder at 43.8 % and falls short of the lift from 30 g on (46.0 %).
HOLD_PCT = const(45)
LINE_STEPS = const(6)     # points checked along each straight move (the lift, the placing)
FREE_STEPS = const(8)     # and along the transfer, which moves in joint space


def _radii(arm, q):
    # (shoulder axis, elbow, wrist, tool angle's cos, sin) in the arm's vertical plane (mm)
    a1, a2, a3 = arm._angles(q)
    re = arm.S + arm.U * math.cos(a1)
    return arm.S, re, re + arm.F * math.cos(a2), math.cos(a3), math.sin(a3)


def holding_nm(arm, q, part_g, signed=0):
    # -> [N m] the static torque each arm servo slot 0..3 gives to hold the arm and a part of
    # part_g at the jaw centre, still, at joint angles q (deg); signed: + where the weight lies
    # on the joint's far side (gravity turns it its - way), - where it lies behind. Gravity only: each mass's weight
    # times its horizontal lever from the joint's axis, the masses where the simulator puts them
    # (sim/arm_model.py): the upper and forearm at their middles, a serial arm's elbow and wrist
    # servos at the elbow and the wrist, the palm at its middle, the fingers' plates at theirs,
    # the pads and the part at the jaw centre. Parallel arms (docs, "kind"): the elbow servo
    # sets the forearm's absolute angle and the hand stays level, so whatever the forearm
    # carries weighs on the shoulder at the elbow and whatever the hand carries weighs on the
    # elbow servo at the wrist (virtual work through the linkage). A geared servo gives its
    # joint's torque divided by the gear. The base servo holds no weight: 0.
    rs, re, rw, c3, s3 = _radii(arm, q)
    gr, lk, sv = arm.gripper, arm.links, arm.servos
    serial = arm.kind != "parallel"
    # the hand's masses and their moment arm's sum (g, g mm) about the wrist
    pc = gr["palm_from_mm"] + gr["palm_mm"] / 2.0
    ft = arm.T + gr["finger_tip_mm"] - gr["finger_length_mm"] / 2.0
    jaw = arm.T * c3 + arm.D * s3
    mh = lk["palm_g"] + 2.0 * (lk["finger_g"] + lk["pad_g"]) + part_g
    mh_r = (lk["palm_g"] * pc * c3 + 2.0 * lk["finger_g"] * (ft * c3 + arm.D * s3)
            + (2.0 * lk["pad_g"] + part_g) * jaw)
    # the forearm's own masses (g) and moment about the elbow (g mm)
    mf = lk["forearm_g"]
    mf_r = lk["forearm_g"] * (rw - re) / 2.0
    if serial:
        mf += sv[2]["mass_g"]
        if arm.has_wrist:
            mf += sv[3]["mass_g"]
            mf_r += sv[3]["mass_g"] * (rw - re)
    mu = lk["upper_arm_g"]
    mu_r = mu * (re - rs) / 2.0
    wrist = mh_r if arm.has_wrist else 0.0
    if serial:
        elbow = mf_r + mh * (rw - re) + mh_r
        shoulder = mu_r + (mf + mh) * (re - rs) + elbow
    else:
        elbow = mf_r + mh * (rw - re)
        shoulder = mu_r + (mf + mh) * (re - rs)
    out = [0.0, 0.0, 0.0, 0.0]
    t = (0.0, shoulder, elbow, wrist)
    for i in range(1, 4):
        s = arm.servo(i)
        if s is not None:
            out[i] = (t[i] if signed else abs(t[i])) * G / 1e6 / s["gear"]
    return out


def stall_nm(arm, i):
    # Servo slot i's stall torque at the rail's nominal voltage (the simulator's law,
    # sim/servo_model.py: the 4.8 V figure times rail / 4.8 V).
    m = arm.servo_models[arm.servo(i)["model"]]
    return m["stall_torque_nm_4v8"] * arm.sensors["rail"]["nominal_mv"] / TORQUE_REF_MV


def band_lag_deg(arm, i, need_nm):
    # Joint deg arm servo slot i's shaft lags its command giving need_nm (the servo's torque, as
    # holding_nm gives it; signed as that is): band_deg per stall torque (the 4.8 V figure:
    # sim/servo_model.py's law), over the joint's gear.
    s = arm.servo(i)
    m = arm.servo_models[s["model"]]
    return m["band_deg"] * need_nm / m["stall_torque_nm_4v8"] / s["gear"]


def lift_sag_um(arm, x_mm, y_mm, z_mm, pitch_deg, part_g):
    # -> um the jaw centre sits below its command at this pose, holding a part of part_g still:
    # each arm servo's band lag (band_lag_deg) at the static torque it gives (holding_nm), the
    # way gravity turns it, times the jaw's height per degree of that joint (dz/dq, Arm.forward). The
    # deadband is left out: the jaw sags by it on the pad at the grasp as well, so the lift does
    # not lose it (measured: docs/arm-description.md). Raises Unreachable.
    q = arm.inverse(x_mm, y_mm, z_mm, pitch_deg)
    z0 = arm.forward(q)[2]
    need = holding_nm(arm, q, part_g, 1)
    sag = 0.0
    for i in range(1, 4):
        if arm.servo(i) is None or not need[i]:
            continue
        qd = list(q)
        qd[i] += 0.01
        dz = (arm.forward(qd)[2] - z0) / 0.01        # mm per deg
        sag += band_lag_deg(arm, i, need[i]) * dz
    return int(sag * 1000.0) if sag > 0.0 else 0


def lift_up_um(arm, cfg, pick_um):
    # -> um a job's lift ends above its approach point (the machine's lift_up_um): the jaw's sag
    # there with the declared part, to 0.1 mm (a board's single-precision floats give the same
    # figure as the host's replay); 0 where the arm does not reach that high. pick_um: (x, y, z,
    # pitch) um, mdeg.
    x, y, z, p = pick_um[0] / 1000.0, pick_um[1] / 1000.0, pick_um[2] / 1000.0, pick_um[3] / 1000.0
    h = cfg.approach_height_um / 1000.0
    try:
        up = (lift_sag_um(arm, x, y, z + h, p, arm.bench["part_g"]) + 50) // 100 * 100
        arm.inverse(x, y, z + h + up / 1000.0, p)
    except ValueError:
        return 0
    return up


def path(arm, pick, place, lift_mm):
    # -> joint angles (deg) along the path the part is held on: the lift straight up from the
    # pick pose, the transfer (a free move: joint space) to above the place pose, and the
    # placing straight down. pick, place: (x, y, z, pitch) mm, deg. Raises Unreachable.
    qs = []
    for pose, up in ((pick, 1), (place, 0)):
        x, y, z, p = pose
        for k in range(LINE_STEPS + 1):
            f = k / LINE_STEPS
            qs.append(arm.inverse(x, y, z + lift_mm * (f if up else 1.0 - f), p))
        if up:
            a = qs[-1]
            b = arm.inverse(place[0], place[1], place[2] + lift_mm, place[3])
            for k in range(1, FREE_STEPS):
                f = k / FREE_STEPS
                qs.append([a[j] + (b[j] - a[j]) * f for j in range(4)])
    return qs


def worst(arm, qs, part_g):
    # -> (slot, need_nm, stall_nm, q) of the servo closest to its stall along qs (the largest
    # need / stall); slot 0 when none holds any weight.
    best = (0, 0.0, 1.0, qs[0])
    share = 0.0
    for q in qs:
        need = holding_nm(arm, q, part_g)
        for i in range(1, 4):
            if arm.servo(i) is None:
                continue
            st = stall_nm(arm, i)
            if need[i] / st > share:
                share = need[i] / st
                best = (i, need[i], st, q)
    return best


def check(arm, pick, place, lift_mm, part_g=None):
    # -> None when every servo holds the part along the path within HOLD_PCT of its stall
    # torque; else (slot, need_nm, stall_nm, q) of the worst. part_g None: the description's
    # bench.part_g. Raises Unreachable (the path leaves the arm's reach).
    if part_g is None:
        part_g = arm.bench["part_g"]
    w = worst(arm, path(arm, pick, place, lift_mm), part_g)
    if w[1] * 100.0 > w[2] * HOLD_PCT:
        return w
    return None
