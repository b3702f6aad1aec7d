# The live view's job row (host/monitor/status.py) never says a job runs once the board said it
# does not: a restart (HELLO) ends it, and so does a fault latched without an event of its own (an
# interruption a restart latches quietly). Frames as the firmware sends them (shared_fsm/link.py).
from surepick.host.monitor.status import BoardStatus
from surepick.shared_fsm import codes, link, states


def _telemetry(state, fault):
    names = link.SCHEMA[link.T_TELEMETRY][3]
    d = dict.fromkeys(names, 0)
    d.update(state=state, fault=fault)
    return d


def test_a_restart_or_a_quiet_fault_ends_the_running_job():
    s = BoardStatus("socket://x:1")
    s.on_event((1, 100, codes.K_TRANSITION, states.IDLE, states.APPROACH, codes.R_JOB_START, 1, 0, 0, 0, 0, 0))
    assert s.snapshot()["job_started"] is not None and s.snapshot()["job_state"] == "running"
    s.on_hello(("pico-1", "0.1.0", 1, 1, 2, 10))              # the board booted again
    snap = s.snapshot()
    assert snap["job_started"] is None and "restart" in snap["job_state"], snap["job_state"]
    s.on_telemetry(_telemetry(states.LIFT, 0))               # a view that joins mid-cycle: running
    assert s.snapshot()["job_state"] == "running"
    s.on_telemetry(_telemetry(states.IDLE, codes.F_INTERRUPTED))
    snap = s.snapshot()
    assert snap["job_started"] is None and snap["job_state"] == "fault: INTERRUPTED"
