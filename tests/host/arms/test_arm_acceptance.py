# The acceptance's gates (host/engines/acceptance.py) on arms other than the reference: the
# AL5D-class MG996R preset and the reference with 120 mm / 115 mm links (lengths no one
# shipped). Slow tier: 4% of the reference's counts (at least 2 seeds a group, 8 nominal), about
# 50 cycles an arm. As in the quick sample, the part_offset_12 "retries used" gate needs the
# full count; every other gate holds. The parallel presets (MeArm, EEZYbotARM MK2) run the same
# machine through the description's servo map and their tendon-driven elbow: a quarter of the
# counts, every gate.
import copy
import json

import pytest

from surepick.host.cli.main import main
from surepick.host.engines import acceptance
from surepick.host.engines.inproc import TRAJECTORY_COLUMNS, run_cycle
from surepick.shared_fsm import arm as arm_mod
from surepick.shared_fsm.arm_reference import DESCRIPTION
from surepick.host.arms import files
from tests.sim.test_plant_kinds import hold_band_deg

PARALLEL = ["mearm", "eezybot_mk2"]


def long_reference():
    d = copy.deepcopy(DESCRIPTION)
    d["name"] = "reference_120_115"
    d["geometry"]["upper_arm_mm"], d["geometry"]["forearm_mm"] = 120.0, 115.0
    return arm_mod.validate(d)


def test_lengths_no_one_shipped_place_the_part_with_the_judge_agreeing():
    rec, _, run = run_cycle("nominal", seed=3, record_trajectory=False, arm=long_reference())
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed"
    # the plant really is the longer arm: its model's elbow sits 120 mm from the shoulder
    m = run.plant.m
    assert abs(m.body("forearm").pos[0] - 0.120) < 1e-12


@pytest.mark.parametrize("name", PARALLEL)
def test_parallel_presets_place_the_part_with_the_judge_agreeing(name):
    arm = files.load(name)[0]
    rec, traj, run = run_cycle("nominal", seed=3, record_trajectory=True, arm=arm)
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed"
    # The board's joint setpoints reached the joints through the description's servo map (zero,
    # gear, direction; the elbow through the linkage): at rest after the cycle, each joint the
    # kind has stands within its servo's hold band of what the firmware commands.
    last = dict(zip(TRAJECTORY_COLUMNS, traj[-1]))
    for i in range(3):
        err_deg = abs(last["q%d_cmd_mdeg" % i] - last["q%d_mdeg" % i]) / 1000.0
        assert err_deg < hold_band_deg(arm, i), (i, last)
    # the wrist channel (no servo on these arms) was never powered by the firmware
    assert run.plant.servos.pulses[3] == 0 and run.plant.truth()["servos_powered"][3] is False


def test_a_serial_arm_without_a_wrist_servo_places_the_part_with_the_judge_agreeing():
    # No preset has the kind: the AL5D with its tool fixed at -45 deg to the forearm stands in.
    from tests.host.arms.test_kinematics import ARMS
    arm = ARMS["al5d_nowrist"]
    rec, _, run = run_cycle("nominal", seed=2, record_trajectory=False, arm=arm)
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed"
    assert run.plant.servos.pulses[3] == 0 and run.plant.truth()["servos_powered"][3] is False


@pytest.mark.parametrize("name", PARALLEL)
def test_retries_never_open_the_jaw_past_the_arms_own_jaw(name):
    # part_missing retries open wider each attempt; a 40 mm jaw is never commanded past 40 mm
    # (the config allows 45): the machine names the missing part, not a pot that disagrees.
    arm = files.load(name)[0]
    rec, traj, _ = run_cycle("part_missing", seed=1000, record_trajectory=True, arm=arm)
    assert rec["fsm_fault"] == "GRASP_FAILED" and rec["attempts"] == 3 and not rec["false_success"]
    widest = max(dict(zip(TRAJECTORY_COLUMNS, r))["jaw_cmd_um"] for r in traj)
    assert widest == arm.gripper["jaw_max_mm"] * 1000


@pytest.mark.parametrize("name", PARALLEL)
def test_the_stall_fixture_stands_on_the_arms_own_pad_and_stalls_the_gripper(name):
    # The reference's fixture (140, 0) is out of these arms' reach and as wide as their jaw opens:
    # theirs stands on their pad, narrower than the jaw, taught narrower than it is.
    arm = files.load(name)[0]
    rec, _, run = run_cycle("servo_stall", seed=1000, record_trajectory=False, arm=arm)
    assert rec["fsm_fault"] in ("CRUSH", "MOTION_TIMEOUT") and not rec["false_success"]
    m = run.plant.m
    ob = m.body("obstacle").pos
    assert (abs(ob[0] * 1000 - arm.bench["pad_x_mm"]) < 1e-6 and abs(ob[1] * 1000 - arm.bench["pad_y_mm"]) < 1e-6)
    across = 2000 * m.geom("obstacle").size[1]
    assert across < arm.gripper["jaw_max_mm"] - 5.0
    assert rec["judge"]["longest_stall_ms"][4] > 0          # the gripper really squeezed at stall


@pytest.mark.parametrize("name", PARALLEL)
def test_sim_run_places_with_a_parallel_preset(tmp_path, capsys, name):
    out = tmp_path / "r"
    assert main(["sim", "run", "--scenario", "nominal", "--arm", name, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "verified placed 1/1, false successes 0" in said
    rep = json.loads((out / "report.json").read_text())
    assert rep["arm"] == name


@pytest.mark.slow
@pytest.mark.parametrize("which", ["al5d_mg996r", "reference_120_115"])
def test_acceptance_gates_hold_on_other_serial_arms(tmp_path, which):
    arm = long_reference() if which == "reference_120_115" else files.load(which)[0]
    res, _ = acceptance.run(scale=0.04, jobs=2, out_dir=str(tmp_path), arm=arm)
    print(json.dumps(res)[:4000])
    assert res["nominal"]["verified_placed"] == res["nominal"]["cycles"] >= 8
    assert res["_all"]["false_success"] == 0
    assert [b for b in acceptance.check(res) if b[0] != "part_offset_12"] == []


def test_an_arms_estop_windows_measured_on_the_reference_are_the_reference_table():
    # The windows measured from an arm's own nominal cycles (what another arm's e-stop groups
    # run with) reproduce, for the reference arm, the table measured by hand for it.
    from surepick.sim import scenarios
    w = acceptance.arm_state_windows(arm_mod.validate(DESCRIPTION))
    assert {k[len("estop_"):]: v for k, v in w.items()
            if k.startswith("estop_") and k != "estop_PLACE_release"} == scenarios.STATE_WINDOW_MS
    assert w["pot_break_grasp"] == w["estop_GRASP"] and w["pot_break_lift"] == w["estop_LIFT"]
    lo, hi = w["estop_PLACE_release"]
    ref_lo, ref_hi = scenarios.PLACE_RELEASE_WINDOW_MS
    assert abs(lo - ref_lo) <= 10 and hi >= ref_hi


def test_an_estop_at_the_end_of_each_of_eezybots_windows_lands_in_its_state():
    # EEZYbot's moves are shorter than the reference's (its APPROACH, DESCEND, LIFT, TRANSFER,
    # PLACE and RECOVER end before the reference's windows do): pressed at the very end of its
    # own window (seed 7, not one the windows were measured on), the e-stop latches in the state
    # it was aimed at.
    arm = files.load("eezybot_mk2")[0]
    w = acceptance.arm_state_windows(arm)
    for label in ("estop_APPROACH", "estop_DESCEND", "estop_LIFT", "estop_TRANSFER", "estop_PLACE",
                  "estop_PLACE_release"):
        name, overrides, _, _ = acceptance.GROUPS[label]
        lo, hi = w[label]
        rec, _, _ = run_cycle(name, dict(overrides, window_from_ms=hi - 2, window_to_ms=hi), seed=7,
                              record_trajectory=False, arm=arm)
        assert acceptance._estop_state_ok(rec, overrides["state"]), (label, rec["fsm_fault"], rec["fault_state"])


@pytest.mark.slow
@pytest.mark.parametrize("name", PARALLEL)
def test_acceptance_gates_hold_on_the_parallel_presets(tmp_path, name):
    # A quarter of the counts (325 cycles an arm, about 30 CPU-seconds each measured), the
    # e-stop and pot-break windows measured on the arm's own cycles (acceptance.arm_state_windows).
    # Every gate holds, the part_offset_12 retries included at this count.
    res, _ = acceptance.run(scale=0.25, jobs=2, out_dir=str(tmp_path), arm=files.load(name)[0])
    print(json.dumps(res)[:4000])
    assert res["nominal"]["verified_placed"] == res["nominal"]["cycles"] >= 50
    assert res["_all"]["false_success"] == 0
    assert acceptance.check(res) == []


def test_batch_runs_an_arm_and_refuses_to_resume_it_as_another(tmp_path, capsys):
    out = str(tmp_path / "b")
    assert main(["sim", "batch", "--scenario", "nominal", "--count", "1", "--jobs", "1", "--arm", "al5d_mg996r",
                 "--out", out]) == 0
    plan = json.loads((tmp_path / "b" / "batch.json").read_text())
    assert plan["scenarios"]["nominal"]["arm"]["name"] == "al5d_mg996r"
    capsys.readouterr()
    # the same directory resumed with the reference arm is another batch: refused, named
    code = main(["sim", "batch", "--scenario", "nominal", "--count", "2", "--jobs", "1", "--out", out, "--resume"])
    err = capsys.readouterr().err
    assert code == 2 and "another batch" in err


def test_sweep_runs_an_arm_and_refuses_to_resume_it_as_another(tmp_path, capsys):
    from surepick.host.engines import sweep
    out = str(tmp_path / "s")
    args = ["sim", "sweep", "--scenario", "part_offset", "--param", "offset_mm=0,6", "--seeds", "1",
            "--jobs", "1", "--no-plots", "--drill", "0", "--out", out]
    assert main(args + ["--arm", "mearm"]) == 0
    plan = sweep.Plan.from_dict(json.loads((tmp_path / "s" / "sweep.json").read_text()))
    assert plan.settings(0)["arm"]["name"] == "mearm"
    rows = [json.loads(line) for line in (tmp_path / "s" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["judge_outcome"] == "placed" and not r["false_success"] for r in rows)
    # a cell's job runs the arm the plan names: the part ends in that arm's bin
    _, _, traj, _ = sweep.run_job((0, 0, plan.settings(0)), record_trajectory=True)
    last = dict(zip(TRAJECTORY_COLUMNS, traj[-1]))
    b = files.load("mearm")[0].bench
    assert abs(last["part_x_mm"] - b["bin_x_mm"]) < b["bin_inner_half_mm"]
    assert abs(last["part_y_mm"] - b["bin_y_mm"]) < b["bin_inner_half_mm"]
    capsys.readouterr()
    # the same directory resumed with the reference arm is another sweep: refused, the arms named
    assert main(args + ["--resume"]) == 2
    err = capsys.readouterr().err
    assert 'arm: "reference" here, "mearm" in the stored plan' in err, err
