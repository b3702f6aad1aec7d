# The simulator's acceptance figures (issue: MuJoCo plant), measured by batch runs:
#   - nominal: 100% verified and judged placed over 200 seeds
#   - part offset up to +-8 mm: 100% judged placed over 200 seeds (retries where needed)
#   - part missing: a latched fault after exactly MAX_ATTEMPTS in every seed
#   - every fault scenario: zero false successes over 50 seeds; the fault names the cause
#   - the machine's belief agrees with the judge in >= 99.5% of all cycles
# Also reported, not gated: the offset scenario with the part yawed up to +-20 degrees.
#   .venv/bin/python -m surepick.engines.acceptance [--scale 1.0] [--jobs 2]
# tests/sim/test_sim_acceptance.py runs the same checks (slow tier) and asserts them.
import argparse
import json
import sys
import tempfile

from surepick.engines import batch

# scenario -> fault codes that name its cause (what "the fault code names the cause" means here)
CAUSES = {
    "part_missing": ("GRASP_FAILED",),
    "switch_stuck_open": ("SENSOR_DISAGREE",),
    "switch_stuck_closed": ("SENSOR_DISAGREE",),
    "beam_debris": ("SENSOR_DISAGREE",),
    "pot_wire_broken": ("SENSOR_FAULT",),
    "servo_stall": ("CRUSH", "MOTION_TIMEOUT"),
    "brownout_mid_lift": ("INTERRUPTED",),
}


YAWED_SEED0 = 5000  # seeds of the yawed offset group (reported, not gated)


def run(scale=1.0, jobs=2, out_dir=None):
    n_main = max(2, int(200 * scale))
    n_fault = max(2, int(50 * scale))
    groups = [("nominal", None, n_main), ("part_offset", {"offset_mm": 8, "yaw_deg": 0}, n_main)]
    groups += [(name, None, n_fault) for name in CAUSES]
    items = []
    for name, overrides, n in groups:
        items += batch.plan([name], n, 1000, overrides)
    items += batch.plan(["part_offset"], n_fault, YAWED_SEED0, {"offset_mm": 8, "yaw_deg": 20})
    out = out_dir or tempfile.mkdtemp(prefix="surepick-acceptance-")
    summary, results = batch.run_batch(items, out, jobs)
    by = {}
    for r in results:
        label = r["scenario"]
        if label == "part_offset" and r["seed"] >= YAWED_SEED0:
            label = "part_offset_yawed"
        by.setdefault(label, []).append(r)
    return evaluate(by), out


def evaluate(by):
    res = {}
    gated = [r for name, recs in by.items() if name != "part_offset_yawed" for r in recs]
    for name, recs in by.items():
        n = len(recs)
        res[name] = {
            "cycles": n,
            "verified_placed": sum(1 for r in recs if r["fsm_outcome"] == "placed" and r["judge_outcome"] == "placed"),
            "judge_placed": sum(1 for r in recs if r["judge_outcome"] == "placed"),
            "false_success": sum(1 for r in recs if r["false_success"]),
            "false_failure": sum(1 for r in recs if r["false_failure"]),
            "faults": _hist(r["fsm_fault"] for r in recs if r["fsm_fault"]),
            "attempts": _hist(r["attempts"] for r in recs),
            "retried": sum(1 for r in recs if r["attempts"] > 1),
        }
    agree = sum(1 for r in gated if r["agree"])
    res["_all"] = {"cycles": len(gated), "agree": agree, "agreement": agree / float(len(gated))}
    return res


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
    print("raw results: %s/cycles.jsonl" % out)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
