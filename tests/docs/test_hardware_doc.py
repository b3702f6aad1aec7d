# docs/hardware.md's generated parts (the wiring table and diagrams from the firmware's pin map, the
# sensor front ends, the boards' table, the power figures from the simulator's servo models) are
# made again here and must be what the doc says: the doc cannot drift from the firmware or the
# models. The power figures are also checked against a hand calculation from the datasheet-level
# servo figures (MG996R about 2.5 A, SG90 about 650 mA at stall at 5 V).
import pytest

from surepick.host.engines import hardware_doc as hd
from surepick.firmware import settings

REGEN = "run `python -m surepick.host.engines.hardware_doc` and commit docs/hardware.md"


def test_the_wiring_and_boards_blocks_are_what_the_pin_map_makes():
    text = hd.DOC.read_text()
    assert hd.render(text, hd.blocks(power=False)) == text, REGEN


def test_the_power_figures_are_what_the_servo_models_make():
    text = hd.DOC.read_text()
    assert hd.render(text, {"power": hd.power_block()}) == text, REGEN


def test_every_signal_of_the_pin_map_is_wired_once_on_the_header():
    gpios = [g for g, _, _, _ in hd.signals()]
    assert len(gpios) == len(set(gpios)) == 12
    for pin in (2, 3, 4, 5, 6):            # the reference arm's servos (arm_reference.py)
        assert pin in gpios
    for g in gpios:
        assert g == 25 or hd.physical_pin(g) is not None, g       # only the LED is off the header
    diagram = hd.header_diagram()
    for g, what, _, _ in hd.signals():
        if g == 25:
            continue
        lines = [ln for ln in diagram.splitlines() if what in ln]
        assert len(lines) == 1, what
        pin = hd.physical_pin(g)
        # on the side of its pin: "what <- GPn  p |" on the left (1-20), "| p GPn -> what" on the right
        assert ("<- GP%d " % g in lines[0] and " %d |o" % pin in lines[0]) or \
               ("o| %d GP%d " % (pin, g) in lines[0] and "-> " + what in lines[0]), lines[0]


def test_power_figures_against_a_hand_calculation():
    f = hd.power_figures()
    v = f["nominal_mv"] / 1000.0
    r = f["source_mohm"] / 1000.0
    # all five at stall, no sag: the 5 V stall currents scaled to the rail
    hand = (3 * 2.5 + 2 * 0.65) * v / 5.0
    assert f["stall_total_ma"] / 1000.0 == pytest.approx(hand, rel=0.01)
    # the rail at the job's peak: the source's drop
    assert f["job_min_rail_mv"] / 1000.0 == pytest.approx(v - f["job_peak_ma"] / 1000.0 * r, abs=0.001)
    # two arm servos at stall behind the source: V = v - r * I(V), I(V) = 2 * 2.5 A * V / 5 V (+ idles)
    two = v / (1 + r * 2 * 2.5 / 5.0)
    assert f["two_stall_mv"] / 1000.0 == pytest.approx(two, abs=0.03)
    # the largest source resistance keeping two stalled servos above rail_low_mv
    low = settings.board_defaults()["rail_low_mv"] / 1000.0
    assert f["max_source_mohm"] / 1000.0 == pytest.approx((v - low) / (2 * 2.5 * low / 5.0), rel=0.02)
    # the job never draws more than the stall of all five, nor less than their idle
    assert 0.05 < f["job_mean_ma"] / 1000.0 < f["job_peak_ma"] / 1000.0 < hand
