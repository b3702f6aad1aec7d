# servo_fit over a servo's own travel, against numbers worked by hand. (Bring-up finding a
# 270-degree servo on a stand-in bench: tests/host/cli/test_bringup_cli.py.)
import pytest

from surepick.host.bringup import servo_fit


@pytest.mark.parametrize("travel, rate", [(180, 0.09), (270, 0.135)])
def test_a_servo_on_its_nominal_pulses_comes_out_as_described(travel, rate):
    # A servo turning `travel` deg over 500..2500 us (rate deg/us) with its joint 0 at 1500 us:
    # marks at joint 0 and +-20 deg are 1500 and 1500 -+ 20 / rate us. By hand: range = travel,
    # the span 2000 us, the zero at the middle of the travel (travel / 2 servo deg).
    ends = [(1500.0 - 20.0 / rate, -20.0), (1500.0 + 20.0 / rate, 20.0)]
    f = servo_fit.found((1500.0, 0.0), ends, travel_deg=travel)
    assert f["direction"] == 1
    assert f["range_deg"] == pytest.approx(travel)
    assert f["span_us"] == pytest.approx(2000.0)
    assert f["zero_deg"] == pytest.approx(travel / 2.0)
    entry = servo_fit.servo_entry({"travel_deg": travel, "min_us": 500, "max_us": 2500}, f, False)
    assert (entry["min_us"], entry["max_us"], entry["zero_deg"], entry["travel_deg"]) == (500, 2500, travel / 2.0, travel)


def test_a_270_degree_servo_turning_against_its_joint():
    # 283 deg over the nominal pulses (0.1415 deg/us), mirrored, joint 0 at 1400 us: the span is
    # 2000 * 270 / 283 = 1908.1 us from 545.9 us; the servo angle at 1400 us is (1400 - 545.9)
    # * 270 / 1908.1 = 854.06 * 0.1415 = 120.85, mirrored 270 - 120.85 = 149.15 deg.
    rate = 283.0 / 2000.0
    ends = [(1400.0 + 30.0 / rate, -30.0), (1400.0 - 30.0 / rate, 30.0)]
    f = servo_fit.found((1400.0, 0.0), ends, travel_deg=270)
    assert f["direction"] == -1
    assert f["range_deg"] == pytest.approx(283.0)
    assert f["span_us"] == pytest.approx(1908.127, abs=1e-3)
    assert f["zero_deg"] == pytest.approx(149.15, abs=0.01)
    # its joint (-90..90 deg) fits the travel: zero 149.15 - 90 = 59.15 .. 239.15 servo deg
    assert servo_fit.clip_joint((-90.0, 90.0), f["zero_deg"], 1.0, 270) == (-90.0, 90.0)
    # over 180 deg it would not: narrowed to what 0..180 reaches from 149.15 (+30.85, rounded in)
    assert servo_fit.clip_joint((-90.0, 90.0), f["zero_deg"], 1.0, 180) == (-90.0, 30.8)
