import pytest

from surepick.shared_fsm.config import Config, ConfigError, FIELDS


def test_defaults_come_from_the_hardware_notes():
    c = Config()
    assert c.grasp_dwell_ms == 350 and c.settle_ms == 250 and c.debounce_ms == 6
    assert c.max_attempts == 3 and c.loop_period_ms == 4      # 250 Hz: what the RP2040 holds (docs/rp2040.md)
    for name, default, lo, hi, _ in FIELDS:
        assert lo <= default <= hi, name


@pytest.mark.parametrize("bad,field", [
    ({"grasp_dwell_ms": -1}, "grasp_dwell_ms"),
    ({"grasp_dwell_ms": "350"}, "grasp_dwell_ms"),
    ({"grasp_dwell_ms": True}, "grasp_dwell_ms"),
    ({"no_such_field": 1}, "no_such_field"),
    ({"verify_enabled_mask": 1, "verify_required_mask": 2}, "verify_required_mask"),
    ({"verify_min_agree": 4, "verify_enabled_mask": 7, "grip_monitor_mask": 3}, "verify_min_agree"),
    ({"current_crush_ma": 100}, "current_crush_ma"),
    ({"debounce_ms": 150}, "debounce_ms"),              # longer than the verify window
])
def test_invalid_config_names_the_field_and_changes_nothing(bad, field):
    c = Config()
    before = c.to_dict()
    with pytest.raises(ConfigError) as e:
        c.update(bad)
    assert e.value.field == field
    assert field in str(e.value)
    assert c.to_dict() == before


def test_round_trip():
    c = Config({"grasp_dwell_ms": 400, "max_attempts": 5})
    assert Config(c.to_dict()).to_dict() == c.to_dict()


@pytest.mark.parametrize("period,debounce,reads", [
    (2, 6, 3), (4, 6, 2), (5, 6, 2), (1, 6, 6), (10, 6, 1), (4, 8, 2), (3, 10, 4)])
def test_debounce_is_a_time_counted_in_whole_ticks(period, debounce, reads):
    # reads = the fewest ticks that span debounce_ms, at least one (ceil(debounce / period))
    c = Config({"loop_period_ms": period, "debounce_ms": debounce})
    assert c.debounce_reads == reads
    c = Config({"debounce_ms": debounce})
    c.update({"loop_period_ms": period})          # a later period change counts again
    assert c.debounce_reads == reads
    assert "debounce_reads" not in c.to_dict()    # derived, never stored
