# The simulator's acceptance figures, measured by batch runs and judged from the physics
# (sim/judge.py: the part, the joints, the servo model's torque), never from the machine's word:
#   - nominal: 100% verified and judged placed over 200 seeds, all on the first attempt
#   - part offset up to +-12 mm: retries used and counted, 0 false successes
#   - every group: no servo at stall longer than the stall watch allows (a finger that lands on
#     an offset part backs the descent off: docs/arm-description.md)
#   - part missing: a latched fault after exactly max_attempts in every seed
#   - every fault scenario: 0 false successes over 50 seeds; the fault names the cause
#   - e-stop at a random time in each of the nine states: latched in that state, the jaw
#     setpoint moves at most one slew step after it, no part dropped from a verified grip, no
#     servo at stall longer than the stall watch allows. Each state's window ends before the state
#     does in a nominal cycle (sim/scenarios.py STATE_WINDOW_MS, checked by tests/sim/test_scenarios.py).
#     PLACE is split where the jaw starts to open (1966 ms into it): estop_PLACE presses while the
#     part is still held over the bin; estop_PLACE_release presses from the opening to just before
#     PLACED and is gated like every e-stop (in PLACE, jaw stopped, nothing dropped, no stall, no
#     false success) but left out of the agreement figure: there the part lies in the bin, let go
#     on purpose, while the machine latched ESTOP before its own placement check (the beam clear
#     after the retreat), so it cannot know and does not claim the placement. Its count of such
#     cycles is reported as placed_unconfirmed; the operator looks in the bin.
#   - pot break in GRASP and in LIFT; stall on a fixture while the arm holds (STALL latched)
#   - brownout mid-lift with a rail sag: RAIL_LOW before the reset in >= 90%; after the restart
#     the part moves <= 5 mm and no joint turns faster than 5 deg/s for 5 s
#   - the machine's belief agrees with the judge in >= 99.5% of all gated cycles (but
#     estop_PLACE_release's, above)
# Also reported, not gated: the offset scenario with the part yawed up to +-20 degrees.
#   .venv/bin/python -m surepick.host.engines.acceptance [--scale 1.0] [--jobs 2]
# The limits that depend on the settings (the jaw's slew in one tick, the stall watch's time, the
# attempts a missing part gets) come from the settings the cycles ran with: the defaults, or the
# machine config overrides given to run(cfg_overrides=...).
# tests/host/engines/test_sim_acceptance.py runs the same checks (slow tier) and asserts them.
import argparse
import json
import sys
import tempfile
import time

from surepick.host.engines import batch
from surepick.host.engines.inproc import board_settings
from surepick.sim import scenarios

SEED0 = 1000
YAWED_SEED0 = 5000   # seeds of the yawed offset group (reported, not gated)

# label -> (scenario, overrides, count at scale 1, fault codes that name the cause or None)
GROUPS = {
    "nominal": ("nominal", None, 200, None),
    "part_offset_12": ("part_offset", {"offset_mm": 12, "yaw_deg": 0}, 200, None),
    "part_missing": ("part_missing", None, 50, ("GRASP_FAILED",)),
    "switch_stuck_open": ("switch_stuck_open", None, 50, ("SENSOR_DISAGREE",)),
    "switch_stuck_closed": ("switch_stuck_closed", None, 50, ("SENSOR_DISAGREE",)),
    "beam_debris": ("beam_debris", None, 50, ("SENSOR_DISAGREE",)),
    "pot_break_grasp": ("pot_wire_broken", {"state": "GRASP"}, 50, ("SENSOR_FAULT",)),
    "pot_break_lift": ("pot_wire_broken", {"state": "LIFT"}, 50, ("SENSOR_FAULT",)),
    "servo_stall": ("servo_stall", None, 50, ("CRUSH", "MOTION_TIMEOUT")),
    "stall_on_fixture": ("stall_on_fixture", None, 50, ("ESTOP",)),
    "brownout_mid_lift": ("brownout_mid_lift", None, 50, ("RAIL_LOW", "INTERRUPTED")),
}
for _st in scenarios.STATE_NAMES:
    GROUPS["estop_" + _st] = ("estop", {"state": _st}, 50, ("ESTOP",) if _st != "IDLE" else None)
# The e-stop in PLACE after the jaw began to open (estop_PLACE presses while the part is held).
_lo, _hi = scenarios.PLACE_RELEASE_WINDOW_MS
GROUPS["estop_PLACE_release"] = ("estop", {"state": "PLACE", "window_from_ms": _lo, "window_to_ms": _hi}, 50,
                                 ("ESTOP",))
# Gated like every e-stop, but left out of the agreement figure (and reported apart): the part lies
# in the bin, released on purpose, while the machine latched ESTOP before its own placement check.
UNCONFIRMED = ("estop_PLACE_release",)
REPORTED = {"part_offset_yawed": ("part_offset", {"offset_mm": 8, "yaw_deg": 20}, 50, None)}

# A servo may sit at stall for the watch's time, plus its reaction: the current filter (a few
# ticks), one PWM frame (20 ms) before the servo sees the backed-off pulse, and the judge's own
# sampling (20 ms in a batch).
STALL_REACTION_MS = 100
RESTART_PART_MM = 5.0
RESTART_JOINT_DPS = 5.0
RAIL_LOW_FRACTION = 0.9


def limits(cfg_overrides=None):
    """The judge's limits for cycles run with these machine config overrides (None: defaults)."""
    s = board_settings(cfg_overrides)
    cfg = s.cfg
    return {"slew_step_um": cfg.jaw_speed_um_s * cfg.loop_period_ms // 1000,    # the jaw's slew in one tick
            "stall_limit_ms": s.board["current_stall_ms"] + STALL_REACTION_MS,
            "max_attempts": cfg.max_attempts, "loop_period_ms": cfg.loop_period_ms}


# Seeds of the nominal cycles an arm's e-stop windows are measured on (arm_state_windows).
WINDOW_SEEDS = (0, 1, 2)


def state_visits(name, seed, cfg_overrides=None, arm=None):
    # {state: [(entered, left) ms of each visit]} and when the jaw began to open in PLACE, from a
    # simulated cycle: the machine's own transition events and the pulses the world received.
    from surepick.host.engines.inproc import run_cycle
    rec, _, run = run_cycle(name, None, seed=seed, cfg_overrides=cfg_overrides, record_trajectory=False, arm=arm)
    ev = [e for e in rec["events"] if e["kind"] in ("transition", "fault")]
    visits = {}
    for a, b in zip(ev, ev[1:]):
        visits.setdefault(a["to"], []).append((a["t_ms"], b["t_ms"]))
    return visits, run.judge.release_ms


def arm_state_windows(arm, cfg_overrides=None):
    """The e-stop and pot-break groups' windows {label: (from_ms, to_ms)} for an arm other than the
    reference.
    scenarios.STATE_WINDOW_MS is the reference's cycle; another arm's states last as long as its
    own moves, so each window is cut to end, as the reference's do, two ticks before the state
    ends in that arm's shortest measured nominal cycle (RECOVER: part_missing's), PLACE's before
    the jaw opens, and PLACE_release lies from the opening (plus the reference's 14 ms) to then."""
    dur, opened, placed = {}, [], []
    for seed in WINDOW_SEEDS:
        visits, release = state_visits("nominal", seed, cfg_overrides, arm)
        missing, _ = state_visits("part_missing", seed, cfg_overrides, arm)
        visits["RECOVER"] = missing["RECOVER"]
        for st, v in visits.items():
            d = v[0][1] - v[0][0]
            dur[st] = min(dur.get(st, d), d)
        place_in = visits["PLACE"][0][0]
        opened.append(release - place_in)
        placed.append(visits["PLACE"][0][1] - place_in)
    out = {}
    for st, (lo, hi) in scenarios.STATE_WINDOW_MS.items():
        if st != "IDLE":
            hi = min(hi, dur[st] - 2)
            if st == "PLACE":
                hi = min(hi, min(opened) - 2)
        out["estop_" + st] = (lo, hi)
    out["pot_break_grasp"] = out["estop_GRASP"]
    out["pot_break_lift"] = out["estop_LIFT"]
    ref_lo, _ = scenarios.PLACE_RELEASE_WINDOW_MS
    out["estop_PLACE_release"] = (max(opened) + ref_lo - _REF_OPEN_MS, min(placed) - 2)
    return out


_REF_OPEN_MS = 1966   # the reference's jaw opens this far into PLACE (PLACE_RELEASE_WINDOW_MS starts 14 ms later)


def plan(scale=1.0, cfg_overrides=None, arm=None, labels_wanted=None):
    # arm: an Arm (None: the reference arm); labels_wanted: only these groups (None: all)
    items, labels = [], []
    windows = arm_state_windows(arm, cfg_overrides) if arm is not None else {}
    for label, (name, overrides, n, _) in list(GROUPS.items()) + list(REPORTED.items()):
        if labels_wanted is not None and label not in labels_wanted:
            continue
        if label in windows:
            overrides = dict(overrides, window_from_ms=windows[label][0], window_to_ms=windows[label][1])
        n = max(2, int(n * scale))
        seed0 = YAWED_SEED0 if label in REPORTED else SEED0
        for it in batch.plan([name], n, seed0, overrides, cfg_overrides, arm=arm):
            items.append(it)
            labels.append(label)
    return items, labels


def run(scale=1.0, jobs=2, out_dir=None, cfg_overrides=None, arm=None, labels_wanted=None):
    items, labels = plan(scale, cfg_overrides, arm, labels_wanted)
    key = {}
    for it, label in zip(items, labels):
        key[(it[0], json.dumps(it[1], sort_keys=True), it[2])] = label
    out = out_dir or tempfile.mkdtemp(prefix="surepick-acceptance-")
    t0 = time.perf_counter()
    summary, results = batch.run_batch(items, out, jobs)
    by = {}
    for r in results:
        label = key[(r["scenario"], json.dumps(r["overrides"], sort_keys=True), r["seed"])]
        by.setdefault(label, []).append(r)
    res = evaluate(by, limits(cfg_overrides))
    res["_all"]["wall_s"] = round(time.perf_counter() - t0, 1)
    return res, out


def _events(r, reason):
    return [e for e in r["events"] if e["reason"] == reason]


def _estop_state_ok(r, state):
    # The press latched ESTOP in the state it was aimed at (IDLE: after the cycle's PLACED).
    f = _events(r, "ESTOP")
    if not f or f[0]["kind"] != "fault":
        return False
    if state == "IDLE":
        placed = [e for e in r["events"] if e["kind"] == "transition" and e["reason"] == "PLACED"]
        return f[0]["from"] == "IDLE" and bool(placed) and placed[0]["seq"] < f[0]["seq"]
    return f[0]["from"] == state


def _rail_low_first(r):
    # RAIL_LOW latched before the controller reset.
    if not r["restarts"]:
        return False
    low = [e for e in _events(r, "RAIL_LOW") if e["kind"] == "fault"]
    return bool(low) and low[0]["t_ms"] < r["judge"]["restarts"][0]["t_ms"]


def evaluate(by, lim=None):
    lim = lim or limits()
    stall_limit = lim["stall_limit_ms"]
    res = {}
    gated = [r for name, recs in by.items() if name not in REPORTED and name not in UNCONFIRMED for r in recs]
    for name, recs in by.items():
        n = len(recs)
        j = [r["judge"] for r in recs]
        g = {
            "cycles": n,
            "verified_placed": sum(1 for r in recs if r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed"),
            "judge_placed": sum(1 for r in recs if r["judge_outcome"] == "placed"),
            "false_success": sum(1 for r in recs if r["false_success"]),
            "false_failure": sum(1 for r in recs if r["false_failure"]),
            "faults": _hist(r["fsm_fault"] for r in recs if r["fsm_fault"]),
            "attempts": _hist(r["attempts"] for r in recs),
            "retried": sum(1 for r in recs if r["attempts"] > 1),
            "dropped": sum(1 for x in j if x["dropped_at"] is not None),
            "worst_stall_ms": max(max(x["longest_stall_ms"]) for x in j),
            "over_stall_limit": sum(1 for x in j if max(x["longest_stall_ms"]) > stall_limit),
        }
        if name.startswith("estop_"):
            state = recs[0]["overrides"]["state"]
            moved = [x["estop"]["jaw_cmd_moved_um"] if x["estop"] else None for x in j]
            g["estop_in_state"] = sum(1 for r in recs if _estop_state_ok(r, state))
            g["worst_jaw_cmd_moved_um"] = max(v for v in moved if v is not None) if any(v is not None for v in moved) else None
            g["jaw_moved_over_one_step"] = sum(1 for v in moved if v is None or v > lim["slew_step_um"])
        if name == "stall_on_fixture":
            g["stall_latched"] = sum(1 for r in recs if any(e["kind"] == "fault" for e in _events(r, "STALL")))
        if name == "brownout_mid_lift":
            w = [x["restarts"][0] if x["restarts"] else None for x in j]
            g["restarted"] = sum(1 for v in w if v is not None)
            g["rail_low_before_reset"] = sum(1 for r in recs if _rail_low_first(r))
            g["interrupted_latched"] = sum(1 for r in recs if any(e["kind"] == "fault" for e in _events(r, "INTERRUPTED")))
            g["worst_part_moved_mm"] = max(v["part_moved_mm"] for v in w if v is not None)
            g["worst_joint_speed_dps"] = max(v["max_joint_speed_dps"] for v in w if v is not None)
            g["shortest_window_ms"] = min(v["window_ms"] for v in w if v is not None)
            g["restart_moved"] = sum(1 for v in w if v is None or v["part_moved_mm"] > RESTART_PART_MM
                                     or v["max_joint_speed_dps"] > RESTART_JOINT_DPS)
        res[name] = g
    for name in UNCONFIRMED:
        if name in res:
            res[name]["placed_unconfirmed"] = sum(1 for r in by[name] if r["judge_outcome"] == "placed"
                                                  and r["fsm_fault"] == "ESTOP")
    agree = sum(1 for r in gated if r["agree"])
    res["_all"] = {"cycles": len(gated), "agree": agree, "agreement": agree / float(len(gated)),
                   "false_success": sum(1 for r in gated if r["false_success"]), "limits": lim}
    return res


def check(res):
    # The gates, as (label, problem) pairs; [] when everything holds. The limits are the ones
    # evaluate() used (the defaults' for a result without them).
    bad = []
    lim = res["_all"].get("limits") or limits()

    def need(ok, label, what):
        if not ok:
            bad.append((label, what))
    for label, (name, overrides, _, causes) in GROUPS.items():
        g = res[label]
        n = g["cycles"]
        need(g["false_success"] == 0, label, "false successes: %d" % g["false_success"])
        need(g["over_stall_limit"] == 0, label, "servo at stall > %d ms in %d cycles (worst %d ms)"
             % (lim["stall_limit_ms"], g["over_stall_limit"], g["worst_stall_ms"]))
        if causes is not None:
            need(set(g["faults"]) <= set(causes) and sum(g["faults"].values()) == n, label,
                 "faults %r, expected only %r" % (g["faults"], causes))
        if label.startswith("estop_"):
            need(g["estop_in_state"] == n, label, "e-stop latched in the aimed state in %d/%d" % (g["estop_in_state"], n))
            need(g["jaw_moved_over_one_step"] == 0, label, "jaw setpoint moved > %d um after the press in %d cycles"
                 % (lim["slew_step_um"], g["jaw_moved_over_one_step"]))
            need(g["dropped"] == 0, label, "part dropped in %d cycles" % g["dropped"])
        if label in ("pot_break_lift", "pot_break_grasp"):
            need(g["dropped"] == 0, label, "part dropped in %d cycles" % g["dropped"])
    g = res["nominal"]
    need(g["verified_placed"] == g["cycles"] and g["attempts"] == {"1": g["cycles"]}, "nominal",
         "verified placed %d/%d, attempts %r" % (g["verified_placed"], g["cycles"], g["attempts"]))
    g = res["part_offset_12"]
    need(g["retried"] > 0, "part_offset_12", "no retry was ever used")
    g = res["part_missing"]
    attempts = str(lim["max_attempts"])
    need(g["attempts"] == {attempts: g["cycles"]}, "part_missing", "attempts %r" % g["attempts"])
    g = res["stall_on_fixture"]
    need(g["stall_latched"] == g["cycles"], "stall_on_fixture", "STALL latched in %d/%d" % (g["stall_latched"], g["cycles"]))
    g = res["brownout_mid_lift"]
    n = g["cycles"]
    need(g["restarted"] == n and g["interrupted_latched"] == n, "brownout_mid_lift",
         "restarted %d, INTERRUPTED latched %d of %d" % (g["restarted"], g["interrupted_latched"], n))
    need(g["rail_low_before_reset"] >= RAIL_LOW_FRACTION * n, "brownout_mid_lift",
         "RAIL_LOW before the reset in %d/%d" % (g["rail_low_before_reset"], n))
    need(g["restart_moved"] == 0, "brownout_mid_lift",
         "after the restart: part moved > %g mm or a joint > %g deg/s in %d cycles (worst %.2f mm, %.2f deg/s)"
         % (RESTART_PART_MM, RESTART_JOINT_DPS, g["restart_moved"], g["worst_part_moved_mm"], g["worst_joint_speed_dps"]))
    need(g["shortest_window_ms"] >= 4900, "brownout_mid_lift", "watched only %d ms after a restart" % g["shortest_window_ms"])
    need(res["_all"]["agreement"] >= 0.995, "_all", "belief agrees with the judge in %.3f" % res["_all"]["agreement"])
    need(res["part_offset_yawed"]["false_success"] == 0, "part_offset_yawed", "false successes")
    return bad


def _hist(items):
    h = {}
    for i in items:
        h[str(i)] = h.get(str(i), 0) + 1
    return h


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the seed counts (default 1.0)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    res, out = run(a.scale, a.jobs)
    print(json.dumps(res, indent=1))
    bad = check(res)
    for label, what in bad:
        print("GATE %s: %s" % (label, what))
    print("raw results: %s/cycles.jsonl" % out)
    sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
