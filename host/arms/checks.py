"""Host-only checks of an arm description (beyond the shared validator): can the arm reach its
own bench (the pick and place poses, the approach above each, the rest pose), how much margin it
has there, and a reach map: the workspace in the arm's vertical plane and seen from above, with
the pad and the bin in it."""
import math

from surepick.shared_fsm import arm as arm_mod
from surepick.shared_fsm import payload
from surepick.shared_fsm.config import Config


def bench_poses(arm, approach_mm=None):
    """(name, (x, y, z, pitch)) of every pose a job on this bench asks for: pick and place at the
    part's mid-height, and the approach point above each (config approach_height_um)."""
    b = arm.bench
    if approach_mm is None:
        approach_mm = Config().approach_height_um / 1000.0
    h = b["part_mm"]
    pick = (b["pad_x_mm"], b["pad_y_mm"], b["pad_top_mm"] + h / 2.0, b["pitch_deg"])
    place = (b["bin_x_mm"], b["bin_y_mm"], b["bin_floor_mm"] + h / 2.0 + 5.0, b["pitch_deg"])
    return [("pick", pick), ("pick_approach", pick[:2] + (pick[2] + approach_mm, pick[3])),
            ("place", place), ("place_approach", place[:2] + (place[2] + approach_mm, place[3]))]


def margin_deg(arm, q):
    """The smallest distance (deg) of any joint from its (coupled) limit at q."""
    m = 1e9
    for j in range(len(arm.joint_names)):
        ci = arm.coupled_index(j)
        lo, hi = arm.limit(j, q[ci] if ci >= 0 else 0.0)
        m = min(m, q[j] - lo, hi - q[j])
    return m


def reach_report(arm, approach_mm=None):
    """-> (problems, lines): problems are one line each naming the pose (empty: the bench is
    reachable); lines describe each pose's joint angles and margin."""
    problems, lines = [], []
    for name, pose in bench_poses(arm, approach_mm):
        try:
            q = arm.inverse(*pose)
        except arm_mod.Unreachable as e:
            problems.append("bench %s pose x=%.1f y=%.1f z=%.1f pitch=%.1f is out of reach: %s"
                            % (name, pose[0], pose[1], pose[2], pose[3], REASON(e)))
            continue
        lines.append("%-15s x=%6.1f y=%6.1f z=%6.1f  joints %s  margin %.1f deg"
                     % (name, pose[0], pose[1], pose[2], " ".join("%7.1f" % v for v in q[:len(arm.joint_names)]),
                        margin_deg(arm, q)))
    return problems, lines


def payload_sentence(arm_or_names, joint, need_nm, stall_nm, part_g, where="bench.part_g"):
    """One line: the part is more than the joint's servo holds (shared_fsm/payload.py), and the
    ways out. arm_or_names: the Arm (for the servo's part number) or None."""
    servo = ""
    if arm_or_names is not None:
        s = arm_or_names.servo(arm_or_names.servo_names.index(joint))
        m = arm_or_names.servo_models[s["model"]]
        servo = " (%s)" % (m["part"] or s["model"])
    return ("%s %g g: the %s servo%s must give %.2f N·m to hold it at the worst pose of the path, more than "
            "%d %% of its %.2f N·m stall torque (%.2f N·m; docs/arm-description.md, \"A part too heavy to hold\"): "
            "a lighter part, a stronger servo, or a bench nearer the base"
            % (where, part_g, joint, servo, need_nm, payload.HOLD_PCT, stall_nm, stall_nm * payload.HOLD_PCT / 100.0))


def payload_shares(arm, approach_mm=None):
    """-> [(joint, need_nm, stall_nm)] for every arm servo past the base: its largest holding
    torque along the bench's own path with its part (bench.part_g) and its stall torque at the
    rail's nominal voltage; None when the path is out of reach (reach_report names it)."""
    poses = dict(bench_poses(arm, approach_mm))
    lift = poses["pick_approach"][2] - poses["pick"][2]
    part_g = arm.bench["part_g"]
    try:
        qs = payload.path(arm, poses["pick"], poses["place"], lift)
    except arm_mod.Unreachable:
        return None
    return [(arm.joint_names[i], max(payload.holding_nm(arm, q, part_g)[i] for q in qs), payload.stall_nm(arm, i))
            for i in range(1, len(arm.joint_names))]


def payload_line(arm, joint, need_nm, stall_nm):
    return ("payload %-8s holds %.3f N·m of its %.3f N·m stall (%.1f %%, limit %d %%) with the %g g part"
            % (joint, need_nm, stall_nm, 100.0 * need_nm / stall_nm, payload.HOLD_PCT, arm.bench["part_g"]))


def payload_report(arm, approach_mm=None):
    """-> (problems, lines) of the payload check on the bench's own path (the pick, the lift,
    the transfer, the placing): a line per arm servo (payload_shares), and the refusal the board
    would give, if any. A path out of reach gives no lines (reach_report names it)."""
    shares = payload_shares(arm, approach_mm)
    if shares is None:
        return [], []
    poses = dict(bench_poses(arm, approach_mm))
    lift = poses["pick_approach"][2] - poses["pick"][2]
    problems = []
    w = payload.check(arm, poses["pick"], poses["place"], lift)
    if w is not None:
        problems.append(payload_sentence(arm, arm.joint_names[w[0]], w[1], w[2], arm.bench["part_g"]))
    return problems, [payload_line(arm, *s) for s in shares]


def REASON(e):
    return "%s (%s)" % (arm_mod.REASON_NAMES[e.code], e.detail.split(" at ")[0] if e.code == arm_mod.JOINT_LIMIT else e.detail)


def max_reach_mm(arm, pitch_deg=None):
    """The farthest radius (mm) the jaw centre reaches at the bench pitch, any height >= min_z
    (sampled every 2 mm)."""
    p = arm.bench["pitch_deg"] if pitch_deg is None else pitch_deg
    span = arm.S + arm.U + arm.F + abs(arm.T) + abs(arm.D)
    best = 0.0
    z = arm.min_z_mm
    while z <= arm.H + span:
        r = arm.min_radius_mm
        while r <= span:
            if r > best and _reachable(arm, r, z, p):
                best = r
            r += 2.0
        z += 2.0
    return best


def _reachable(arm, r, z, p):
    try:
        arm.inverse(r, 0.0, z, p)
        return True
    except arm_mod.Unreachable:
        return False


def reach_map(arm, path, approach_mm=None):
    """Draw the reach map PNG: the side view (r, z) at the bench pitch with reachable cells, and
    the top view with the pad, the bin and their reach."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    b = arm.bench
    p = b["pitch_deg"]
    span = arm.S + arm.U + arm.F + abs(arm.T) + abs(arm.D) + 20.0
    rs = np.linspace(0.0, span, 120)
    zs = np.linspace(-20.0, arm.H + span, 120)
    grid = np.zeros((len(zs), len(rs)))
    for i, z in enumerate(zs):
        for j, r in enumerate(rs):
            grid[i, j] = 1.0 if _reachable(arm, max(r, 1e-6), z, p) else 0.0
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
    ax1.imshow(grid, origin="lower", extent=(rs[0], rs[-1], zs[0], zs[-1]), cmap="Greens", alpha=0.6,
               aspect="equal")
    ax1.axhline(0.0, color="k", lw=0.8)
    for name, pose in bench_poses(arm, approach_mm):
        r = math.hypot(pose[0], pose[1])
        ok = _reachable(arm, r, pose[2], p)
        ax1.plot(r, pose[2], "o" if ok else "x", color="tab:blue" if ok else "tab:red", ms=7)
        ax1.annotate(name, (r, pose[2]), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax1.set(title="%s: side view at pitch %g deg (green: reachable)" % (arm.name, p), xlabel="radius (mm)",
            ylabel="z (mm)")
    # top view: the reachable annulus at the pad's height, the pad and the bin
    z_pick = b["pad_top_mm"] + b["part_mm"] / 2.0
    xs = np.linspace(-span, span, 120)
    top = np.zeros((len(xs), len(xs)))
    for i, y in enumerate(xs):
        for j, x in enumerate(xs):
            try:
                arm.inverse(x, y, z_pick, p)
                top[i, j] = 1.0
            except arm_mod.Unreachable:
                pass
    ax2.imshow(top, origin="lower", extent=(xs[0], xs[-1], xs[0], xs[-1]), cmap="Greens", alpha=0.6)
    for (cx, cy, half, label, color) in ((b["pad_x_mm"], b["pad_y_mm"], b["pad_half_mm"], "pad", "tab:green"),
                                         (b["bin_x_mm"], b["bin_y_mm"], b["bin_inner_half_mm"], "bin", "tab:blue")):
        ax2.add_patch(plt.Rectangle((cx - half, cy - half), 2 * half, 2 * half, fill=False, color=color, lw=1.5))
        ax2.annotate(label, (cx, cy), ha="center")
    ax2.plot(0, 0, "k+")
    ax2.set(title="top view at the pick height z=%.0f mm" % z_pick, xlabel="x (mm)", ylabel="y (mm)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
