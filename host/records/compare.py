# Compares two run records phase by phase: cycle outcomes and state sequences, dwell-time
# distributions per state, retries and their causes, the readings the machine decided VERIFY
# on, the holding current while carrying, the board's current-zero calibration and the loop
# timing. Each check has a tolerance (DEFAULT_TOLERANCES, overridable from a JSON file); the
# result says which phases differ beyond them. Rendering lives in compare_report.py.

import numpy as np

from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.shared_fsm.codes import K_FAULT, K_TRANSITION, K_SEARCH

from surepick.host.records.runrecord import TICK_INDEX
from surepick.host.user_error import BadInput

# Defaults (docs/run-record.md, "compare"): tight enough that a 10 % slower gripper, a softer
# pad, a pot zero error of 0.3 mm or a current-zero error of 3 mA shows, loose enough that two
# seeds of the same plant pass.
DEFAULT_TOLERANCES = {
    "outcome_mismatch_frac": 0.0,   # fraction of aligned cycles whose outcome differs
    "sequence_mismatch_frac": 0.0,  # fraction of aligned cycles whose state sequence differs
    "dwell_ms": 40.0,               # per state: |median A - median B| and |p90 A - p90 B| ...
    "dwell_rel": 0.10,              # ... may be max(dwell_ms, dwell_rel * the larger one)
    "retries_per_cycle": 0.10,      # per retry cause: |rate A - rate B|
    "verify_pot_counts": 300.0,     # median pot reading at the VERIFY decision (300 = 0.28 mm)
    "verify_current_ma": 30.0,      # median gripper current at the VERIFY decision
    "verify_mask_mismatch_frac": 0.0,  # aligned VERIFY decisions whose check masks differ
    "hold_current_ma": 30.0,        # median gripper current while carrying (LIFT, TRANSFER)
    "grasp_pot_counts": 300.0,      # median pot reading over GRASP (how far the jaw closed)
    "cal_current_counts": 60.0,     # board's current-zero calibration at rest (60 counts = 3 mA)
    "loop_period_ms": 0.2,          # median loop period
    "loop_p99_ms": 2.0,             # 99th percentile loop period
    "search_mismatch_frac": 0.0,    # aligned cycles whose part searches probed elsewhere or saw otherwise
    "search_found_mm": 3.0,         # median distance between the poses two searches found
}

_CARRY = (states.LIFT, states.TRANSFER)
_FROM_TICKS = ("hold_current_ma", "grasp_pot_counts")


class RunSummary:
    # Everything compare needs from one run record, extracted once.
    def __init__(self, rec):
        self.rec = rec
        self.cycles = {c["cycle"]: c for c in rec.cycles}
        self.per_cycle = {}
        ticks = rec.ticks
        st = ticks[:, TICK_INDEX["state"]] if len(ticks) else np.zeros(0, dtype=np.int64)
        cur = ticks[:, TICK_INDEX["current_ma"]] if len(ticks) else st
        pot = ticks[:, TICK_INDEX["pot_counts"]] if len(ticks) else st
        t = ticks[:, TICK_INDEX["t_ms"]] if len(ticks) else st
        life = ticks[:, TICK_INDEX["life"]] if len(ticks) else st
        loop_us = ticks[:, TICK_INDEX["loop_us"]] if len(ticks) else st
        carry = np.isin(st, _CARRY)
        grasp = st == states.GRASP
        periods = []
        measured = []
        for c in self.cycles:
            a, b = rec._ranges.get(c, (0, 0))
            d = {"outcome": self.cycles[c]["outcome"]}
            d.update(_from_events(rec.events.get(c, [])))
            hold = cur[a:b][carry[a:b]]
            d["hold_current_ma"] = float(np.median(hold)) if len(hold) else None
            g = pot[a:b][grasp[a:b]]
            d["grasp_pot_counts"] = float(np.median(g)) if len(g) else None
            cal = (self.cycles[c].get("board_cal") or {}).get("current_offset_counts")
            d["cal_current_counts"] = cal
            if b - a > 1:
                same = life[a + 1:b] == life[a:b - 1]
                periods.append(np.diff(t[a:b])[same])
                lu = loop_us[a:b]
                measured.append(lu[lu >= 0])
            self.per_cycle[c] = d
        self.periods_ms = np.concatenate(periods) if periods else np.zeros(0)
        m = np.concatenate(measured) if measured else np.zeros(0)
        self.loop_us = m


def _from_events(events):
    # State visits with their dwell, the state sequence, retries by cause, VERIFY readings.
    seq = []
    dwell = {}
    retries = {}
    verify = []
    probes = []          # a part search's probes: (attempt, outcome name, x, y mm)
    found = []           # the poses its searches found: (attempt, x, y mm)
    cur, since = states.IDLE, None
    for e in events:
        kind, frm, to, reason, t = e[2], e[3], e[4], e[5], e[1]
        if kind == K_SEARCH:
            if reason in _PROBES:
                probes.append((e[6], codes.name(reason), round(e[7] / 1000.0, 1), round(e[8] / 1000.0, 1)))
            elif reason == codes.R_FOUND:
                found.append((e[6], e[7] / 1000.0, e[8] / 1000.0))
            continue
        if kind not in (K_TRANSITION, K_FAULT):
            continue
        if since is not None and frm == cur and cur != states.IDLE:
            dwell.setdefault(states.name(cur), []).append(t - since)
        if frm == states.VERIFY and kind == K_TRANSITION:
            verify.append({"pot_counts": e[7], "switch_pressed": e[8], "current_ma": e[9], "beam_broken": e[10],
                           "present_mask": e[11]})
        if kind == K_TRANSITION and to == states.RECOVER:
            retries[codes.name(reason)] = retries.get(codes.name(reason), 0) + 1
        seq.append(states.name(to) if kind == K_TRANSITION else "FAULT:" + codes.name(reason))
        cur, since = to, t
    return {"sequence": tuple(seq), "dwell": dwell, "retries": retries, "verify": verify,
            "probes": probes, "found": found}


_PROBES = (codes.R_PROBE_SEEN, codes.R_PROBE_CLEAR, codes.R_PROBE_TOUCHED)


class Check:
    # one_sided: the phase or measurement exists in one run only (a state only one run enters,
    # a board recording without ticks): reported, never failed. A different path through the
    # states is the CYCLE state-sequence check's to fail.
    def __init__(self, phase, metric, a, b, diff, tol, ok, note="", one_sided=False):
        self.phase, self.metric, self.a, self.b = phase, metric, a, b
        self.diff, self.tol, self.ok, self.note = diff, tol, ok, note
        self.one_sided = one_sided

    def as_dict(self):
        return dict(phase=self.phase, metric=self.metric, a=self.a, b=self.b, diff=self.diff, tol=self.tol,
                    ok=self.ok, note=self.note, one_sided=self.one_sided)


def _only(phase, metric, a, b, in_a, what, why=""):
    # A Check for a phase present in one run only.
    side = "A" if in_a else "B"
    note = "only %s %s%s: reported, not compared" % (side, what, (" (%s)" % why) if why else "")
    return Check(phase, metric, a, b, None, None, True, note, one_sided=True)


class Comparison:
    def __init__(self, a, b, tol, checks, aligned, notes):
        self.a, self.b, self.tol = a, b, tol
        self.checks = checks
        self.aligned = aligned
        self.notes = notes

    @property
    def passed(self):
        return all(c.ok for c in self.checks)

    def one_sided(self):
        return [c for c in self.checks if c.one_sided]

    def failing_phases(self):
        out = []
        for c in self.checks:
            if not c.ok and c.phase not in out:
                out.append(c.phase)
        return out


class CompareError(BadInput, ValueError):
    pass


def load_tolerances(path):
    tol = dict(DEFAULT_TOLERANCES)
    if path is None:
        return tol
    from surepick.host import json_file
    try:
        data = json_file.load_object(path, "tolerances file")
    except json_file.JsonFileError as e:
        raise CompareError(str(e)) from None
    for k, v in data.items():
        if k not in tol:
            raise CompareError("tolerances file %s: unknown tolerance %r (known: %s)" % (path, k, ", ".join(sorted(tol))))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise CompareError("tolerances file %s: %s must be a number >= 0, got %r" % (path, k, v))
        tol[k] = float(v)
    return tol


def _same_arm(rec_a, rec_b):
    # Two runs of two different arms (other kinematics, another bench: run_arm.WHICH_ARM) have no
    # phase to compare: refused. The same arm described differently (servo or sensor models, a
    # fit's, calibration, masses) is what compare is for: a note names the fields. -> notes
    from surepick.host.records import run_arm
    notes, arms = [], []
    for rec, side in ((rec_a, "A"), (rec_b, "B")):
        if rec.meta["kind"] == "board-recording" and "arm_description" not in rec.meta and "arm" not in rec.meta:
            # (log export --run: an arm the monitor did not store; arm_source says why)
            why = rec.meta.get("arm_source")
            notes.append("%s (%s) is a board recording whose arm is %s" % (side, rec.path, why) if why else
                         "%s (%s) is a board recording that does not say which arm ran: compared as the other "
                         "run's" % (side, rec.path))
            return notes
        arm, note = run_arm.record_arm(rec.meta)
        if note:
            notes.append("%s (%s): %s" % (side, rec.path, note))
        arms.append(arm)
    name_a, name_b = (rec_a.meta.get("arm", "reference"), rec_b.meta.get("arm", "reference"))
    if None in arms:
        if name_a != name_b:
            raise CompareError("the runs are of different arms: %s ran '%s', %s ran '%s'; compare needs the same arm "
                               "on both sides" % (rec_a.path, name_a, rec_b.path, name_b))
        return notes
    which, other = run_arm.differences(arms[0], arms[1])
    if which:
        raise CompareError("the runs are of different arms: %s ran '%s', %s ran '%s', which differ in %s; compare "
                           "needs the same arm on both sides (its servo and sensor models may differ)"
                           % (rec_a.path, arms[0].name, rec_b.path, arms[1].name, _some(which)))
    if other or arms[0].name != arms[1].name:
        notes.append("the same arm, described differently (%s vs %s)%s" % (
            arms[0].name, arms[1].name, (": %s differ" % _some(other)) if other else ""))
    return notes


def _some(fields, n=6):
    return ", ".join(fields[:n]) + (" and %d more" % (len(fields) - n) if len(fields) > n else "")


def compare(rec_a, rec_b, tol=None):
    tol = dict(DEFAULT_TOLERANCES, **(tol or {}))
    notes = []
    if rec_a.scenario is None or rec_b.scenario is None:
        # A board recording does not know the cell's scenario: the other side names it.
        for rec in (rec_a, rec_b):
            if rec.scenario is None:
                notes.append("%s is a %s without a scenario: compared as the other run's scenario"
                             % (rec.path, rec.meta["kind"]))
    elif rec_a.scenario != rec_b.scenario:
        raise CompareError("the runs are of different scenarios: %s is '%s', %s is '%s'; compare needs the same "
                           "scenario on both sides" % (rec_a.path, rec_a.scenario, rec_b.path, rec_b.scenario))
    notes += _same_arm(rec_a, rec_b)
    if rec_a.meta.get("params") != rec_b.meta.get("params"):
        notes.append("scenario parameters differ: %s vs %s" % (rec_a.meta.get("params"), rec_b.meta.get("params")))
    cfg_diff = sorted(k for k in set(rec_a.meta["config"]) | set(rec_b.meta["config"])
                      if rec_a.meta["config"].get(k) != rec_b.meta["config"].get(k))
    if cfg_diff:
        notes.append("machine config differs in: %s" % ", ".join(cfg_diff))
    a, b = RunSummary(rec_a), RunSummary(rec_b)
    for rec, side in ((rec_a, "A"), (rec_b, "B")):
        if not len(rec.ticks):
            notes.append("%s (%s) has no per-tick trace (%s): the holding current, the pot over GRASP and the "
                         "loop timing are reported for the other run only" % (side, rec.path, rec.meta["kind"]))
    aligned = sorted(set(a.per_cycle) & set(b.per_cycle))
    if len(a.per_cycle) != len(b.per_cycle):
        notes.append("cycle counts differ (%d vs %d): comparing the %d cycles both have" % (
            len(a.per_cycle), len(b.per_cycle), len(aligned)))
    if not aligned:
        raise CompareError("the runs have no cycle number in common (A: %d cycles, B: %d)" % (
            len(a.per_cycle), len(b.per_cycle)))
    checks = []
    checks += _cycle_checks(a, b, aligned, tol)
    checks += _dwell_checks(a, b, aligned, tol)
    checks += _retry_checks(a, b, aligned, tol)
    checks += _verify_checks(a, b, aligned, tol)
    checks += _search_checks(a, b, aligned, tol)
    checks += _median_check("GRASP", "pot median over GRASP (counts)", a, b, aligned, "grasp_pot_counts", tol)
    checks += _median_check("LIFT+TRANSFER", "holding current median (mA)", a, b, aligned, "hold_current_ma", tol)
    checks += _median_check("CALIBRATION", "current zero at rest (counts)", a, b, aligned, "cal_current_counts", tol)
    checks += _loop_checks(a, b, tol)
    return Comparison(a, b, tol, checks, aligned, notes)


def _frac(n, total):
    return n / total if total else 0.0


def _cycle_checks(a, b, aligned, tol):
    out_diff = [c for c in aligned if a.per_cycle[c]["outcome"] != b.per_cycle[c]["outcome"]]
    seq_diff = [c for c in aligned if a.per_cycle[c]["sequence"] != b.per_cycle[c]["sequence"]]
    oa = _hist(a.per_cycle[c]["outcome"] for c in aligned)
    ob = _hist(b.per_cycle[c]["outcome"] for c in aligned)
    f1, f2 = _frac(len(out_diff), len(aligned)), _frac(len(seq_diff), len(aligned))
    note1 = ("cycles %s" % _few(out_diff)) if out_diff else ""
    note2 = ("first at cycle %d: %s vs %s" % (seq_diff[0], " ".join(a.per_cycle[seq_diff[0]]["sequence"]),
                                            " ".join(b.per_cycle[seq_diff[0]]["sequence"]))) if seq_diff else ""
    return [Check("CYCLE", "outcomes", oa, ob, round(f1, 4), tol["outcome_mismatch_frac"],
                  f1 <= tol["outcome_mismatch_frac"], note1),
            Check("CYCLE", "state sequences (distinct per run)", len({a.per_cycle[c]["sequence"] for c in aligned}),
                  len({b.per_cycle[c]["sequence"] for c in aligned}),
                  round(f2, 4), tol["sequence_mismatch_frac"], f2 <= tol["sequence_mismatch_frac"], note2)]


def _dwell_checks(a, b, aligned, tol):
    out = []
    for s in states.NAMES[1:]:
        da = [v for c in aligned for v in a.per_cycle[c]["dwell"].get(s, [])]
        db = [v for c in aligned for v in b.per_cycle[c]["dwell"].get(s, [])]
        if not da and not db:
            continue
        if not da or not db:
            out.append(_only(s, "visits", len(da), len(db), bool(da), "enters %s" % s))
            continue
        for name, q in (("dwell median (ms)", 50), ("dwell p90 (ms)", 90)):
            va, vb = float(np.percentile(da, q)), float(np.percentile(db, q))
            allow = max(tol["dwell_ms"], tol["dwell_rel"] * max(abs(va), abs(vb)))
            out.append(Check(s, name, round(va, 1), round(vb, 1), round(vb - va, 1), round(allow, 1),
                             abs(vb - va) <= allow))
    return out


def _retry_checks(a, b, aligned, tol):
    out = []
    causes = set()
    for c in aligned:
        causes |= set(a.per_cycle[c]["retries"]) | set(b.per_cycle[c]["retries"])
    n = len(aligned)
    for cause in sorted(causes):
        ra = sum(a.per_cycle[c]["retries"].get(cause, 0) for c in aligned) / n
        rb = sum(b.per_cycle[c]["retries"].get(cause, 0) for c in aligned) / n
        out.append(Check("RECOVER", "retries per cycle, %s" % cause, round(ra, 3), round(rb, 3), round(rb - ra, 3),
                         tol["retries_per_cycle"], abs(rb - ra) <= tol["retries_per_cycle"]))
    if not causes:
        out.append(Check("RECOVER", "retries per cycle", 0, 0, 0, tol["retries_per_cycle"], True))
    return out


def _verify_checks(a, b, aligned, tol):
    va = [v for c in aligned for v in a.per_cycle[c]["verify"]]
    vb = [v for c in aligned for v in b.per_cycle[c]["verify"]]
    if not va and not vb:
        return []
    if not va or not vb:
        return [_only("VERIFY", "decisions", len(va), len(vb), bool(va), "reaches VERIFY")]
    out = []
    for key, tk in (("pot_counts", "verify_pot_counts"), ("current_ma", "verify_current_ma")):
        ma = float(np.median([v[key] for v in va]))
        mb = float(np.median([v[key] for v in vb]))
        out.append(Check("VERIFY", "%s median at the decision" % key, round(ma, 1), round(mb, 1), round(mb - ma, 1),
                         tol[tk], abs(mb - ma) <= tol[tk]))
    pairs = [(x, y) for c in aligned for x, y in zip(a.per_cycle[c]["verify"], b.per_cycle[c]["verify"])]
    bad = sum(1 for x, y in pairs if x["present_mask"] != y["present_mask"])
    f = _frac(bad, len(pairs))
    ha = _hist(codes.checks_text(v["present_mask"]) for v in va)
    hb = _hist(codes.checks_text(v["present_mask"]) for v in vb)
    out.append(Check("VERIFY", "check masks (switch, beam, jaw, current) differing", ha, hb, round(f, 4),
                     tol["verify_mask_mismatch_frac"], f <= tol["verify_mask_mismatch_frac"]))
    return out


def _search_checks(a, b, aligned, tol):
    # The part search (docs/find-the-part.md), cycle by cycle: where each probe went and what it
    # met, and how far apart the poses found are.
    pa = [c for c in aligned if a.per_cycle[c]["probes"]]
    pb = [c for c in aligned if b.per_cycle[c]["probes"]]
    if not pa and not pb:
        return []
    if not pa or not pb:
        return [_only("SEARCH", "cycles with a part search", len(pa), len(pb), bool(pa), "searches for the part")]
    diff = [c for c in aligned if a.per_cycle[c]["probes"] != b.per_cycle[c]["probes"]]
    f = _frac(len(diff), len(aligned))
    note = ""
    if diff:
        c = diff[0]
        x, y = a.per_cycle[c]["probes"], b.per_cycle[c]["probes"]
        k = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
        note = "first at cycle %d, probe %d: %s vs %s" % (c, k + 1, x[k] if k < len(x) else "none",
                                                          y[k] if k < len(y) else "none")
    out = [Check("SEARCH", "probes (place and outcome) differing", sum(len(a.per_cycle[c]["probes"]) for c in aligned),
                 sum(len(b.per_cycle[c]["probes"]) for c in aligned), round(f, 4), tol["search_mismatch_frac"],
                 f <= tol["search_mismatch_frac"], note)]
    pairs = [(p, q) for c in aligned for p, q in zip(a.per_cycle[c]["found"], b.per_cycle[c]["found"])]
    if pairs:
        d = float(np.median([((p[1] - q[1]) ** 2 + (p[2] - q[2]) ** 2) ** 0.5 for p, q in pairs]))
        out.append(Check("SEARCH", "found pose apart, median (mm)", len(pairs), len(pairs), round(d, 2),
                         tol["search_found_mm"], d <= tol["search_found_mm"]))
    return out


def _median_check(phase, label, a, b, aligned, key, tol):
    xa = [a.per_cycle[c][key] for c in aligned if a.per_cycle[c][key] is not None]
    xb = [b.per_cycle[c][key] for c in aligned if b.per_cycle[c][key] is not None]
    if not xa and not xb:
        return []
    if not xa or not xb:
        why = ""
        if key in _FROM_TICKS:
            why = ", ".join(side + " has no per-tick trace" for side, r in (("A", a.rec), ("B", b.rec))
                            if not len(r.ticks))
        return [_only(phase, label, len(xa), len(xb), bool(xa), "has this", why)]
    ma, mb = float(np.median(xa)), float(np.median(xb))
    return [Check(phase, label, round(ma, 1), round(mb, 1), round(mb - ma, 1), tol[key], abs(mb - ma) <= tol[key])]


def _loop_checks(a, b, tol):
    out = []
    if len(a.periods_ms) and len(b.periods_ms):
        for label, q, key in (("loop period median (ms)", 50, "loop_period_ms"), ("loop period p99 (ms)", 99, "loop_p99_ms")):
            va, vb = float(np.percentile(a.periods_ms, q)), float(np.percentile(b.periods_ms, q))
            out.append(Check("LOOP", label, va, vb, round(vb - va, 3), tol[key], abs(vb - va) <= tol[key]))
    elif len(a.periods_ms) or len(b.periods_ms):
        out.append(_only("LOOP", "loop period", len(a.periods_ms), len(b.periods_ms), bool(len(a.periods_ms)),
                         "has tick times", "the other has no per-tick trace"))
    if len(a.loop_us) and len(b.loop_us):
        va, vb = float(np.percentile(a.loop_us, 99)) / 1000, float(np.percentile(b.loop_us, 99)) / 1000
        out.append(Check("LOOP", "measured loop time p99 (ms)", va, vb, round(vb - va, 3), tol["loop_p99_ms"],
                         abs(vb - va) <= tol["loop_p99_ms"]))
    elif len(a.loop_us) or len(b.loop_us):
        out.append(_only("LOOP", "measured loop time", "measured" if len(a.loop_us) else "not measured",
                         "measured" if len(b.loop_us) else "not measured", bool(len(a.loop_us)),
                         "measures its loop time"))
    return out


def _hist(items):
    h = {}
    for i in items:
        h[i] = h.get(i, 0) + 1
    return dict(sorted(h.items()))


def _few(items):
    return ", ".join(str(i) for i in items[:10]) + (" ..." if len(items) > 10 else "")
