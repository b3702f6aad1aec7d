# The gripper pot's line from two caliper points, against numbers worked by hand, and what a
# pot wired wrong is told. (Bring-up reading it on a stand-in bench: tests/host/cli/test_bringup_cli.py.)
from surepick.host.bringup import gripper


def test_the_line_through_two_points_by_hand():
    # 10 mm read 18670 counts, 35 mm 45345: (45345 - 18670) / 25 = 1067 per mm; at 0 mm
    # 18670 - 10 * 1067 = 8000 (the firmware's defaults, docs/conventions.md)
    line = gripper.pot_line([(18670.0, 10.0), (45345.0, 35.0)])
    assert line == {"closed_counts": 8000, "counts_per_mm": 1067}
    assert gripper.pot_problem(line) is None
    assert gripper.settings(line) == [("pot_closed_counts", 8000), ("pot_counts_per_mm", 1067)]


def test_a_pot_wired_backwards_or_not_the_jaws_is_named():
    backwards = gripper.pot_line([(45345.0, 10.0), (18670.0, 35.0)])
    assert backwards["counts_per_mm"] == -1067
    text = gripper.pot_problem(backwards)
    assert "falls as the jaw opens" in text and "Swap the pot's two outer wires" in text
    assert "--redo gripper.pot" in text
    flat = gripper.pot_line([(30000.0, 10.0), (30100.0, 35.0)])     # 4 counts per mm
    assert "not on the jaw servo's pot" in gripper.pot_problem(flat)
    high = gripper.pot_line([(70000.0, 10.0), (96675.0, 35.0)])    # 0 mm at 59330: fine
    assert gripper.pot_problem(high) is None
    off = gripper.pot_line([(5000.0, 10.0), (31675.0, 35.0)])      # 0 mm at -5670
    assert "closed on nothing, outside" in gripper.pot_problem(off)
