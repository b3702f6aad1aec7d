# A part heavier than the description's bench.part_g says (docs/arm-description.md, "Not yet"):
# the payload check refuses only the part the description declares, so an undeclared 45 g part
# on al5d_mg996r (part_g left at its 20 g) reaches the lift. The judge (MuJoCo's physics) says
# it was not lifted; the machine must not claim it placed. It still does: the lift's sink check
# sees the part's pull only (2.3 mm of its 4 mm), not the serial arm's own sag between the pick
# and the lift (the servos' deadband turning sides, the pad holding the fingers at the pick),
# which no rail reading shows. Strict: once the machine stops claiming this, the test fails
# and the xfail mark comes off; a judge that says placed fails it outright (the premise).
import pytest

from surepick.host.arms import files
from surepick.host.engines import inproc
from surepick.sim import plant


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="known false success: docs/arm-description.md, Not yet")
def test_an_undeclared_45g_part_on_the_al5d_is_not_claimed_placed_when_not_lifted(monkeypatch):
    monkeypatch.setitem(plant.PARTS["cube25"], "mass_g", 45.0)     # the simulator's part only
    arm, _ = files.load("al5d_mg996r")
    assert arm.bench["part_g"] == 20.0                               # the description does not know
    rec, _, _ = inproc.run_cycle("nominal", seed=1, arm=arm, record_trajectory=False)
    if rec["judge_outcome"] == "placed":
        pytest.fail("the premise is gone: the judge says the 45 g part was placed (%r)" % rec["judge"])
    assert rec["fsm_outcome"] != "placed", rec
