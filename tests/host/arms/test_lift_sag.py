# The lift ends higher by the sag the description predicts at its end with the declared part
# (shared_fsm/payload.lift_sag_um: each servo's band at the static torque it gives), so the part
# reaches the lift's height. The oracle is MuJoCo's physics: the part's rise at the lift's end.
# Before the raise, al5d_mg996r's 20 g part rose 50.6 mm of the 60 mm lift (docs/arm-description.md).
import pytest

from surepick.host.arms import files
from surepick.host.engines import inproc
from surepick.shared_fsm import payload, states
from surepick.shared_fsm.machine import Job

I = {c: i for i, c in enumerate(inproc.TRAJECTORY_COLUMNS)}
HEIGHT_MM = 2.0      # the rise at the lift's end within this of the lift's height


@pytest.mark.parametrize("name", ["reference", "al5d_mg996r", "mearm", "eezybot_mk2"])
def test_the_declared_part_rises_to_the_lifts_height(name):
    arm, _ = files.load(name)
    rec, traj, run = inproc.run_cycle("nominal", seed=1, arm=arm)
    assert rec["fsm_outcome"] == "placed" and rec["judge_outcome"] == "placed", rec
    m = run.board.ctl.m
    assert m.lift_up_um > 0
    z0 = traj[0][I["part_z_mm"]]
    rise = [r[I["part_z_mm"]] - z0 for r in traj if r[I["state"]] == states.LIFT][-1]
    assert abs(rise - m.cfg.approach_height_um / 1000.0) < HEIGHT_MM, (rise, m.lift_up_um)


def test_a_lift_the_arm_cannot_raise_ends_at_the_approach_height():
    # A pick whose approach point the arm reaches but not the raise above it: the job still runs,
    # its lift as high as the approach (the raise is left out, never an unreachable move).
    arm, _ = files.load("reference")
    _, _, run = inproc.run_cycle("nominal", seed=1, arm=arm, record_trajectory=False)
    ctl = run.board.ctl
    job = Job(*run.world.job_um())
    x, y, z, p = (v / 1000.0 for v in job.pick)
    h = ctl.cfg.approach_height_um / 1000.0
    lo, hi = z + h, z + h + 200.0                 # the highest point the arm reaches over the pick
    while hi - lo > 0.01:
        mid = (lo + hi) / 2.0
        try:
            arm.inverse(x, y, mid, p)
            lo = mid
        except ValueError:
            hi = mid
    for top_gap, raised in ((20.0, True), (0.5, False)):
        z_mm = lo - top_gap - h
        assert 0.5 < payload.lift_sag_um(arm, x, y, z_mm + h, p, arm.bench["part_g"]) / 1000.0 < 20.0
        j = Job((job.pick[0], job.pick[1], int(z_mm * 1000.0), job.pick[3]), job.place, job.part_width_um)
        assert ctl.payload_check(j) is None
        assert (ctl.m.lift_up_um > 0) == raised, (top_gap, ctl.m.lift_up_um)
