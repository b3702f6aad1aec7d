# The monitor's run view where the real-board test (test_monitor_run_view.py) cannot go cheaply:
# a monitor that came after the board's log rotated past the run's start (a night hundreds of
# cycles long), a board that restarts mid-run, the board's clock wrapping (2**30 ms). The records
# are written out here as the firmware writes them (firmware/production.py, docs/production-run.md:
# seq, t_ms, kind 4, states, reason, attempt, x, y, z, beam, value); the expected figures are
# worked out by hand in the comments.
from surepick.host.monitor.run_view import RunView, plain_text
from surepick.shared_fsm import codes, run_codes


def rec(seq, t_ms, reason, x, y=0, z=0, value=0):
    return (seq, t_ms, codes.K_RUN, 0, 0, reason, 0, x, y, z, 0, value)


def cycle(seq, t_ms, n, outcome=codes.R_PLACED, ms=9800):
    return rec(seq, t_ms, run_codes.R_RUN_CYCLE, n, 0, ms, outcome)


def test_a_monitor_that_missed_the_start_counts_from_run_status_and_names_what_it_saw():
    v = RunView()
    # cycles 101..103 are all the log still holds; 102 failed its part
    for r in (cycle(900, 1000000, 101), cycle(905, 1010000, 102, codes.F_GRASP_FAILED),
              rec(906, 1010004, run_codes.R_RUN_SKIP, 102, 0, 0, codes.F_GRASP_FAILED), cycle(910, 1020000, 103)):
        assert v.add(r)
    # RUN_STATUS: running, cycle 103 of 200, 100 placed, 3 faulted, 3 skipped, why -1, slot 0 of 1
    assert v.set_status((1, 103, 200, 100, 3, 3, -1, 0, 1))
    f = v.figures()
    # 2 cycles (101 -> 103) in 20,000 ms of the board's clock: 360 an hour; 97 left at 10 s each
    assert plain_text(f) == ("run cycle=103 of=200 state=running placed=100 faulted=3 skipped=3 "
                             "faults=GRASP_FAILED:1,unnamed:2 skipped_slots=0 rate_per_h=360.0 eta_s=970")
    # the same record again (live, then back-filled) changes nothing
    assert not v.add(cycle(910, 1020000, 103))


def test_a_restart_mid_run_ends_it_and_the_clock_wrapping_does_not_upset_the_rate():
    v = RunView()
    t0 = (1 << 30) - 4000                       # 4 s before the board's ticks wrap
    v.add(rec(1, t0, run_codes.R_RUN_START, 5, 1, 1))
    v.add(cycle(2, 6000, 1))                    # 10,000 ms after the start, across the wrap
    f = v.figures()
    # 1 cycle in 10 s: 360 an hour; 4 left: 40 s
    assert (f["cycle"], f["count"], f["state"], f["rate_per_h"], f["eta_s"]) == (1, 5, "running", 360.0, 40.0)
    assert v.on_boot()                          # the board said hello: the run lives in RAM, it is over
    assert v.set_status((0,))                   # RUN_STATUS after the boot: no run since boot
    f = v.figures()
    assert (f["state"], f["why"], f["eta_s"], f["placed"]) == ("ended", "restart", None, 1)
    # the next run's start is a new run, whatever its time on the new boot's clock
    assert v.add(rec(1, 900, run_codes.R_RUN_START, 0, 1, 1))
    f = v.figures()
    assert (f["cycle"], f["count"], f["state"], f["rate_per_h"]) == (0, 0, "running", None)
    assert plain_text(f).startswith("run cycle=0 of=until_stopped state=running")
