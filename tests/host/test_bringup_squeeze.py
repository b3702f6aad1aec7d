# The gripper's currents (host/bringup/squeeze.py): the settings from readings, against numbers
# worked by hand, and what a gripper that cannot be set up so is told. (Bring-up measuring them on
# a stand-in bench: tests/host/cli/test_bringup_cli.py.)
from surepick.host.bringup import squeeze

RAIL_LOW_MV = 4200          # the board's rail_low_mv default (firmware/settings.py)
# An SG90 jaw as the simulator's reference bench read it: closed on nothing 10 mA at 5.695 V,
# squeezing a 25 mm part 282 mA at 5.627 V, pressing on it at stall 716 mA at 5.519 V.
EMPTY, SQUEEZING, STALL = (10.0, 5695.0), (282.0, 5627.0), (716.0, 5519.0)


def test_the_settings_by_hand():
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV)
    # at 5 V: 716 * 5000 / 5519 = 648.66 mA (the SG90's datasheet figure is about 650 mA)
    assert f["stall_ma_5v"] == 648.7
    # the squeeze at 4.2 V: 282 * 4200 / 5627 = 210.48; half-way from 10 mA: 110.24
    assert f["current_grip_min_ma"] == 110
    # the stall at 4.2 V: 648.66 * 0.84 = 544.9, less 10%: 490.4
    assert f["current_stall_ma"] == 490
    assert squeeze.problem(EMPTY, SQUEEZING, f, RAIL_LOW_MV, 150) is None
    assert squeeze.settings(f) == [("current_grip_min_ma", 110), ("current_stall_ma", 490)]
    line = squeeze.summary(dict(f, empty=[10, 5695], squeezing=[282, 5627], stall=[716, 5519]))
    assert "current_grip_min_ma 110" in line and "current_stall_ma 490" in line and "10% under" in line


def test_the_stall_is_read_where_the_current_settled_before_any_fault():
    frames = [{"current_ma": 300, "rail_mv": 5600, "fault": 0},     # still closing
              {"current_ma": 716, "rail_mv": 5519, "fault": 0},
              {"current_ma": 712, "rail_mv": 5521, "fault": 0},
              {"current_ma": 720, "rail_mv": 5517, "fault": 45}]    # the stall watch latched STALL
    assert squeeze.stall_reading(frames) == (714.0, 5520.0)
    assert squeeze.stall_reading(frames[:2]) is None                   # one settled reading is not enough
    assert squeeze.stall_reading([frames[3]]) is None


def test_a_gripper_that_cannot_be_set_up_so_is_told():
    # squeezing hardly more than closed on nothing: 35 mA at 5.6 V is 26.25 mA at 4.2 V, 16 above
    weak = (35.0, 5600.0)
    text = squeeze.problem(EMPTY, weak, squeeze.figures(EMPTY, weak, STALL, RAIL_LOW_MV), RAIL_LOW_MV, 150)
    assert "too close for the current check" in text and "--redo gripper.current" in text
    # a servo that stalls at 450 mA at 5.6 V (303 mA by the rule) squeezing at 320 mA
    hard, low = (320.0, 5600.0), (450.0, 5600.0)
    f = squeeze.figures(EMPTY, hard, low, RAIL_LOW_MV)
    assert f["current_stall_ma"] == 303
    text = squeeze.problem(EMPTY, hard, f, RAIL_LOW_MV, 150)
    assert "would trip the stall watch" in text and "squeeze_um" in text
    # a stall watch that would sit under the board's holding level (the firmware refuses that)
    small = squeeze.figures(EMPTY, (100.0, 5000.0), (200.0, 5000.0), RAIL_LOW_MV)
    assert small["current_stall_ma"] == 151
    text = squeeze.problem(EMPTY, (100.0, 5000.0), small, RAIL_LOW_MV, 160)
    assert "current_holding_ma 160" in text
