# What the judge measures about the arm, against hand-made truth samples (the expected figures
# are worked out here, not taken from a run): stall stretches, and after a controller restart
# how far the part moved and how fast a joint turned.
from surepick.sim.judge import Judge, RESTART_WINDOW_MS


def _truth(q=(0.0, 90.0, -90.0, -90.0), speeds=(0.0, 0.0, 0.0, 0.0), part=(160.0, -60.0, 15.0), stall=None):
    return {"part_pos_mm": list(part), "finger_contact": False, "support_contact": True, "in_bin": False,
            "part_speed_mps": 0.0, "joint_angles_deg": list(q), "joint_speeds_dps": list(speeds),
            "servos_at_stall": stall or [False] * 5}


def test_longest_stall_is_the_longest_unbroken_stretch_per_servo():
    j = Judge(60.0)
    pattern = [0, 1, 1, 1, 0, 1, 1, 0, 0]          # the gripper at stall, 20 ms apart
    for k, s in enumerate(pattern):
        j.sample(k * 20, _truth(stall=[False, False, False, False, bool(s)]))
    assert j.longest_stall_ms == [0, 0, 0, 0, 40]   # samples 1..3: 20 ms to 60 ms


def test_restart_window_measures_part_travel_and_joint_speed_for_five_seconds():
    j = Judge(60.0)
    j.sample(0, _truth())
    j.note_restart(100)
    j.sample(120, _truth(part=(160.0, -60.0, 12.0)))                       # 3 mm down
    j.sample(140, _truth(q=(0.0, 90.2, -90.0, -90.0), part=(164.0, -60.0, 15.0)))  # 0.2 deg in 20 ms
    j.sample(100 + RESTART_WINDOW_MS + 20, _truth(q=(0.0, 120.0, -90.0, -90.0), part=(0.0, 0.0, 0.0)))
    w = j.verdict()[2]["restarts"][0]
    assert w["part_moved_mm"] == 4.0                 # the farthest sample inside the window
    assert abs(w["max_joint_speed_dps"] - 10.0) < 1e-6   # 0.2 deg / 0.02 s
    assert w["window_ms"] == 40                      # the sample after the window is not in it


def _held(z, fingers=True, support=False):
    return {"part_pos_mm": [160.0, -60.0, z], "finger_contact": fingers, "support_contact": support,
            "in_bin": False, "part_speed_mps": 0.0}


def test_a_part_dropped_in_the_bin_area_from_a_height_is_a_drop_but_one_picked_again_is_judged_anew():
    j = Judge(60.0)
    j.sample(0, _held(15.0, fingers=False, support=True))
    j.sample(20, _held(28.0))                              # picked (13 mm up, off the pad)
    j.sample(40, _held(24.0, fingers=False))               # fell out of the fingers
    assert j.dropped_at == (40, [160.0, -60.0, 24.0])
    j.sample(60, _held(15.0, fingers=False, support=True))  # back on the pad
    assert j.verdict()[0] == "dropped"
    j.sample(80, _held(30.0))                              # a retry picks it up again
    assert j.dropped_at is None and j.earlier_drops == [(40, [160.0, -60.0, 24.0])]
    j.sample(100, _held(50.0, fingers=False))              # and this one is a drop again
    assert j.dropped_at == (100, [160.0, -60.0, 50.0])
    assert j.verdict()[0] == "dropped"


def test_approach_measures_the_part_s_travel_across_its_support_and_the_longest_stall():
    # Only while the board says APPROACH (where a part search probes), from where the part was
    # when it began: 3-4-5 across the pad is 5 mm; a press into the pad (z) is not travel across
    # it; what happens in another state does not count.
    j = Judge(60.0)
    j.note_state(0, "APPROACH")
    j.sample(0, _truth(part=(160.0, -60.0, 15.0)))
    j.sample(20, _truth(part=(160.0, -60.0, 13.5), stall=[False, True, False, False, False]))
    j.sample(40, _truth(part=(163.0, -56.0, 15.0), stall=[False, True, False, False, False]))
    j.sample(60, _truth(part=(161.0, -60.0, 15.0)))
    j.note_state(80, "DESCEND")
    j.sample(80, _truth(part=(180.0, -60.0, 15.0), stall=[True] * 5))
    j.sample(200, _truth(part=(180.0, -60.0, 15.0), stall=[True] * 5))
    a = j.verdict()[2]["approach"]
    assert a == {"part_moved_mm": 5.0, "longest_stall_ms": 20}
