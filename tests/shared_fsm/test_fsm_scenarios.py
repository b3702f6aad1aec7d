# Every fault path and the main transitions, through the scripted fake HAL on CPython.
import pytest

from surepick.shared_fsm import fake_scenarios
from surepick.shared_fsm import codes
from surepick.shared_fsm import states
from surepick.shared_fsm.states import (IDLE, APPROACH, DESCEND, GRASP, VERIFY, LIFT, TRANSFER,
                                        PLACE, RECOVER)

WRAP_START = (1 << 30) - 3000


def _path(events):
    return [(states.name(e[3]), states.name(e[4]), codes.name(e[5])) for e in events
            if e[2] != codes.K_NOTE]


@pytest.mark.parametrize("name", fake_scenarios.names())
@pytest.mark.parametrize("start", [0, WRAP_START])
def test_scenario_outcome(name, start):
    events, m, hal = fake_scenarios.run(name, start_ms=start)
    assert fake_scenarios.outcome_text(m) == fake_scenarios.find(name)[3]
    assert not m.busy()


def test_nominal_path_is_the_nine_state_cycle():
    events, m, hal = fake_scenarios.run("nominal")
    assert _path(events) == [
        ("IDLE", "APPROACH", "JOB_START"), ("APPROACH", "DESCEND", "SETTLED"),
        ("DESCEND", "GRASP", "ARRIVED"), ("GRASP", "VERIFY", "DWELL_DONE"),
        ("VERIFY", "LIFT", "VERIFY_PASS"), ("LIFT", "TRANSFER", "ARRIVED"),
        ("TRANSFER", "PLACE", "ARRIVED"), ("PLACE", "IDLE", "PLACED")]
    assert m.cycles_placed == 1 and m.fault == 0 and hal.part_state() == "released"


def test_grasp_dwell_is_respected_before_verify():
    events, m, hal = fake_scenarios.run("nominal")
    t = {(e[3], e[4]): e[1] for e in events}
    # the fake's jaw is done at once: the dwell starts on the first GRASP step (one period in)
    # and ends at the first step at least grasp_dwell_ms later
    p = m.cfg.loop_period_ms
    assert t[(GRASP, VERIFY)] - t[(DESCEND, GRASP)] == -(-m.cfg.grasp_dwell_ms // p) * p + p


def test_verify_needs_three_equal_reads_after_dwell():
    # With a clean switch the decision lands on the third read after entering VERIFY...
    events, m, hal = fake_scenarios.run("clean_switch")
    t = {(e[3], e[4]): e[1] for e in events}
    assert t[(VERIFY, LIFT)] - t[(GRASP, VERIFY)] == m.cfg.loop_period_ms * m.cfg.debounce_reads
    # ...and with a ringing pad it decides at the first run of three equal switch reads.
    from surepick.shared_fsm.config import Config
    from surepick.shared_fsm.machine import Machine
    from surepick.shared_fsm.fake_hal import FakeHal
    cfg = Config()
    m = Machine(cfg)
    hal = FakeHal(cfg, fake_scenarios.find("bounce_and_ring")[1])
    m.start_job(_job())
    reads = []
    now = 0
    while m.state != LIFT and now < 20000:
        hal.sense(now, m.inp)
        if m.state == VERIFY:
            reads.append(m.inp.switch_pressed)
        m.step(now)
        hal.actuate(now, m.out)
        now += cfg.loop_period_ms
    assert m.state == LIFT
    n = cfg.debounce_reads
    assert reads[-n:] == [1] * n
    runs = [reads[i:i + n] for i in range(len(reads) - n)]
    assert all(len(set(r)) > 1 for r in runs), reads  # no earlier run of n equal reads
    assert len(reads) > n  # the ringing really delayed the decision


def test_part_missing_retries_exactly_max_attempts_with_spiral_and_wider_opening():
    events, m, hal = fake_scenarios.run("part_missing")
    approaches = [e for e in events if e[4] == APPROACH]
    assert [e[6] for e in approaches] == [1, 2, 3]
    assert [e[5] for e in approaches] == [codes.R_JOB_START, codes.R_RETRY, codes.R_RETRY]
    assert m.fault == codes.F_GRASP_FAILED and m.fault_state == VERIFY
    assert m.attempt == m.cfg.max_attempts
    fails = [e for e in events if e[3] == VERIFY and e[4] == RECOVER]
    assert len(fails) == 3 and all(e[5] == codes.R_VERIFY_EMPTY for e in fails)


def test_retry_shifts_the_grasp_pose_along_a_spiral():
    from surepick.shared_fsm.config import Config
    from surepick.shared_fsm.machine import Machine, Job
    from surepick.shared_fsm.fake_hal import FakeHal
    cfg = Config()
    m = Machine(cfg)
    hal = FakeHal(cfg, {"part": 0})
    # a 15 mm part leaves room under the 45 mm jaw limit to open wider on each retry
    assert m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 15000)) == 0
    descents = []
    now = 0
    while now < 20000:
        hal.sense(now, m.inp)
        m.step(now)
        if m.state == DESCEND and (not descents or descents[-1][0] != m.out.move_seq):
            descents.append((m.out.move_seq, m.out.x_um, m.out.y_um, m.out.jaw_um))
        hal.actuate(now, m.out)
        now += 2
    assert len(descents) == 3
    offsets = [((x - 160000) ** 2 + (y + 60000) ** 2) ** 0.5 for _, x, y, _ in descents]
    assert offsets[0] == 0
    assert 2900 <= offsets[1] <= 3100 and 5900 <= offsets[2] <= 6100
    jaws = [j for _, _, _, j in descents]
    assert jaws[0] < jaws[1] < jaws[2]  # each retry opens wider


def test_disagreement_is_recorded_with_readings():
    events, m, hal = fake_scenarios.run("switch_stuck_open")
    e = [e for e in events if e[5] == codes.R_VERIFY_DISAGREE][0]
    assert e[8] == 0 and e[10] == 1  # switch open, beam broken: present, not gripped
    assert e[11] & codes.CHECK_BEAM and not e[11] & codes.CHECK_SWITCH


def test_flicker_is_tolerated_and_noted_but_sustained_loss_is_dropped():
    events, m, hal = fake_scenarios.run("flicker_in_transfer")
    assert any(e[5] == codes.R_GRIP_FLICKER for e in events)
    assert m.cycles_placed == 1
    events, m, hal = fake_scenarios.run("slip_in_transfer")
    last = events[-1]
    assert last[2] == codes.K_FAULT and last[5] == codes.F_DROPPED and last[3] == TRANSFER
    assert m.cycles_placed == 0


def test_place_opens_before_retreat():
    from surepick.shared_fsm.config import Config
    from surepick.shared_fsm.machine import Machine, Job
    from surepick.shared_fsm.fake_hal import FakeHal
    cfg = Config()
    m = Machine(cfg)
    hal = FakeHal(cfg)
    m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000))
    now = 0
    retreat_jaw = None
    while now < 20000 and retreat_jaw is None:
        hal.sense(now, m.inp)
        seq = m.out.move_seq
        m.step(now)
        if m.state == PLACE and m.out.move_seq != seq and m.out.z_um > fake_scenarios.PLACE[2]:
            retreat_jaw = m.out.jaw_um
        hal.actuate(now, m.out)
        now += 2
    assert retreat_jaw is not None and retreat_jaw >= 25000 + cfg.open_margin_um


def test_estop_latches_and_blocks_jobs_until_cleared():
    events, m, hal = fake_scenarios.run("estop_mid_lift")
    assert m.fault == codes.F_ESTOP and m.out.hold == 1
    assert m.start_job(_job()) == 2  # E_FAULTED
    assert m.clear_fault() == 5       # e-stop still pressed
    m.inp.estop = 0
    assert m.clear_fault() == 0 and m.fault == 0 and m.out.hold == 0
    # The e-stop came in LIFT: the verified part is still between the fingers, and a new job
    # would open the jaw over wherever the arm stands. Only an explicit release lets a job start.
    assert m.holding and m.start_job(_job()) == 6          # E_HOLDING
    held_jaw = m.out.jaw_um
    assert held_jaw < 25000
    assert m.release(40000) == 0 and m.out.jaw_um == 40000 and not m.holding
    assert m.events.get(m.events.last_seq())[5] == codes.R_RELEASED
    assert m.start_job(_job()) == 0


def test_crush_backs_the_jaw_off_to_where_it_is():
    events, m, hal = fake_scenarios.run("wide_rigid_part")
    assert m.fault == codes.F_CRUSH
    jaw_now = (m.inp.pot_counts - m.cfg.pot_closed_counts) * 1000 // m.cfg.pot_counts_per_mm
    assert abs(m.out.jaw_um - jaw_now) <= 200


def test_unreachable_or_bad_jobs_are_refused():
    from surepick.shared_fsm.machine import Machine, Job, E_UNREACHABLE, E_BAD_JOB
    from surepick.shared_fsm.config import Config
    from surepick.shared_fsm import kinematics

    def check(x, y, z, p):
        kinematics.inverse(x / 1000.0, y / 1000.0, z / 1000.0, p / 1000.0)
    m = Machine(Config())
    far = Job((400000, 0, 10000, -90000), fake_scenarios.PLACE, 25000)
    assert m.start_job(far, check) == E_UNREACHABLE
    assert m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 0)) == E_BAD_JOB
    assert m.start_job(Job(fake_scenarios.PICK, fake_scenarios.PLACE, 60000)) == E_BAD_JOB
    assert m.start_job(_job(), check) == 0
    assert m.start_job(_job(), check) == 1  # busy


def test_abort_latches_and_holds():
    from surepick.shared_fsm.machine import Machine
    from surepick.shared_fsm.config import Config
    m = Machine(Config())
    m.start_job(_job())
    m.step(0)
    assert m.state == APPROACH
    m.abort()
    assert m.state == IDLE and m.fault == codes.F_ABORTED and m.out.hold == 1


def test_bad_pose_from_motion_layer_is_a_fault():
    from surepick.shared_fsm.machine import Machine
    from surepick.shared_fsm.config import Config
    m = Machine(Config())
    m.start_job(_job())
    m.step(0)
    m.inp.error_seq = m.out.move_seq
    m.step(2)
    assert m.fault == codes.F_BAD_POSE


def test_resense_hook_supplies_the_next_grasp_pose():
    from surepick.shared_fsm.config import Config
    from surepick.shared_fsm.machine import Machine
    from surepick.shared_fsm.fake_hal import FakeHal
    cfg = Config()
    m = Machine(cfg)
    # part actually sits 9 mm off; the first grasp misses, the camera then finds it
    hal = FakeHal(cfg, {"part_x_um": 169000, "capture_um": 2000})
    calls = []

    def resense(machine, attempt):
        calls.append(attempt)
        machine.set_part_pose(169000, -60000, 12500)
        return True
    m.resense = resense
    m.start_job(_job())
    events = []
    now = 0
    while now < 20000:
        hal.sense(now, m.inp)
        m.step(now)
        hal.actuate(now, m.out)
        now += 2
        if not m.busy():
            break
    events = m.events.since(0)
    assert calls == [2]
    assert any(e[5] == codes.R_RESENSED for e in events)
    assert m.cycles_placed == 1 and m.attempt == 2


def test_motion_timeout_names_the_state():
    events, m, hal = fake_scenarios.run("never_arrives")
    assert m.fault == codes.F_MOTION_TIMEOUT and m.fault_state == DESCEND


def test_sensor_faults_name_the_cause():
    for name, fault in [("pot_broken", codes.F_SENSOR_FAULT), ("beam_blocked", codes.F_SENSOR_DISAGREE),
                        ("switch_stuck_closed", codes.F_SENSOR_DISAGREE),
                        ("part_sticks_to_finger", codes.F_RELEASE_FAILED),
                        ("hold_overcurrent", codes.F_HOLD_OVERCURRENT)]:
        events, m, hal = fake_scenarios.run(name)
        assert m.fault == fault, name
        assert events[-1][2] == codes.K_FAULT and events[-1][5] == fault


def _job():
    from surepick.shared_fsm.machine import Job
    return Job(fake_scenarios.PICK, fake_scenarios.PLACE, 25000)
