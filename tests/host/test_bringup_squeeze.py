# The gripper's currents (host/bringup/squeeze.py): the settings from readings, against numbers
# worked by hand, and what a gripper that cannot be set up so is told. (Bring-up measuring them on
# a stand-in bench: tests/host/cli/test_bringup_cli.py.)
import pytest

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
    # the crush line half-way from the squeeze as read (282) to that stall watch: 282 + 208 / 2
    assert f["current_crush_ma"] == 386
    # the holding limit a quarter of the way: 282 + 208 / 4
    assert f["current_hold_limit_ma"] == 334
    assert squeeze.problem(EMPTY, SQUEEZING, f, RAIL_LOW_MV, 150) is None
    line = squeeze.summary(dict(f, empty=[10, 5695], squeezing=[282, 5627], stall=[716, 5519]))
    assert "current_grip_min_ma 110" in line and "current_stall_ma 490" in line and "10% under" in line
    assert "current_crush_ma 386" in line and "current_hold_limit_ma 334" in line


def test_the_settings_go_to_the_board_in_an_order_it_takes_one_at_a_time():
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV)
    # the board's defaults before (current_grip_min_ma 150, current_crush_ma 600): the crush line
    # 386 is above the old grip threshold, so it goes first; 110 then lies under it
    assert squeeze.settings(f, 150) == [("current_crush_ma", 386), ("current_grip_min_ma", 110),
                                        ("current_stall_ma", 490), ("current_hold_limit_ma", 334)]
    # a board left with a grip threshold of 400 by a stronger gripper: the crush line 386 would
    # lie under it, so the new threshold 110 goes first
    assert squeeze.settings(f, 400) == [("current_grip_min_ma", 110), ("current_stall_ma", 490),
                                        ("current_crush_ma", 386), ("current_hold_limit_ma", 334)]


def test_a_stronger_gripper_gets_its_crush_line_above_the_default():
    # an MG996R-like jaw: squeezing 901 mA at 6.0 V, at stall 2500 mA at 5.8 V (2155.2 mA at 5 V)
    f = squeeze.figures((40.0, 6000.0), (901.0, 6000.0), (2500.0, 5800.0), RAIL_LOW_MV)
    # stall watch: 2500 * 4200 / 5800 = 1810.3, less 10%: 1629.3 -> 1629; gap 728
    assert f["current_stall_ma"] == 1629
    assert f["current_crush_ma"] == 1265          # 901 + 364: above the default 600
    assert f["current_hold_limit_ma"] == 1083     # 901 + 182
    # grip 901 * 0.7 = 630.7 at 4.2 V, half-way from 40: 335.35
    assert f["current_grip_min_ma"] == 335
    assert squeeze.problem((40.0, 6000.0), (901.0, 6000.0), f, RAIL_LOW_MV, 150) is None


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
    # a squeeze 60 mA under the stall watch (490): above it, but less than 4 x 20 mA, so the
    # holding limit would lie 15 mA over the squeeze and the crush line 30
    near = (430.0, 5627.0)
    f = squeeze.figures(EMPTY, near, STALL, RAIL_LOW_MV)
    assert (f["current_stall_ma"], f["current_hold_limit_ma"], f["current_crush_ma"]) == (490, 445, 460)
    text = squeeze.problem(EMPTY, near, f, RAIL_LOW_MV, 150)
    assert "too close for the crush and holding checks" in text and "squeeze_um" in text
    assert "--redo gripper.current --apply" in text
    # 80 mA under it is enough: the holding limit 20 mA over the squeeze
    ok = (410.0, 5627.0)
    assert squeeze.problem(EMPTY, ok, squeeze.figures(EMPTY, ok, STALL, RAIL_LOW_MV), RAIL_LOW_MV, 150) is None
    # a stall watch that would sit under the board's holding level (the firmware refuses that)
    # (squeezing 50 mA: 101 mA under the stall watch, room for the crush and holding checks)
    small = squeeze.figures(EMPTY, (50.0, 5000.0), (200.0, 5000.0), RAIL_LOW_MV)
    assert small["current_stall_ma"] == 151
    text = squeeze.problem(EMPTY, (50.0, 5000.0), small, RAIL_LOW_MV, 160)
    assert "current_holding_ma 160" in text


def test_settings_the_machine_would_refuse_are_told():
    # the firmware's Config judges them: a crush line above 5000 mA (its bound), and one not above
    # the grip threshold (its rule); readings do not give these, a shunt misread could
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV)
    text = squeeze.config_refusal(dict(f, current_crush_ma=5001))
    assert "current_crush_ma" in text and "5001 outside 1..5000" in text and "--redo gripper.current" in text
    text = squeeze.config_refusal(dict(f, current_crush_ma=110))
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
    f = squeeze.figures(EMPTY, SQUEEZING, STALL, RAIL_LOW_MV)
    for before in ({}, {"current_grip_min_ma": 400, "current_crush_ma": 1200}):
        board = Config(before)
        for key, value in squeeze.settings(f, board.current_grip_min_ma):
            if key in squeeze.MACHINE_SETTINGS:
                board.update({key: value})
        assert (board.current_grip_min_ma, board.current_crush_ma, board.current_hold_limit_ma) == (110, 386, 334)
    # the other order is refused from the second board: the crush line 386 under its grip 400
    board = Config({"current_grip_min_ma": 400, "current_crush_ma": 1200})
    with pytest.raises(ConfigError, match="must be above current_grip_min_ma"):
        board.update({"current_crush_ma": 386})
