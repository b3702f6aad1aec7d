# The gripper's currents (host/bringup/squeeze.py): the settings from readings, against numbers
# worked by hand, and what a gripper that cannot be set up so is told. (Bring-up measuring them on
# a stand-in bench: tests/host/cli/test_bringup_cli.py.)
import pytest

from surepick.host.bringup import squeeze

RAIL_LOW_MV = 4200          # the board's rail_low_mv default (firmware/settings.py)
# An SG90 jaw as the simulator's reference bench read it, the supply current through the shunt:
# closed on nothing 10 mA at 5.695 V, squeezing a 25 mm part 282 mA at 5.627 V, pressing on it at
# stall 716 mA at 5.519 V. The board zeroed on the idle gripper reads each above its idle 10 mA
# (the SG90 model's idle_ma), as bring-up reads them:
IDLE = 10.0
EMPTY, SQUEEZING, STALL = (0.0, 5695.0), (272.0, 5627.0), (706.0, 5519.0)


def test_the_settings_by_hand():
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV, IDLE)
    # at 5 V, the idle current with it: 716 * 5000 / 5519 = 648.66 mA (the SG90's datasheet
    # figure is about 650 mA)
    assert f["stall_ma_5v"] == 648.7
    # the squeeze at 4.2 V: 272 * 4200 / 5627 = 203.02; half-way from 0 mA: 101.51
    assert f["current_grip_min_ma"] == 102
    # the stall at 4.2 V: 648.66 * 0.84 = 544.87, 534.87 above the idle; less 10%: 481.4
    assert f["current_stall_ma"] == 481
    # the crush line half-way from the squeeze as read (272) to that stall watch: 272 + 209 / 2 =
    # 376.5, rounded to the even whole mA
    assert f["current_crush_ma"] == 376
    # the holding limit a quarter of the way: 272 + 209 / 4 = 324.25
    assert f["current_hold_limit_ma"] == 324
    assert squeeze.problem(EMPTY, SQUEEZING, f, RAIL_LOW_MV, 150) is None
    line = squeeze.summary(dict(f, zero_counts=1221, empty=[0, 5695], squeezing=[272, 5627], stall=[706, 5519]))
    assert "current_grip_min_ma 102" in line and "current_stall_ma 481" in line and "10% under" in line
    assert "current_crush_ma 376" in line and "current_hold_limit_ma 324" in line
    assert "current_offset_counts 1221" in line


def test_the_settings_go_to_the_board_in_an_order_it_takes_one_at_a_time():
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV, IDLE)
    # the board's defaults before (current_grip_min_ma 150, current_crush_ma 600): the crush line
    # 376 is above the old grip threshold, so it goes first; 102 then lies under it
    assert squeeze.settings(f, 150) == [("current_crush_ma", 376), ("current_grip_min_ma", 102),
                                        ("current_stall_ma", 481), ("current_hold_limit_ma", 324)]
    # a board left with a grip threshold of 400 by a stronger gripper: the crush line 376 would
    # lie under it, so the new threshold 102 goes first
    assert squeeze.settings(f, 400) == [("current_grip_min_ma", 102), ("current_stall_ma", 481),
                                        ("current_crush_ma", 376), ("current_hold_limit_ma", 324)]


def test_a_stronger_gripper_gets_its_crush_line_above_the_default():
    # an MG996R-like jaw (idle 10 mA), read above its idle: squeezing 892 mA at 6.0 V, at stall
    # 2490 mA at 5.8 V (2500 mA supply current: 2155.2 mA at 5 V)
    f = squeeze.figures((30.0, 6000.0), (892.0, 6000.0), (2490.0, 5800.0), RAIL_LOW_MV, IDLE)
    assert f["stall_ma_5v"] == 2155.2
    # stall watch: 2155.17 * 0.84 = 1810.3, 1800.3 above the idle, less 10%: 1620.3 -> 1620; gap 728
    assert f["current_stall_ma"] == 1620
    assert f["current_crush_ma"] == 1256          # 892 + 364: above the default 600
    assert f["current_hold_limit_ma"] == 1074     # 892 + 182
    # grip 892 * 0.7 = 624.4 at 4.2 V, half-way from 30: 327.2
    assert f["current_grip_min_ma"] == 327
    assert squeeze.problem((30.0, 6000.0), (892.0, 6000.0), f, RAIL_LOW_MV, 150) is None


def test_the_stall_is_read_where_the_current_settled_before_any_fault():
    frames = [{"current_ma": 300, "rail_mv": 5600, "fault": 0},     # still closing
              {"current_ma": 716, "rail_mv": 5519, "fault": 0},
              {"current_ma": 712, "rail_mv": 5521, "fault": 0},
              {"current_ma": 720, "rail_mv": 5517, "fault": 45}]    # the stall watch latched STALL
    assert squeeze.stall_reading(frames) == (714.0, 5520.0)
    assert squeeze.stall_reading(frames[:2]) is None                   # one settled reading is not enough
    assert squeeze.stall_reading([frames[3]]) is None


def test_a_gripper_that_cannot_be_set_up_so_is_told():
    # squeezing hardly more than closed on nothing: 25 mA at 5.6 V is 18.75 mA at 4.2 V, under 20 above 0
    weak = (25.0, 5600.0)
    text = squeeze.problem(EMPTY, weak, squeeze.figures(EMPTY, weak, STALL, RAIL_LOW_MV, IDLE), RAIL_LOW_MV, 150)
    assert "too close for the current check" in text and "--redo gripper.current" in text
    # a servo that stalls at 450 mA above its idle at 5.6 V (460 * 0.75 = 345 at 4.2 V, 335 above
    # the idle, less 10%: 301 by the rule) squeezing at 320 mA
    hard, low = (320.0, 5600.0), (450.0, 5600.0)
    f = squeeze.figures(EMPTY, hard, low, RAIL_LOW_MV, IDLE)
    assert f["current_stall_ma"] == 301
    text = squeeze.problem(EMPTY, hard, f, RAIL_LOW_MV, 150)
    assert "would trip the stall watch" in text and "squeeze_um" in text
    # a squeeze 60 mA under the stall watch (481): above it, but less than 4 x 20 mA, so the
    # holding limit would lie 15 mA over the squeeze and the crush line 30
    near = (421.0, 5627.0)
    f = squeeze.figures(EMPTY, near, STALL, RAIL_LOW_MV, IDLE)
    assert (f["current_stall_ma"], f["current_hold_limit_ma"], f["current_crush_ma"]) == (481, 436, 451)
    text = squeeze.problem(EMPTY, near, f, RAIL_LOW_MV, 150)
    assert "too close for the crush and holding checks" in text and "squeeze_um" in text
    assert "--redo gripper.current --apply" in text
    # 80 mA under it is enough: the holding limit 20 mA over the squeeze
    ok = (401.0, 5627.0)
    assert squeeze.problem(EMPTY, ok, squeeze.figures(EMPTY, ok, STALL, RAIL_LOW_MV, IDLE), RAIL_LOW_MV, 150) is None
    # a stall watch that would sit under the board's holding level (the firmware refuses that)
    # (a stall of 210 mA at 5 V: 176.4 at 4.2 V, 166.4 above the idle, less 10%: 149; squeezing
    # 50 mA: 99 mA under the stall watch, room for the crush and holding checks)
    small = squeeze.figures(EMPTY, (50.0, 5000.0), (200.0, 5000.0), RAIL_LOW_MV, IDLE)
    assert small["current_stall_ma"] == 149
    text = squeeze.problem(EMPTY, (50.0, 5000.0), small, RAIL_LOW_MV, 160)
    assert "current_holding_ma 160" in text


def test_settings_the_machine_would_refuse_are_told():
    # the firmware's Config judges them: a crush line above 5000 mA (its bound), and one not above
    # the grip threshold (its rule); readings do not give these, a shunt misread could
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV, IDLE)
    text = squeeze.config_refusal(dict(f, current_crush_ma=5001))
    assert "current_crush_ma" in text and "5001 outside 1..5000" in text and "--redo gripper.current" in text
    text = squeeze.config_refusal(dict(f, current_crush_ma=102))
    assert "must be above current_grip_min_ma" in text
    assert squeeze.config_refusal(f) is None


def test_a_hold_deeper_than_the_squeeze_is_told():
    # the holding limit is set above the squeeze read: only a hold no deeper than it stays under
    assert squeeze.hold_refusal(6000, 2000) is None and squeeze.hold_refusal(6000, 6000) is None
    text = squeeze.hold_refusal(6000, 7000)
    assert "hold_squeeze_um 7000 is deeper than its squeeze_um 6000" in text
    assert "surepick config set hold_squeeze_um" in text and "--redo gripper.current --apply" in text


def test_each_write_in_that_order_is_one_the_firmware_takes():
    # The firmware's own Config stands in for the board, judging each write alone against what it
    # holds then: from the defaults, and from a board a stronger gripper left (grip 400, crush 1200).
    from surepick.shared_fsm.config import Config, ConfigError
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV, IDLE)
    for before in ({}, {"current_grip_min_ma": 400, "current_crush_ma": 1200}):
        board = Config(before)
        for key, value in squeeze.settings(f, board.current_grip_min_ma):
            if key in squeeze.MACHINE_SETTINGS:
                board.update({key: value})
        assert (board.current_grip_min_ma, board.current_crush_ma, board.current_hold_limit_ma) == (102, 376, 324)
    # the other order is refused from the second board: the crush line 386 under its grip 400
    board = Config({"current_grip_min_ma": 400, "current_crush_ma": 1200})
    with pytest.raises(ConfigError, match="must be above current_grip_min_ma"):
        board.update({"current_crush_ma": 386})
