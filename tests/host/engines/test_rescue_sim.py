# The operator's RESCUE on the in-process simulator (the firmware's controller on the MuJoCo
# world), judged from the physics: after a reset mid-lift nothing moves for 5 s, then the rescue
# powers the arm at the pose the operator measured and carries the part gently into the bin; after
# an e-stop in TRANSFER (no reset: the board knows its pose) the same from its own setpoints.
import math

from surepick.host.engines.inproc import InprocCycle
from surepick.shared_fsm import codes, link
from surepick.shared_fsm.config import Config
from surepick.shared_fsm.machine import Job
from surepick.sim import scenarios
from surepick.sim.plant import BIN_XY_MM, BIN_INNER_HALF_MM
from tests.support.period import PERIOD_MS, PERIOD_US

GENTLE_DPS = Config().gentle_speed_mdeg_s / 1000.0


class Watch:
    # Ground truth every loop tick, for the test's own measures (the board never sees it).
    def __init__(self, run):
        self.run = run
        self.q = None
        self.fastest_dps = 0.0
        self.left_fingers_at = None     # where the part was when the fingers last let go of it

    def tick(self):
        plant = self.run.plant
        q = plant.joint_angles_mdeg()[:4]
        if self.q is not None:
            v = max(abs(a - b) for a, b in zip(q, self.q)) / PERIOD_MS   # mdeg per tick -> deg/s
            self.fastest_dps = max(self.fastest_dps, v)
        self.q = q
        t = plant.truth()
        if self.left_fingers_at is None and not t["finger_contact"] and t["part_pos_mm"] is not None:
            self.left_fingers_at = list(t["part_pos_mm"])
        if t["finger_contact"]:
            self.left_fingers_at = None


def _setup(scenario, values, seed):
    sc = scenarios.get(scenario)
    run = InprocCycle(sc, sc.resolve(values), seed, 0)
    pick, place, width = run.world.job_um()
    assert run.board.ctl.start_job(Job(pick, place, width)) == 0
    return run


def _step(run, n=1, watch=None, after=None):
    for _ in range(n):
        r = run.board.step(after)
        after = None
        run._drain()
        if r is not None:
            run._reboot(r)
        if watch is not None:
            watch.tick()


def _rescue_to_the_end(run, action, near, pose=None, limit_ms=30000):
    ctl = run.board.ctl
    answer = []
    watch = Watch(run)
    _step(run, 1, watch, lambda now: answer.append(ctl.rescue(action, near, now, pose)))
    assert answer == [None], answer
    engaged_q = list(watch.q)
    _step(run, 100, watch)                      # the first 200 ms: the servos take the named pose
    moved = [abs(a - b) / 1000.0 for a, b in zip(watch.q, engaged_q)]
    watch.fastest_dps = 0.0
    t0 = run.board.now
    while ctl.rescue_op is not None and run.board.now - t0 < limit_ms:
        _step(run, 1, watch)
    _step(run, 600, watch)                      # the part comes to rest in the bin
    return watch, moved


def _in_bin(pos):
    return (abs(pos[0] - BIN_XY_MM[0]) < BIN_INNER_HALF_MM and abs(pos[1] - BIN_XY_MM[1]) < BIN_INNER_HALF_MM)


def test_after_a_reset_mid_lift_nothing_moves_until_a_rescue_places_the_part_gently():
    run = _setup("brownout_mid_lift", {"after_ms": 800}, 1000)
    while not run.restarts:
        _step(run)
    ctl = run.board.ctl
    assert codes.name(ctl.m.fault) == "INTERRUPTED" and ctl.arm_off and ctl.m.holding
    lifted = run.plant.truth()["part_pos_mm"][2]
    _step(run, 2500)                            # 5 s: nobody acts, nothing moves
    w = run.judge.restarts[-1]
    assert w["window_ms"] >= 4900 and w["part_moved_mm"] <= 5.0 and w["max_joint_speed_dps"] <= 5.0, w
    assert lifted > 15.0                        # the part hangs in the fingers, off the pad
    assert ctl.start_job(Job(*run.world.job_um())) == 2     # faulted: refused
    # The operator measures the jaw centre with a ruler (to the nearest 5 mm) and asks to place.
    jc = run.plant.truth()["jaw_centre_mm"]
    pose = tuple(int(round(v / 5.0)) * 5000 for v in jc) + (-90000,)
    watch, moved = _rescue_to_the_end(run, link.RESCUE_PLACE, link.NEAR_GIVEN, pose)
    # powered at the measured pose: each joint moved only by the measuring error, then gently
    assert max(moved) <= 3.0, moved
    assert watch.fastest_dps <= GENTLE_DPS * 1.2, watch.fastest_dps
    t = run.plant.truth()
    assert t["in_bin"] and not t["finger_contact"] and t["part_speed_mps"] < 0.02, t
    assert watch.left_fingers_at is not None and _in_bin(watch.left_fingers_at)   # let go over the bin
    assert ctl.m.fault == 0 and not ctl.m.holding and not ctl.arm_off
    notes = [codes.name(e[5]) for e in run.events if e[2] == codes.K_NOTE]
    assert notes[-3:] == ["CLEARED", "RESCUE", "PLACED"], notes
    print("\nreset mid-lift: 5 s after the restart the part moved %.2f mm, joints at most %.2f deg/s; "
          "rescue: engagement %s deg, then at most %.1f deg/s" % (w["part_moved_mm"], w["max_joint_speed_dps"],
                                                                   [round(v, 2) for v in moved], watch.fastest_dps))


def test_after_an_estop_in_transfer_a_rescue_places_from_the_boards_own_setpoints():
    run = _setup("estop", {"state": "TRANSFER"}, 1003)
    while not run.world._estop:
        _step(run)
    _step(run, 50)
    ctl = run.board.ctl
    assert codes.name(ctl.m.fault) == "ESTOP" and ctl.m.holding and not ctl.arm_off
    answer = []
    _step(run, 1, None, lambda now: answer.append(ctl.rescue(link.RESCUE_PLACE, link.NEAR_SETPOINT, now)))
    assert answer == [(link.E_STATE, ("estop",))]            # refused while the e-stop is pressed
    run.world.inject("estop", on=False)                      # the operator releases it
    _step(run, 10)
    assert ctl.start_job(Job(*run.world.job_um())) == 2      # still latched: refused
    _step(run, 1, None, lambda now: answer.append(ctl.rescue(link.RESCUE_PLACE, link.NEAR_PICK, now)))
    assert answer[-1] == (link.E_STATE, ("arm_powered",))    # it knows where it is: no guessing
    watch, moved = _rescue_to_the_end(run, link.RESCUE_PLACE, link.NEAR_SETPOINT)
    assert max(moved) <= 45.0 * 0.2 * 1.2                    # gentle from the very first tick
    assert watch.fastest_dps <= GENTLE_DPS * 1.2, watch.fastest_dps
    t = run.plant.truth()
    assert t["in_bin"] and not t["finger_contact"], t
    assert _in_bin(watch.left_fingers_at)
    assert run.judge.dropped_at is None or _in_bin(run.judge.dropped_at[1])
