# The part search (docs/find-the-part.md) in the cases built for it, judged by the physics:
# the firmware's controller on the MuJoCo plant in this process, then the firmware itself on
# the virtual board and on the emulated RP2040 (slow tier), one shifted-part cycle each. The
# search must place what it finds, never claim a part it does not have, and leave a part it
# touched (nearly) where it stood: the judge measures how far the part moved across its support
# while the board said APPROACH, where a search probes.
import json

import pytest

from surepick.host.engines import inproc
from tests.support.cli import surepick

ALWAYS = {"resense": 2}
ON_RETRY = {"resense": 1}
# A touch moves the part by what a finger tip coming down on it does (mostly pressing it into its
# support); a slide aside of a few mm happens only when a tip catches the part's very edge.
TOUCH_MOVE_MM = 1.0


def _cycle(scenario, params=None, seed=1, cfg=ALWAYS):
    rec, traj, run = inproc.run_cycle(scenario, params, seed=seed, record_trajectory=False, cfg_overrides=cfg)
    return rec


def _search_steps(rec):
    return [e["reason"] for e in rec["events"] if e["kind"] == "search"]


def test_where_expected_on_retry_costs_nothing():
    # The part where it was taught: the first attempt places it, no search runs, and the
    # cycle is the same, event for event and tick for tick, as without the search.
    runs = []
    for cfg in (None, ON_RETRY):
        run = inproc.InprocCycle("nominal", None, 3, 0, cfg_overrides=cfg)
        rec = run.run(True)
        runs.append((rec["_events"], rec["_ticks"], rec["sim_ms"], rec["fsm_outcome"]))
    assert runs[0] == runs[1] and runs[0][3] == "placed"


@pytest.mark.parametrize("scenario,params", [
    ("part_shifted", None),                                          # 17 mm off: beyond blind grasping
    ("part_shifted", {"dx_mm": 0, "dy_mm": 0, "yaw_deg": 18}),       # turned where it was taught
    ("part_shifted", {"dx_mm": -8, "dy_mm": 14, "yaw_deg": -15}),    # shifted and turned
    ("two_parts", None),
    ("part_at_fence", None),
])
def test_the_search_finds_places_and_does_not_push(scenario, params):
    rec = _cycle(scenario, params)
    steps = _search_steps(rec)
    assert steps[0] == "SEARCH" and "FOUND" in steps, steps
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed", (rec["fsm_fault"], rec["judge_reason"])
    assert rec["judge"]["approach"]["part_moved_mm"] <= TOUCH_MOVE_MM, rec["judge"]["approach"]
    assert rec["judge"]["approach"]["longest_stall_ms"] == 0
    for moved in rec["judge"].get("others_moved_mm") or ():
        assert moved <= TOUCH_MOVE_MM


def test_every_move_from_the_search_to_the_transfer_was_planned_at_rest(monkeypatch):
    # A move planned when it comes is planned inside a tick (on the chip: several periods of
    # IK). From the search's first probe to the transfer to the bin, every move must come from
    # a plan made at rest (a MOVE_PLAN); the placing's own moves are the job's (the App plans
    # those when the job comes; this engine has no App).
    from surepick.shared_fsm import motion, states
    planned_in_a_tick = []
    compute = motion.Motion._compute
    run = inproc.InprocCycle("part_shifted", None, 1, 0, cfg_overrides=ALWAYS)     # found where the arm reaches lower
    m = run.board.ctl.m

    def watched(self, now, out):
        planned_in_a_tick.append((states.name(m.state), out.move_kind, out.x_um, out.y_um, out.z_um))
        return compute(self, now, out)
    monkeypatch.setattr(motion.Motion, "_compute", watched)
    rec = run.run(False)
    assert rec["fsm_outcome"] == "placed" and "FOUND" in _search_steps(rec)
    searching = ("APPROACH", "DESCEND", "GRASP", "VERIFY", "LIFT", "TRANSFER")
    assert [p for p in planned_in_a_tick if p[0] in searching] == []
    assert [p[0] for p in planned_in_a_tick] == ["PLACE", "PLACE"]     # the placing and its retreat


def test_without_the_search_the_shifted_part_is_an_honest_failure():
    rec = _cycle("part_shifted", cfg=None)
    assert rec["fsm_outcome"] == "fault" and not rec["false_success"] and not _search_steps(rec)


def test_a_missing_part_is_searched_for_on_every_attempt_then_grasp_failed():
    rec = _cycle("part_missing")
    steps = _search_steps(rec)
    assert rec["fsm_fault"] == "GRASP_FAILED" and not rec["false_success"] and rec["attempts"] == 3
    assert steps.count("SEARCH") == 3 and "FOUND" not in steps
    assert steps.count("NOT_FOUND") + steps.count("SEARCH_TIMEOUT") == 3


def test_a_record_with_a_search_replays_exactly(tmp_path):
    out = tmp_path / "run"
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"resense": "always"}))
    r = surepick("sim", "run", "--scenario", "part_shifted", "--seed", "2", "--config", cfg, "--out", out,
                 "--no-plots", timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "run.json").read_text())["config"]["resense"] == 2
    events = (out / "events.csv").read_text()
    assert ",search,APPROACH,APPROACH,FOUND," in events and ",search,APPROACH,APPROACH,PROBE_" in events
    r = surepick("replay", out, timeout=300)
    assert r.returncode == 0 and "1 of 1 cycle(s) reproduced exactly" in r.stdout, r.stdout + r.stderr


def test_the_firmware_on_the_virtual_board_finds_a_shifted_part(tmp_path):
    # The board boots with resense=always on its flash; its EVENT frames carry the search; the
    # shadow controller reproduces the firmware's pulses and events through the search; compare
    # lines its search up with the host's. (The virtual board times its ticks on this host's
    # CPU, so its overruns follow the host's load: the period is checked on the emulated chip.)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"resense": "always"}))
    vb, sim = tmp_path / "vb", tmp_path / "sim"
    r = surepick("sim", "run", "--engine", "vboard", "--scenario", "part_shifted", "--seed", "1", "--config", cfg,
                 "--out", vb, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    c = json.loads((vb / "cycles.jsonl").read_text().splitlines()[0])
    assert c["fsm_outcome"] == "placed" and c["judge_outcome"] == "placed", c
    assert c["reconstruction"]["pulse_mismatches"] == 0 and c["reconstruction"]["events_equal"]
    assert json.loads((vb / "run.json").read_text())["config"]["resense"] == 2
    assert ",search,APPROACH,APPROACH,FOUND," in (vb / "events.csv").read_text()
    r = surepick("sim", "run", "--scenario", "part_shifted", "--seed", "1", "--config", cfg, "--out", sim,
                 "--no-plots", timeout=300)
    assert r.returncode == 0, r.stderr
    r = surepick("compare", sim, vb, "--out", tmp_path / "cmp", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    checks = [c for c in json.loads((tmp_path / "cmp" / "comparison.json").read_text())["checks"]
              if c["phase"] == "SEARCH"]
    assert [c["metric"] for c in checks] == ["probes (place and outcome) differing", "found pose apart, median (mm)"]
    assert all(c["ok"] and not c["one_sided"] for c in checks) and checks[0]["diff"] == 0


def _host_events():
    run = inproc.InprocCycle("part_shifted", None, 1, 0, cfg_overrides=ALWAYS)
    ev = run.run(True)["_events"]
    return [(e[1] - ev[0][1],) + tuple(e[2:6]) + (tuple(e[7:10]) if e[2] == 3 else ()) for e in ev]


@pytest.mark.slow
def test_the_firmware_on_the_emulated_rp2040_finds_a_shifted_part(tmp_path):
    # Every move of the search planned at rest (MOVE_PLAN: maintenance ticks, not counted as
    # loop ticks), so the chip keeps its 4 ms period with no overrun through the search.
    from tests.support.rp2040 import chip_image
    from surepick.host.engines.rp2040 import cycle
    uf2 = chip_image()
    meta, recs, evs, tks = cycle.run("part_shifted", 1, 1, workdir=str(tmp_path), uf2=uf2, cfg_overrides=ALWAYS)
    rec = recs[0]
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed", rec
    assert rec["reconstruction"]["pulse_mismatches"] == 0 and rec["reconstruction"]["events_equal"], rec
    found = [e for e in evs[0] if e[2] == 3 and e[5] == 27]
    assert len(found) == 1
    # the same decisions at the same times as the host simulator (the planning at rest is long on
    # the chip, 52-92 ms, and the machine waits PLAN_WAIT_MS after each on every engine)
    host = _host_events()
    chip = [(e[1] - evs[0][0][1],) + tuple(e[2:6]) + (tuple(e[7:10]) if e[2] == 3 else ()) for e in evs[0]]
    assert chip == host
    loop = rec["loop"]
    # (period_us is the cycle's mean period: the plannings at rest skip periods, as a flash write does)
    assert loop["overruns"] == 0 and loop["tick_max_us"] < 4000, loop
    # (measured: p99 2,815 us, 70% of the period; the nominal cycle's own gate is 70%: its test)
    assert loop["tick_p99_us"] <= 0.75 * 4000, loop


def test_the_board_s_own_event_log_keeps_the_search(tmp_path):
    # The firmware's flash log (what `surepick log` reads) holds every search step with its pose.
    from surepick.host.engines import vboard
    from surepick.firmware import flashlog, settings
    from surepick.shared_fsm import codes
    bc = vboard.VboardCycle("part_shifted", None, 1, 0, None, tmp_path / "flash",
                           settings=settings.Settings(machine=ALWAYS)).run()
    logged = [r for _, _, r in flashlog.FlashLog(str(tmp_path / "flash" / "log")).read_since(0)]
    searched = [tuple(r) for r in logged if r[2] == codes.K_SEARCH]
    sent = [e for e in bc.events if e[2] == codes.K_SEARCH]
    assert searched == sent and codes.R_FOUND in [r[5] for r in searched]
