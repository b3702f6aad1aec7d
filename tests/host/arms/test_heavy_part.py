# A part too heavy for the arm must not end in a false success (docs/arm-description.md, "A part
# too heavy to lift"). A MeArm (MG90S shoulder and elbow) cannot lift 400 g: its shoulder and
# elbow push at stall, the arm stays at the pad holding the part, and without a check the
# machine opened the jaw there believing it stood over the bin (the judge: not picked). The board
# has no joint feedback; the servo rail has the evidence: before it opens at the place pose, the
# firmware reads the rail's sag, and with both load servos at stall (the description's stall
# currents through its rail resistance: 350 mV on the MeArm) it keeps the part and latches STALL.
# The part's mass is changed on the nominal scenario's cube (the simulator's part; the board
# cannot know it).
import pytest

from surepick.host.arms import files
from surepick.host.engines import inproc
from surepick.shared_fsm import states
from surepick.sim import plant

I = {c: i for i, c in enumerate(inproc.TRAJECTORY_COLUMNS)}


def _cycle(monkeypatch, arm_name, mass_g, seed=1):
    monkeypatch.setitem(plant.PARTS["cube25"], "mass_g", mass_g)
    arm, _ = files.load(arm_name)
    rec, traj, run = inproc.run_cycle("nominal", seed=seed, arm=arm)
    return rec, traj, run


def _set_back(traj, arm):
    # What the physics says of a short lift's end (MuJoCo's part and joints, never the board's
    # belief): the part back where it stood and still between the fingers, no faster on its way
    # down than on its way up (the same path at the same gentle pace, against the 0.66 m/s of
    # the reference arm falling with it, unpowered, before the set-down), and every arm servo
    # inside its proportional band (torque = stall x lag / band_deg, sim/servo_model.py): none
    # left pushing at stall.
    z = [r[I["part_z_mm"]] for r in traj]
    top = max(range(len(z)), key=lambda k: z[k])
    assert abs(z[-1] - z[0]) < 1.0, (z[0], z[-1])
    assert all(r[I["finger_contact"]] and r[I["beam_broken"]] for r in traj[top:])
    up = max(r[I["part_speed_mps"]] for r in traj[:top + 1])
    down = max(r[I["part_speed_mps"]] for r in traj[top:])
    assert down < 1.25 * up + 0.01, (up, down)
    end = traj[-1]
    for i in range(4):
        servo = arm.servo(i)
        if servo is None:
            continue                                         # (the MeArm has no wrist)
        model = arm.servo_models[servo["model"]]
        lag_mdeg = abs(end[I["q%d_cmd_mdeg" % i]] - end[I["q%d_mdeg" % i]]) * servo["gear"]
        assert lag_mdeg < model["band_deg"] * 1000, (i, lag_mdeg)


def test_the_mearm_with_a_400g_part_fails_loudly_and_keeps_the_part(monkeypatch):
    rec, traj, run = _cycle(monkeypatch, "mearm", 400.0)
    assert rec["judge_outcome"] != "placed"                  # the physics: it never left the pad
    assert rec["fsm_outcome"] == "fault" and rec["fsm_fault"] == "LIFT_SHORT", rec
    assert rec["fault_state"] == "LIFT"                      # found at the lift's end, not at the bin
    ctl = run.board.ctl
    faulted = [r for r in traj if r[I["fault"]]]
    assert faulted
    # the jaw never opened: from the fault on the jaw command is the grip it had
    grip = faulted[0][I["jaw_cmd_um"]]
    assert all(r[I["jaw_cmd_um"]] <= grip for r in faulted)
    assert ctl.m.lift_sink_um > ctl.cfg.lift_sink_max_um
    arm, _ = files.load("mearm")
    _set_back(traj, arm)                                     # and its shoulder and elbow off stall


# Parts heavy enough to pull the lift short without stalling an arm: without the lift's sink
# check each ended in the bin with the machine saying placed, the judge "not lifted" (the part
# rose 51.7 to 54.9 of the 60 mm lift; docs/arm-description.md). Now each latches LIFT_SHORT at
# the lift's end and sets the part back down where it was picked, held (the reference with 400 g,
# held up there, was unpowered by the sag watch's STALL a second later and fell with it).
@pytest.mark.parametrize("arm_name,mass_g", [("mearm", 200.0), ("mearm", 250.0), ("reference", 250.0),
                                             ("reference", 400.0), ("eezybot_mk2", 600.0),
                                             ("al5d_mg996r", 100.0)])
def test_a_lift_pulled_short_is_a_named_fault_not_a_placed_claim(monkeypatch, arm_name, mass_g):
    rec, traj, run = _cycle(monkeypatch, arm_name, mass_g)
    assert rec["fsm_outcome"] == "fault" and rec["fsm_fault"] == "LIFT_SHORT", rec
    first = [e for e in rec["events"] if e["kind"] == "fault"][0]
    assert first["reason"] == "LIFT_SHORT" and first["from"] == "LIFT", first      # (a stall may follow)
    assert rec["judge_outcome"] != "placed", rec
    faulted = [r for r in traj if r[I["fault"]]]
    assert all(r[I["finger_contact"]] and r[I["beam_broken"]] for r in faulted)      # never let go
    assert all(not r[I["in_bin"]] for r in traj)
    assert [e["reason"] for e in rec["events"] if e["kind"] != "transition"] == ["LIFT_SHORT"]   # no STALL after
    assert run.board.ctl.arm_off == 0
    arm, _ = files.load(arm_name)
    _set_back(traj, arm)


@pytest.mark.parametrize("arm_name,mass_g", [("mearm", 150.0), ("mearm", 200.0), ("mearm", 250.0)])
def test_the_lift_sink_estimate_is_the_physics(monkeypatch, arm_name, mass_g):
    # The board reads only the rail and the gripper current; MuJoCo moves the part: its rise at
    # the lift's end (relative to where it stood) against the lift commanded (the 60 mm and its
    # raise by the sag predicted for the declared part, Machine.up_um) is the oracle. Its highest
    # rise in LIFT is the lift's end: the set-down after it goes back down the same path.
    rec, traj, run = _cycle(monkeypatch, arm_name, mass_g)
    m = run.board.ctl.m
    z0 = traj[0][I["part_z_mm"]]
    rise = max(r[I["part_z_mm"]] - z0 for r in traj if r[I["state"]] == states.LIFT)
    short_mm = (m.cfg.approach_height_um + m.up_um) / 1000.0 - rise
    assert abs(m.lift_sink_um / 1000.0 - short_mm) < 1.0, (m.lift_sink_um, short_mm)


@pytest.mark.parametrize("arm_name,mass_g", [("mearm", 20.0), ("reference", 20.0), ("reference", 100.0),
                                             ("eezybot_mk2", 100.0), ("al5d_mg996r", 20.0)])
def test_parts_the_arm_lifts_are_placed_past_both_checks(monkeypatch, arm_name, mass_g):
    rec, traj, run = _cycle(monkeypatch, arm_name, mass_g)
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed", rec
    ctl = run.board.ctl
    assert 0 < ctl.m.lift_sink_um < ctl.cfg.lift_sink_max_um
    sag = [ctl.rail_idle_mv - r[I["rail_mv"]] for r in traj if r[I["state"]] == states.PLACE]
    assert max(sag) < ctl.release_sag_mv
