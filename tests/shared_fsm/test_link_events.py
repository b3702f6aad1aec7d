# The state machine's real event records (every fake-HAL scenario, started just below the
# 2**30 tick wrap too) fit the EVENT frame, survive the flash log, and come back as LOG frames.
import pytest

from surepick.firmware import flashlog
from surepick.host.link import frames
from surepick.shared_fsm import fake_scenarios, link


@pytest.mark.parametrize("start_ms", [0, (1 << 30) - 1500])
def test_every_scenario_event_goes_over_the_link_and_through_the_log(start_ms, tmp_path):
    log = flashlog.FlashLog(str(tmp_path / str(start_ms)), 4, 128, 64)
    parser = frames.FrameParser()
    sent = []
    for name in fake_scenarios.names():
        events, _, _ = fake_scenarios.run(name, start_ms=start_ms)
        assert events, name
        for rec in events:
            line = link.event(rec)
            assert line is not None, (name, rec, link.check(link.T_EVENT, rec))
            got = parser.feed(line)
            assert got == [frames.Frame(link.T_EVENT, tuple(rec))]
            assert log.append(flashlog.R_TRANSITION, rec)
            sent.append(tuple(rec))
        log.commit()
    again = flashlog.FlashLog(str(tmp_path / str(start_ms)), 4, 128, 64)
    stored = [r for r in again.read_since(0) if r[1] != flashlog.R_COUNTERS]
    assert [r[2] for r in stored] == sent[-len(stored):]
    for seq, rtype, rec in stored:
        out = parser.feed(link.log_record(seq, rtype, rec))
        assert out == [frames.Frame(link.T_LOG, (seq, rtype) + tuple(rec))]
    assert parser.corrupt == 0
